// The Pareto front of serving: output tokens/s per user against output tokens/s per GPU (and per watt
// where the GPUs' power was sampled), over every configuration and load measured. A point is dominated
// when another is at least as good on both axes and better on one: no one would choose it. The axes are
// vllm bench sweep plot_pareto's (vllm/benchmarks/sweep/plot_pareto.py: tokens_per_user = output
// throughput / users, tokens_per_gpu = output throughput / GPUs), so the fronts compare.
import { finite } from './finite';
import type { MacroLevelSummary } from './results';

export interface ParetoPoint {
  /** The configuration (or run) the point belongs to. */
  series: string;
  /** Its load: "c=8", "4 req/s". */
  load: string;
  /** Output tokens per second per user: output throughput over the users (in flight). */
  perUser: number;
  /** Output tokens per second per GPU. */
  perGpu: number;
  /** Output tokens per second per watt of every GPU's power, where sampled. */
  perWatt?: number;
  /** Joules per output token, where sampled. */
  joulesPerToken?: number;
  gpus: number;
  /** Where the GPU count came from: the sampled GPUs, the server's parallel flags, or one assumed. */
  gpusFrom: 'sampled' | 'command' | 'assumed';
  /** Users: the level's concurrency, or for a request rate the peak of requests in flight measured. */
  users: number;
}

export interface ParetoFront {
  points: (ParetoPoint & { dominated: boolean })[];
  /** The points on the front, by tokens/s per user ascending. */
  front: ParetoPoint[];
  axis: 'perGpu' | 'perWatt';
}

/**
 * GPUs a server's command line runs on: tensor × pipeline × data parallel, as vLLM
 * (--tensor-parallel-size/-tp, --pipeline-parallel-size/-pp, --data-parallel-size/-dp) and SGLang
 * (--tp-size/--tp, --pp-size, --dp-size/--dp) spell them; undefined when it names none.
 */
export function gpusOfCommand(argv: readonly string[] | string | undefined): number | undefined {
  if (!argv) return undefined;
  const words = typeof argv === 'string' ? argv.split(/\s+/) : [...argv];
  const read = (names: string[]): number | undefined => {
    for (let i = 0; i < words.length; i++) {
      const [flag, inline] = words[i].split('=', 2);
      if (!names.includes(flag)) continue;
      const v = Number(inline ?? words[i + 1]);
      if (Number.isInteger(v) && v > 0) return v;
    }
    return undefined;
  };
  const tp = read(['--tensor-parallel-size', '-tp', '--tp-size', '--tp']);
  const pp = read(['--pipeline-parallel-size', '-pp', '--pp-size']);
  const dp = read(['--data-parallel-size', '-dp', '--dp-size', '--dp']);
  if (tp === undefined && pp === undefined && dp === undefined) return undefined;
  return (tp ?? 1) * (pp ?? 1) * (dp ?? 1);
}

function loadText(l: MacroLevelSummary): string {
  const rate = l.request_rate as number | string | null | undefined;
  if (rate !== null && rate !== undefined) return `${rate === 'inf' ? '∞' : rate} req/s`;
  return `c=${l.max_concurrency}`;
}

/** A level's point, or undefined for one that cannot be placed (cut short, nothing completed, no users). */
export function paretoPoint(series: string, l: MacroLevelSummary, commandGpus?: number): ParetoPoint | undefined {
  if (l.partial || l.cut) return undefined;
  const tput = finite(l.output_throughput);
  const concurrency = finite(l.max_concurrency);
  const rate = l.request_rate;
  const users = rate === null || rate === undefined ? concurrency : (finite(l.max_concurrent_requests) ?? concurrency);
  if (tput === undefined || !(tput > 0) || users === undefined || !(users > 0)) return undefined;
  const telemetry = l.gpu_telemetry as { gpus?: unknown; output_tokens_per_s_per_watt?: unknown; joules_per_output_token?: unknown } | undefined;
  const sampled = finite(telemetry?.gpus);
  const gpus = sampled && sampled > 0 ? sampled : (commandGpus ?? 1);
  return {
    series,
    load: loadText(l),
    perUser: tput / users,
    perGpu: tput / gpus,
    perWatt: finite(telemetry?.output_tokens_per_s_per_watt),
    joulesPerToken: finite(telemetry?.joules_per_output_token),
    gpus,
    gpusFrom: sampled && sampled > 0 ? 'sampled' : commandGpus ? 'command' : 'assumed',
    users,
  };
}

/** True when `a` dominates `b`: at least as good on both axes, better on one. */
export function dominates(a: { x: number; y: number }, b: { x: number; y: number }): boolean {
  return a.x >= b.x && a.y >= b.y && (a.x > b.x || a.y > b.y);
}

/** The front over `points` on tokens/s per user against `axis` (per GPU, or per watt over the points that have it). */
export function paretoFront(points: readonly ParetoPoint[], axis: 'perGpu' | 'perWatt' = 'perGpu'): ParetoFront {
  const placed = points.filter((p) => finite(p[axis]) !== undefined);
  const xy = (p: ParetoPoint) => ({ x: p.perUser, y: p[axis] as number });
  const marked = placed.map((p) => ({ ...p, dominated: placed.some((q) => q !== p && dominates(xy(q), xy(p))) }));
  const front = marked.filter((p) => !p.dominated).sort((a, b) => a.perUser - b.perUser);
  return { points: marked, front, axis };
}
