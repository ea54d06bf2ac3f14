// Result shapes shared by the core, the CLI, the findings document and the webview.
// Macro fields use `vllm bench serve`'s names where the metric is the same.
import type { ResultTable } from './table';
import type { Remedy } from './remedy';
import type { NsysModulesView } from './nsysView';

export type Phase = 'macro' | 'micro' | 'profile' | 'probe';

/** One load level of the macro phase (one concurrency or one request rate). */
export interface MacroLevelSummary {
  max_concurrency: number | null;
  request_rate: number | null;
  completed: number;
  failed: number;
  duration: number;
  total_input_tokens: number;
  total_output_tokens: number;
  request_throughput: number;
  output_throughput: number;
  total_token_throughput: number;
  /** A running aggregate (the level still goes), or a level cut short (then `cut` says how). */
  partial?: boolean;
  /** The level stopped before its planned requests finished: its figures are of less load than it names. */
  cut?: LevelCut;
  /** The load generator's own limits on this level, each with the figure that shows it. */
  limits?: LevelLimit[];
  [metric: string]: unknown;
}

export interface LevelCut {
  reason: 'cancelled' | 'interrupted' | 'failed' | 'stopped';
  /** Requests that finished (ok or failed) before the level stopped. */
  done: number;
  planned?: number;
}

export interface LevelLimit {
  /** client_lag: sent late; client_wake: waited for a CPU, so read late; client_cpu: a load-generator process near a full core; host_cpu: the host's cores. */
  by: 'client_lag' | 'client_wake' | 'client_cpu' | 'host_cpu';
  /** The figure that shows it, in words: "client scheduling lag p99 67 ms". */
  figure: string;
  value: number;
  threshold: number;
  reading: string;
}

/** An agent's error as a front end renders it: the code picks the remedy, the message says what failed. */
export interface RunFailure {
  code: string;
  message: string;
  /** The next step, with `{0}`, `{1}`… where its remedies go (src/shared/remedy.ts). */
  hint?: string;
  remedies?: Remedy[];
}

export interface RunSummary {
  id: string;
  phase: Phase;
  target: string;
  startedAt: string;
  status: 'running' | 'completed' | 'failed' | 'interrupted' | 'cancelled';
  reason?: string;
  /** The agent's error code when it failed (`unauthorized`, `gpus_busy`...), so that a front end offers the remedy. */
  errorCode?: string;
  /**
   * Why the agent failed, as data: its error code, message and hint. The reason above is the CLI's
   * words (the hint names flags); another front end says the remedy for the code in its own.
   */
  failure?: RunFailure;
  simulated?: boolean;
  /** One line a user reads first: "decode 57.1 tok/s at c=1", "all-reduce 51.5% of a decode step". */
  headline?: string;
  macro?: { levels: MacroLevelSummary[]; requests?: MacroRequestPoint[] };
  /** While a macro level runs: how far it is (the agent reports it every second). */
  levelProgress?: LevelProgress;
  /** alltoall: a cluster run's all-to-all at expert-parallel decode sizes, across the hosts. */
  micro?: { points: Record<string, unknown>[]; gemm?: GemmPoint[]; allreduce?: AllReducePoint[]; alltoall?: AllReducePoint[]; peak?: GpuPeak };
  profile?: Record<string, unknown> & Partial<ProfileSummary>;
  probe?: ProbeView;
  /** The server configuration the run measured (every run made since runs record it; absent in older ones). */
  configuration?: RunConfiguration;
}

/**
 * The server configuration a run measured: the adopted recipe's command line and environment, hashed
 * (src/core/runs/serverConfiguration.ts says what counts), with a short name. Whatever sets runs side
 * by side pairs runs of one configuration only.
 */
export interface RunConfiguration {
  /** 12 hex digits of a sha256 over argv and environment; "unknown" when no recipe could be adopted. */
  id: string;
  /** "production" (the server as its user runs it), a comparison's flag-set name, or one made from the id. */
  name: string;
  /** Why the configuration is not known (no process found behind the URL, or one the agent cannot see). */
  unknownReason?: string;
  /** The command line it ran with, as a user would type it (secrets redacted). */
  command?: string;
  /** The recipe's command line (secrets redacted), to name the flags two configurations differ in. */
  argv?: string[];
  /** Each environment variable's value hashed (8 hex digits), never the value: to name the variables two configurations differ in. */
  env?: Record<string, string>;
  /** A configuration of a comparison: the comparison's id (its server-change folder's name); the runs that share it were compared. */
  comparison?: string;
  /** Its place in the comparison (0 is the baseline). */
  index?: number;
}

/** How far the macro level now running is: requests done of those it sends, and the time left at the pace so far. */
export interface LevelProgress {
  /** The level as the agent names it: "c=8", "rate 4/s". */
  level: string;
  done: number;
  /** Requests the level sends; 0 when it runs for a time instead. */
  total: number;
  elapsedS: number;
}

/** "c=8: 12 of 32 requests · about 9 s left", for the progress notification and the results view. */
export function levelProgressText(p: LevelProgress): string {
  const count = p.total > 0 ? `${p.done} of ${p.total} requests` : `${p.done} requests`;
  if (!(p.total > 0) || p.done <= 0 || p.elapsedS <= 0) return `${p.level}: ${count}`;
  const left = Math.max(0, Math.round((p.elapsedS * (p.total - p.done)) / p.done));
  const when = left >= 120 ? `about ${Math.round(left / 60)} min left` : `about ${left} s left`;
  return `${p.level}: ${count} · ${when}`;
}

/**
 * Whether a run has anything to draw or compare (levels, points, a breakdown, what a probe found).
 * A run still going or completed counts; one that failed before its first result does not.
 */
export function hasResults(run: RunSummary): boolean {
  if (run.status === 'running' || run.status === 'completed') return true;
  const m = run.micro;
  return !!(
    run.macro?.levels.length ||
    m?.points.length ||
    m?.gemm?.length ||
    m?.allreduce?.length ||
    m?.alltoall?.length ||
    (run.profile && Object.keys(run.profile).length) ||
    run.probe?.tables.length
  );
}

/**
 * The runs a list shows, newest first: those with results, and a target's newest run even without
 * any (so why its last attempt failed stays in sight); older failures with nothing kept are left out.
 */
export function listedRuns(runs: RunSummary[]): RunSummary[] {
  const newest = new Map<string, RunSummary>();
  for (const r of runs) {
    const seen = newest.get(r.target);
    if (!seen || r.startedAt > seen.startedAt) newest.set(r.target, r);
  }
  return runs.filter((r) => hasResults(r) || newest.get(r.target) === r);
}

/** What a probe found, as the results view shows it: the environment, then the GPUs. */
export interface ProbeView {
  tables: ResultTable[];
}

/** One request of a macro run, for the latency-over-time chart. Times in seconds from the run's first send. */
export interface MacroRequestPoint {
  /** Index of the load level it belongs to. */
  level: number;
  start_s: number;
  ttft_ms: number | null;
  e2el_ms: number | null;
  tpot_ms?: number | null;
  ok: boolean;
  /** How long the load generator held it past its planned send (its scheduling lag), for the timeline's queued part. */
  queued_ms?: number | null;
  output_tokens?: number | null;
}

/** One GEMM timing at one M (tokens in the step) for a named weight shape. */
export interface GemmPoint {
  /** "gate_up 512x7168", as the micro phase names the shape. */
  shape: string;
  m: number;
  n: number;
  k: number;
  time_us: number;
  /** Achieved memory bandwidth in TB/s (bytes moved / time). */
  tbps?: number;
  tflops?: number;
  backend?: string;
}

/** One all-reduce size, with nccl-tests' bus bandwidth (busbw = algbw * 2(n-1)/n). */
export interface AllReducePoint {
  size_bytes: number;
  time_us: number;
  algbw_gbps?: number;
  busbw_gbps: number;
  world_size?: number;
}

/** The GPU's datasheet peaks, drawn as lines on the micro charts. */
export interface GpuPeak {
  gpu?: string;
  memory_tbps?: number;
  busbw_gbps?: number;
}

/** One kernel of a decode step, averaged over the steps (and ranks) analysed. Times in microseconds. */
export interface KernelStat {
  name: string;
  category: string;
  /** Launches per decode step. */
  count: number;
  /** Time per decode step. */
  total_us: number;
  /** Per launch. */
  mean_us: number;
  min_us: number;
  max_us: number;
  /** Share of the decode step's wall time, 0..1. */
  share?: number;
  /** Where its first launch sits in the decode step, microseconds from the step's start. */
  first_offset_us?: number;
  rank?: number;
}

/** A decode step's time split by kernel category, per rank. */
export interface ProfileSummary {
  /** Category order for stacking: largest first. */
  categories: string[];
  ranks: { rank: number; step_us: number; by_category: Record<string, number> }[];
  kernels: KernelStat[];
  steps?: number;
  /**
   * The decode step over all ranks exactly as the analysis' headline counts it (ranks with decode
   * steps only), so that every view shows the headline's percentages. Microseconds.
   */
  overall?: { step_us: number; by_category: Record<string, number> };
  /** Each rank's own kernels per decode step, for the per-rank view. */
  kernelsByRank?: { rank: number; kernels: KernelStat[] }[];
  /** One rank's first profiled steps (at most 500) on their time axis, for the step timeline. */
  stepTimeline?: { rank: number; steps: ProfileStep[] };
  /** An Nsight Systems profile: the decode step by layer and module type. */
  nsys?: NsysModulesView;
}

/** One profiled step: where it sits (microseconds from the rank's first step), its categories' time, its largest kernels. */
export interface ProfileStep {
  kind: 'prefill' | 'decode' | 'mixed' | null;
  label: string;
  start_us: number;
  dur_us: number;
  by_category: Record<string, number>;
  kernels: { name: string; category: string; count: number; total_us: number }[];
}
