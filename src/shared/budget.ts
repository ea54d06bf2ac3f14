// The decode-step budget as the results view draws it: a waterfall from the served time per token
// down to the kernel categories of one decode step, with what the micro phase predicts beside each bar.
// Built by src/core/explain/budget.ts from a macro, a micro and a profile run.

/** One bar of the waterfall. Totals stand on zero; parts and gaps float from `base_ms` to `base_ms + ms`. */
export interface BudgetBar {
  /** Stable id: "tpot", "host_gap", "step", a category key ("allreduce", "moe_gemm", ...), "idle". */
  key: string;
  label: string;
  /** total: a whole measured time; part: one category of the profiled step; gap: a difference between two totals. */
  kind: 'total' | 'part' | 'gap';
  base_ms: number;
  /** Signed for gaps (negative when the second total is the larger); positive otherwise. */
  ms: number;
  /** Which phase measured it; "derived" for gaps. */
  source: 'macro' | 'profile' | 'micro' | 'derived';
  /** What the micro phase predicts for this part, where it predicts anything. */
  predicted_ms?: number;
  /** One line for the tooltip: what the bar is and how it was computed. */
  note?: string;
}

/** What a missing phase would add to the account. */
export interface BudgetMissingPhase {
  phase: 'macro' | 'micro' | 'profile';
  /** The CLI command that fills the hole, for example "infbench profile --target gpu-box --concurrency 1". */
  command: string;
  /** The same in the extension's words: the command palette entry to run on the target. */
  action: string;
  adds: string;
}

/** The one target, server, model and server configuration every run of a budget measured. */
export interface BudgetScopeView {
  target: string;
  url?: string;
  model?: string;
  /** The server configuration of its macro and profile runs: its name and id ("unknown" with why, where no recipe was adopted). */
  configuration?: { id: string; name: string; unknownReason?: string };
}

/** Everything the results view needs to draw the decode-step budget; the host computes it. */
export interface DecodeBudgetView {
  /** Sequences per decode step that the account is for (the profiled batch, the macro concurrency). */
  batch: number;
  title: string;
  bars: BudgetBar[];
  /** One-line readings, most important first ("all-reduce takes 11.17 ms of 21.70 ms per step; ..."). */
  readings: string[];
  missing: BudgetMissingPhase[];
  /** The runs the account was built from. */
  runs: { macro?: string; micro?: string; profile?: string };
  /** Whose runs these are: a budget is built from one target, server URL, model and server configuration only. */
  scope?: BudgetScopeView;
  /** Newer runs of another target, server or server configuration that were not used, each with why. */
  leftOut?: string[];
  /** True when any input came from the simulator: the view labels it. */
  simulated: boolean;
}
