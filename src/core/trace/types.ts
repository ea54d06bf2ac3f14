// The result of analysing one or more Kineto traces (one file per rank): where each decode step's
// GPU time goes. Rendered by the CLI (aligned tables), the findings document and the webview
// (stacked bars per rank). Times are milliseconds unless the field name says `Us` (microseconds).

/** Bump when a field changes meaning or goes away; adding optional fields keeps it. */
export const TRACE_BREAKDOWN_VERSION = 1;

/** A kernel family the classifier knows: the first family whose pattern matches a kernel name wins. */
export interface KernelFamilySpec {
  /** The category the family's kernels count towards, e.g. "all-reduce", "attention". */
  category: string;
  /** A regular expression source matched against the kernel name. */
  pattern: string;
  /** Regular expression flags, e.g. "i"; none by default. */
  flags?: string;
}

export interface TraceAnalysisOptions {
  /** Families tried before the built-in table (the user's `inferenceBench.kernelFamilies` setting). */
  extraFamilies?: KernelFamilySpec[];
  /** A regular expression for step annotations, tried before the built-in ones. */
  stepAnnotation?: string;
  /**
   * How many steps the workload must have caused, where the caller drove it (the profile phase's
   * streams and tokens): a witness that a cut of a trace with no step names must agree with.
   */
  expectedSteps?: { min: number; max: number; what: string };
  /** How many kernels to list in `topKernels`; default 15. */
  topKernels?: number;
  /**
   * 'auto' (default): one streaming pass, in memory that does not grow with the file. Traces whose
   * steps the server names are reduced step by step as they stream; traces with no CPU step
   * annotation keep their first kernels as numbers (about 50 bytes each, launches included), decide
   * from them how the steps are cut, and cut the rest as it streams (a long trace whose steps only
   * GPU-side annotations name, written after their kernels as Kineto does, is read twice; one whose
   * first kernels show no steps at all stops keeping them at 8 times the prefix).
   * 'in-memory': keep every kernel and find the steps afterwards (for comparison and tests).
   */
  mode?: 'auto' | 'in-memory';
  /**
   * Internal: kernels kept as numbers, in 'auto' mode, before the steps of a trace that names none
   * are decided and the rest is cut while streaming (default 131,072). A trace with fewer kernels
   * is cut from the whole collection, exactly as 'in-memory' does. Tests set it small.
   */
  prefixKernels?: number;
}

/** How the decode steps were found, best first. */
export type StepSource =
  /** Step annotations (record_function ranges such as vLLM's `execute_new_0_cached_8`), kernels assigned by launch correlation. */
  | 'annotation'
  /** GPU-side annotations only (gpu_user_annotation), kernels assigned by time. */
  | 'gpu-annotation'
  /** with_stack traces with no step names: one step per outermost `nn.Module` forward. */
  | 'module-forward'
  /** No step names: cut where the kernel sequence repeats, once per forward pass. */
  | 'repeating-pattern'
  /** One step per `cudaGraphLaunch`, eager kernels launched after it joined to it. */
  | 'cuda-graph'
  /** No kernels, so no steps. */
  | 'none';

/** One category's part of a step. `idle` is a category too, so that `msPerStep` adds up to the step. */
export interface CategoryShare {
  category: string;
  /** Time attributed to this category per step: overlap between streams counted once, for the kernel that started first. */
  msPerStep: number;
  /** msPerStep as a percentage of the step's wall time; all categories (idle included) add up to 100. */
  sharePct: number;
  /** Plain sum of kernel durations per step, overlap counted twice (0 for idle). */
  rawMsPerStep: number;
  /** Kernels of this category per step (0 for idle). */
  kernelsPerStep: number;
}

export interface KernelStat {
  name: string;
  category: string;
  count: number;
  totalMs: number;
  meanUs: number;
  minUs: number;
  maxUs: number;
}

export interface Distribution {
  mean: number;
  median: number;
  min: number;
  max: number;
  p90: number;
}

/** Breakdown of one kind of step (decode or prefill) on one rank. */
export interface StepGroupBreakdown {
  /** Steps of this kind that were analysed. */
  count: number;
  /** Wall time of a step on the GPU, first kernel start to last kernel end, in ms. */
  stepMs: Distribution | null;
  /** Start-to-start time of consecutive steps of this kind, in ms (includes the GPU idle time between steps). */
  periodMs: Distribution | null;
  /** Sorted by msPerStep, largest first, idle included. */
  categories: CategoryShare[];
}

/** CPU-side launch statistics, from the cuda_runtime / cuda_driver events where the trace has them. */
export interface LaunchStats {
  /** Kernel launch calls (cudaLaunchKernel, cuLaunchKernel... and cudaGraphLaunch). */
  launches: number;
  graphLaunches: number;
  /** Duration of one launch call on the CPU, in microseconds. */
  launchCallUs: Distribution | null;
  /** From the launch call's start to its kernel's start on the GPU (queueing), in microseconds; eager launches only. */
  launchToStartUs: Distribution | null;
  /** Time in cudaStreamSynchronize / cudaDeviceSynchronize / cudaEventSynchronize, ms over the whole trace. */
  syncMs: number;
  /**
   * From each cudaGraphLaunch call's start to its first replayed kernel's start, in microseconds: the
   * GPU, its inputs copied, waits through it while the CPU sits in the call (long under the profiler).
   */
  graphLaunchToFirstKernelUs?: Distribution | null;
}

export interface RankBreakdown {
  file: string;
  /** distributedInfo.rank, else a rank number in the file name, else the file's position. */
  rank: number;
  worldSize: number | null;
  device: string | null;
  stepSource: StepSource;
  /** The annotation name pattern that marked the steps, when stepSource is annotation-based. */
  stepAnnotation?: string;
  decode: StepGroupBreakdown;
  prefill: StepGroupBreakdown;
  /** Steps the server named as both prefill and decode work (vLLM's execute_context_N(T)_generation_M(T) with N, M > 0; SGLang's MIXED). */
  mixed?: StepGroupBreakdown;
  /** How sure the step boundaries are: 'exact' when the server named its steps. */
  stepConfidence?: 'exact' | 'likely' | 'unsure';
  /** How the steps were found, in words: "vLLM's step annotation", "the kernel sequence that repeats once per pass"... */
  stepMethod?: string;
  /** The rank as the file names it where a number alone does not say it (SGLang's "TP-0 DP-1"). */
  rankName?: string;
  /** Kernels inside decode steps, by total time, largest first. */
  topKernels: KernelStat[];
  /** The rank's first steps (at most 500), in time order, each with its own categories and largest kernels. */
  steps?: StepDetail[];
  /** Every kernel name over the whole trace, by total time (independent of step finding). */
  kernelTotals: KernelStat[];
  launch: LaunchStats | null;
  totals: {
    events: number;
    kernels: number;
    /** Sum of all kernel durations, ms. */
    kernelMs: number;
    /** First kernel start to last kernel end, ms. */
    gpuSpanMs: number;
    /** Uncompressed JSON bytes read. */
    jsonBytes: number;
    fileBytes: number;
    compressed: boolean;
    /** Kernels that belong to no step (before the first or between steps). */
    kernelsOutsideSteps: number;
  };
  /** Why no step was found although kernels ran: a capture profile, or witnesses of a cut with no names that disagree. */
  noSteps?: string;
  /** Set when the file was cut: what was cut and where; the breakdown covers what was whole. */
  truncated?: string;
  /** 'streaming': one pass over the file (named steps reduced as they came; unnamed ones too once the first kernels showed how to cut them, or cut from the kernels that pass kept in a shorter trace); 'in-memory': read again keeping every kernel (mode 'in-memory', annotated kernels out of order for streaming, or a file whose events are not in the order Kineto writes them, then put in time order). */
  analysis: 'streaming' | 'in-memory';
  warnings: string[];
}

/** One step as the run's timeline draws it: where it sits, its categories' time and its largest kernels. */
export interface StepDetail {
  kind: 'prefill' | 'decode' | 'mixed' | null;
  /** The step's annotation name, or how it was cut. */
  label: string;
  /** From the rank's first step's start, microseconds. */
  startUs: number;
  durUs: number;
  /** Category -> microseconds attributed to it (idle included), adding up to the step. */
  byCategory: Record<string, number>;
  /** Its largest kernels by time, largest first: [place in the rank's kernelTotals, launches, total us]. */
  kernels: [number, number, number][];
}

export interface RankSkew {
  /** Decode step wall time per rank, ms, in rank order. */
  stepMsByRank: { rank: number; stepMs: number }[];
  minMs: number;
  maxMs: number;
  /** (max - min) / min, in percent. */
  spreadPct: number;
  slowestRank: number;
  fastestRank: number;
  /** GPU work (kernel time, overlap counted twice) per decode step per rank, ms: the rank the others wait for at each collective, even when host time fills the steps. */
  busyMsByRank?: { rank: number; busyMs: number }[];
  /** The rank with the most GPU work per decode step. */
  busiestRank?: number;
}

/** A trace file that holds no GPU work, reported beside the ranks. */
export interface FrontEndTrace {
  file: string;
  /** What the file is: "vLLM's API-server (front-end) trace, CPU only". */
  what: string;
  events: number;
}

export interface TraceBreakdown {
  version: number;
  /** One line a user reads first: "all-reduce 51.5% (11.17 ms) of a 21.70 ms decode step (8 ranks, 256 decode steps)". */
  headline: string;
  files: string[];
  /**
   * Per-rank categories averaged over ranks: ms per decode step and shares. Here `stepMs` is the
   * distribution of the ranks' mean decode step times, `count` the decode steps of all ranks.
   */
  overall: StepGroupBreakdown & { ranks: number };
  /** All-reduce in all its forms (vLLM's custom kernels and NCCL's) per decode step, overall; null without decode steps. */
  allReduce: { msPerStep: number; sharePct: number } | null;
  ranks: RankBreakdown[];
  /** Files with no GPU work (vLLM's API-server trace, any CPU-only profile): never a rank. */
  frontEnd?: FrontEndTrace[];
  skew: RankSkew | null;
  /** The category names in the classifier's order, idle last: a stable order for charts. */
  categoryOrder: string[];
  warnings: string[];
}
