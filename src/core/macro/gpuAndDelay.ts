// What the findings say of the GPUs over a macro run (power, energy per token, throttling), of the
// client's dispatch delay (latency from the intended send time), and of the Pareto front of its levels
// or of a comparison's configurations. The agent measures (agent/infbench_agent/macro/gpu_telemetry.py and
// macro/intended.py); these are the tables and lines.
import { finite } from '../../shared/finite';
import { ParetoFront, ParetoPoint, paretoFront } from '../../shared/pareto';
import { MacroLevelSummary } from '../../shared/results';
import { ResultTable } from '../../shared/table';
import { levelRowLabel } from './tables';

interface GpuTelemetry {
  gpus?: number;
  samples?: number;
  energy_j?: number;
  mean_power_w?: number;
  joules_per_output_token?: number;
  output_tokens_per_s_per_watt?: number;
  per_gpu?: {
    gpu: number;
    min_sm_clock_mhz?: number;
    max_temp_c?: number;
    mean_util_percent?: number;
    power_limit_w?: number;
    throttle?: Record<string, number>;
  }[];
  throttled?: { reason: string; kind: string }[];
  note?: string;
}

interface FromIntended {
  basis?: 'arrival' | 'slot';
  dispatch_delay_ms?: { p50?: number | null; p99?: number | null; max?: number | null };
  ttft_ms?: Record<string, number | null>;
  e2el_ms?: Record<string, number | null>;
  dispatch_delay_trend?: { first_quarter_ms: number; last_quarter_ms: number };
  client_limited?: boolean;
}

export const telemetryOf = (l: MacroLevelSummary): GpuTelemetry | undefined => l.gpu_telemetry as GpuTelemetry | undefined;
export const intendedOf = (l: MacroLevelSummary): FromIntended | undefined => l.from_intended as FromIntended | undefined;

/** Per level: the GPUs' energy per output token, tokens/s per watt, power, lowest SM clock, hottest GPU, throttling. */
export function gpuTelemetryTable(levels: readonly MacroLevelSummary[]): ResultTable | undefined {
  const sampled = levels.filter((l) => finite(telemetryOf(l)?.samples));
  if (!sampled.length) return undefined;
  const rows = sampled.map((l) => {
    const t = telemetryOf(l)!;
    const per = t.per_gpu ?? [];
    const minClock = Math.min(...per.map((g) => finite(g.min_sm_clock_mhz) ?? Infinity));
    const maxTemp = Math.max(...per.map((g) => finite(g.max_temp_c) ?? -Infinity));
    const util = per.map((g) => finite(g.mean_util_percent)).filter((v): v is number => v !== undefined);
    return {
      level: levelRowLabel(l),
      gpus: finite(t.gpus),
      mean_power_w: finite(t.mean_power_w),
      joules_per_token: finite(t.joules_per_output_token),
      tokens_per_joule: finite(t.output_tokens_per_s_per_watt),
      util: util.length ? util.reduce((a, b) => a + b, 0) / util.length : undefined,
      min_sm_clock: Number.isFinite(minClock) ? minClock : undefined,
      max_temp: Number.isFinite(maxTemp) ? maxTemp : undefined,
      throttled: t.throttled?.length ? t.throttled.map((x) => `${x.kind} (${x.reason})`).join(', ') : 'none',
    };
  });
  return {
    id: 'macro-gpu-telemetry',
    title: 'The GPUs per load level: power, energy per token, clocks',
    columns: [
      { key: 'level', label: 'Load', align: 'left' },
      { key: 'gpus', label: 'GPUs', digits: 0 },
      { key: 'mean_power_w', label: 'Power W (all GPUs)', digits: 0 },
      { key: 'joules_per_token', label: 'J / output token', digits: 3 },
      { key: 'tokens_per_joule', label: 'Output tok/s per W', digits: 3 },
      { key: 'util', label: 'GPU util % (mean)', digits: 0 },
      { key: 'min_sm_clock', label: 'SM clock min MHz', digits: 0 },
      { key: 'max_temp', label: 'Temp max °C', digits: 0 },
      { key: 'throttled', label: 'Throttling', align: 'left' },
    ],
    rows,
    note:
      "Sampled on the host with nvidia-smi while each level ran (every GPU it lists); energy is every GPU's power integrated over the level, " +
      'from its start to its last response, over the output tokens it made. Throttling is NVML’s clocks-event reasons (power cap, power brake, thermal).',
  };
}

/** The findings' line on the GPUs: throttling named, or why there is no power (no GPU, a ROCm host). */
export function gpuTelemetryLines(levels: readonly MacroLevelSummary[], runNote?: string): string[] {
  const lines: string[] = [];
  const throttled = levels.filter((l) => telemetryOf(l)?.throttled?.length);
  if (throttled.length) {
    const kinds = [...new Set(throttled.flatMap((l) => telemetryOf(l)!.throttled!.map((t) => t.kind)))].join(' and ');
    lines.push(
      `⚠ GPU throttling (${kinds}) at ${throttled.map((l) => levelRowLabel(l)).join(', ')}: the clocks were held down there, so those levels measured a throttled GPU.`,
    );
  }
  const known = levels.filter((l) => finite(telemetryOf(l)?.joules_per_output_token) !== undefined);
  if (known.length) {
    const best = known.reduce((a, b) => (telemetryOf(b)!.joules_per_output_token! < telemetryOf(a)!.joules_per_output_token! ? b : a));
    lines.push(
      `Energy: ${known.map((l) => `${levelRowLabel(l)} ${telemetryOf(l)!.joules_per_output_token!.toFixed(3)} J/token`).join(', ')}; the least per token at ${levelRowLabel(best)}.`,
    );
  } else if (runNote && levels.length) lines.push(`GPU telemetry: ${runNote}.`);
  return lines;
}

/** Per level: the client's dispatch delay (actual against intended send) and TTFT/E2EL from the intended time. */
export function dispatchDelayTable(levels: readonly MacroLevelSummary[]): ResultTable | undefined {
  const timed = levels.filter((l) => finite(intendedOf(l)?.dispatch_delay_ms?.p50) !== undefined);
  if (!timed.length) return undefined;
  const rate = timed.some((l) => intendedOf(l)?.basis === 'arrival');
  return {
    id: 'macro-dispatch-delay',
    title: 'Latency from the intended send time (coordinated omission)',
    columns: [
      { key: 'level', label: 'Load', align: 'left' },
      { key: 'delay_p50', label: 'Dispatch delay p50 ms', digits: 2 },
      { key: 'delay_p99', label: 'p99 ms', digits: 2 },
      { key: 'delay_max', label: 'max ms', digits: 2 },
      { key: 'ttft_p99', label: 'TTFT p99 ms (from send)', digits: 1 },
      { key: 'ttft_p99_intended', label: 'TTFT p99 ms (from intended)', digits: 1 },
      { key: 'e2el_p99_intended', label: 'E2EL p99 ms (from intended)', digits: 1 },
      { key: 'limit', label: 'Client', align: 'left' },
    ],
    rows: timed.map((l) => {
      const i = intendedOf(l)!;
      const trend = i.dispatch_delay_trend;
      return {
        level: levelRowLabel(l),
        delay_p50: finite(i.dispatch_delay_ms?.p50),
        delay_p99: finite(i.dispatch_delay_ms?.p99),
        delay_max: finite(i.dispatch_delay_ms?.max),
        ttft_p99: finite(l.p99_ttft_ms),
        ttft_p99_intended: finite(i.ttft_ms?.p99),
        e2el_p99_intended: finite(i.e2el_ms?.p99),
        limit: i.client_limited ? `the limit: delay grew ${trend?.first_quarter_ms.toFixed(1)} → ${trend?.last_quarter_ms.toFixed(1)} ms` : 'kept up',
      };
    }),
    note:
      (rate
        ? 'Request rates: the intended send time is each request’s arrival in the schedule. '
        : 'Concurrency: the intended send time is when a slot freed, so the delay is queueing inside the client. ') +
      'TTFT and E2E latency from the intended time count the client’s own delay, as a user arriving on schedule sees it.',
  };
}

/** The findings' line for levels whose client fell behind its schedule: the client is the limit there. */
export function dispatchDelayLines(levels: readonly MacroLevelSummary[]): string[] {
  const limited = levels.filter((l) => intendedOf(l)?.client_limited);
  if (!limited.length) return [];
  return [
    `⚠ The load generator fell behind its schedule at ${limited
      .map((l) => {
        const d = intendedOf(l)!.dispatch_delay_ms!;
        return `${levelRowLabel(l)} (dispatch delay p99 ${finite(d.p99)?.toFixed(1)} ms, growing)`;
      })
      .join(', ')}: the client, not the server, is the limit there; the latency from the intended send time counts that wait.`,
  ];
}

/** The front as a findings table: each point on it, best per user first, with per-GPU (and per-watt) throughput. */
export function paretoTable(front: ParetoFront, id: string, title: string, dominated: number): ResultTable {
  const anyWatt = front.points.some((p) => p.perWatt !== undefined);
  const gpusFrom = new Set(front.points.map((p) => p.gpusFrom));
  return {
    id,
    title,
    columns: [
      { key: 'series', label: 'Configuration', align: 'left' },
      { key: 'load', label: 'Load', align: 'left' },
      { key: 'per_user', label: 'Output tok/s per user', digits: 1 },
      {
        key: front.axis === 'perWatt' ? 'per_watt' : 'per_gpu',
        label: front.axis === 'perWatt' ? 'Output tok/s per W' : 'Output tok/s per GPU',
        digits: front.axis === 'perWatt' ? 3 : 1,
      },
      ...(front.axis === 'perGpu' && anyWatt ? [{ key: 'per_watt', label: 'Output tok/s per W', digits: 3 }] : []),
      { key: 'gpus', label: 'GPUs', digits: 0 },
    ],
    rows: [...front.front].reverse().map((p) => ({
      series: p.series,
      load: p.load,
      per_user: p.perUser,
      per_gpu: p.perGpu,
      per_watt: p.perWatt,
      gpus: p.gpus,
    })),
    note:
      `The points no other beats on both axes; ${dominated} dominated point(s) left out (another is at least as fast per user and per ${front.axis === 'perWatt' ? 'watt' : 'GPU'}). ` +
      'Per user: output throughput over the requests in flight (the concurrency; for a request rate the measured peak), as vllm bench sweep plot_pareto. ' +
      (gpusFrom.has('assumed')
        ? 'GPUs: one where neither nvidia-smi nor the server’s parallel flags said how many.'
        : gpusFrom.has('command')
          ? 'GPUs: from the server’s parallel flags where nvidia-smi was not sampled.'
          : 'GPUs: as nvidia-smi listed them.'),
  };
}

/** The Pareto tables (per GPU, and per watt where power is known) for points of one run or a comparison; none under two points. */
export function paretoTables(points: readonly ParetoPoint[], idPrefix: string, what: string): ResultTable[] {
  if (points.length < 2) return [];
  const tables: ResultTable[] = [];
  const byGpu = paretoFront(points, 'perGpu');
  tables.push(
    paretoTable(byGpu, `${idPrefix}-pareto`, `Pareto front ${what}: output tok/s per user against per GPU`, byGpu.points.length - byGpu.front.length),
  );
  const byWatt = paretoFront(points, 'perWatt');
  if (byWatt.points.length >= 2)
    tables.push(
      paretoTable(
        byWatt,
        `${idPrefix}-pareto-watt`,
        `Pareto front ${what}: output tok/s per user against per watt`,
        byWatt.points.length - byWatt.front.length,
      ),
    );
  return tables;
}
