// What the budget's three files share: the inputs it is built from, its rows and its gaps. Below
// budget.ts (which puts the account together), budgetNumbers.ts (its arithmetic) and budgetWords.ts
// (its words), so none of them imports a file that imports it.
import { BudgetScopeView } from '../../shared/budget';
import { MacroInput, MicroInput, ProfileInput } from './inputs';
import { ModelStructure } from './modelStructure';
import { ServedConfig } from './servedModel';

export interface BudgetInputs {
  macro?: MacroInput;
  micro?: MicroInput;
  profile?: ProfileInput;
  /** Overrides the structure the micro run names (or the preset its model matches). */
  model?: ModelStructure;
  /** The served model's config.json as a probe of the same server read it. */
  served?: ServedConfig;
  /** The batch to account for when there is no profile (the profile's batch wins otherwise). */
  batch?: number;
  /** The target, server and model the runs share (campaign.ts checks that they do). */
  scope?: BudgetScopeView;
  /** Runs of other targets, servers or server configurations that were not used, with why. */
  leftOut?: string[];
  /** What to know about how the runs were paired (an unknown configuration), in words. */
  caveats?: string[];
}

/** One line of the account: a group of kernel categories, as profiled and as micro predicts it. */
export interface BudgetRow {
  key: string;
  label: string;
  /** Trace categories folded into this row. */
  categories: string[];
  profiled_ms?: number;
  /** Share of the profiled step, 0..1. */
  share?: number;
  predicted_ms?: number;
  /** How the prediction was computed, with its numbers. */
  prediction?: string;
  /** The terms of a GEMM prediction: calls per step x micro's time at the step's M. */
  terms?: { name: string; calls: number; m: number; us: number }[];
  /** profiled - predicted. */
  gap_ms?: number;
  /** For idle under CUDA graphs: the part before a graph's first kernel, the GPU waiting on cudaGraphLaunch. */
  graph_launch_ms?: number;
}

/** What a gap is between: two totals, or one row as profiled and as micro predicts it. */
export type GapKind = 'host_overhead' | 'between_steps' | 'step_vs_micro' | 'tpot_vs_micro' | 'row_vs_micro';

export interface BudgetGap {
  /** "host_overhead", "step_vs_micro", ..., or "<row>_vs_micro" for one row. */
  key: string;
  kind: GapKind;
  /** For a row's gap: the row's key. */
  row?: string;
  name: string;
  /** first - second. */
  first: string;
  second: string;
  ms: number;
  reading: string;
}
