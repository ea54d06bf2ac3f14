// One account of a decode step from the three phases:
//   measured  — the macro phase's TPOT at the profiled batch, and the profiler's wall time per step;
//   explained — the profiler's time per kernel category (all-reduce, GEMM, MoE, attention, ..., idle);
//   predicted — what the micro phase's isolated kernels add up to at this step's sizes;
// and the named gap between each pair, with a one-line reading of each.
// The numbers are worked out in budgetNumbers.ts, said in budgetWords.ts; this file puts them together
// (what all three share, the inputs, rows and gaps, is in budgetParts.ts, below them).
import { BudgetBar, BudgetMissingPhase, BudgetScopeView, DecodeBudgetView } from '../../shared/budget';
import { budgetFigures } from './budgetNumbers';
import { BudgetGap, BudgetInputs, BudgetRow } from './budgetParts';
import { caveatText, gapInWords, missingPhases, ms, predictionText, readingsOf } from './budgetWords';
import { ModelStructure } from './modelStructure';
import { ServedConfig } from './servedModel';

export interface Budget {
  batch: number;
  model?: ModelStructure;
  /** The served model's config, where a probe read it and the trace agrees with it. */
  served?: ServedConfig;
  /** Where the model came from and what it was checked against. */
  modelLine?: string;
  runs: { macro?: string; micro?: string; profile?: string };
  scope?: BudgetScopeView;
  leftOut: string[];
  simulated: boolean;
  measured: {
    tpot?: { concurrency: number | null; median_ms?: number; mean_ms?: number; p99_ms?: number; exactBatch: boolean };
    step?: { ms: number; steps?: number; ranks?: { rank: number; step_ms: number }[] };
  };
  rows: BudgetRow[];
  /** Sum of the rows micro predicts (only those). */
  predicted_ms?: number;
  /** The profiled time of the rows micro predicts, for a like-for-like comparison. */
  predicted_rows_profiled_ms?: number;
  gaps: BudgetGap[];
  readings: string[];
  missing: BudgetMissingPhase[];
  /** Things the account could not do and why (a shape micro did not measure, a size outside its range). */
  caveats: string[];
  view: DecodeBudgetView;
}

export function buildBudget(inputs: BudgetInputs): Budget {
  const { macro, profile } = inputs;
  const f = budgetFigures(inputs);
  const { batch, model } = f;
  for (const row of f.rows) {
    const basis = f.bases.get(row.key);
    if (basis) row.prediction = predictionText(basis);
  }
  const gaps = f.gaps.map((g) => gapInWords(g, f, profile?.period_ms, profile?.step_ms));
  const readings = readingsOf(f, gaps, profile?.step_ms);
  const caveats = f.caveats.map(caveatText);
  const missing = missingPhases(inputs, batch, model, f.servedConfig);
  for (const c of inputs.caveats ?? []) caveats.push(`Paired with care: ${c}`);
  for (const l of inputs.leftOut ?? [])
    caveats.push(`Not used: ${l}. A budget accounts one target, server, model and server configuration; runs of another are never set beside them.`);
  const runs = { macro: macro?.runId, micro: inputs.micro?.runId, profile: profile?.runId };
  const simulated = Boolean(macro?.simulated || inputs.micro?.simulated || profile?.simulated);
  const budget: Budget = {
    batch,
    model,
    served: f.servedConfig,
    modelLine: f.modelLine,
    runs,
    scope: inputs.scope,
    leftOut: inputs.leftOut ?? [],
    simulated,
    measured: { tpot: f.tpot, step: profile ? { ms: profile.step_ms, steps: profile.steps, ranks: profile.ranks } : undefined },
    rows: f.rows,
    predicted_ms: f.predicted_ms,
    predicted_rows_profiled_ms: f.predicted_rows_profiled_ms,
    gaps,
    readings,
    missing,
    caveats,
    view: { batch, title: '', bars: [], readings, missing, runs, simulated },
  };
  budget.view = budgetView(budget);
  return budget;
}

function budgetView(b: Budget): DecodeBudgetView {
  const bars: BudgetBar[] = [];
  const served = b.measured.tpot?.median_ms ?? b.measured.tpot?.mean_ms;
  const step = b.measured.step?.ms;
  if (served !== undefined) {
    bars.push({
      key: 'tpot',
      label: `served TPOT (c=${b.measured.tpot!.concurrency ?? '∞'})`,
      kind: 'total',
      base_ms: 0,
      ms: served,
      source: 'macro',
      note: 'median time per output token, as vllm bench serve computes it',
    });
  }
  const period = b.gaps.find((g) => g.kind === 'between_steps');
  if (step !== undefined && period) {
    bars.push({
      key: 'between_steps',
      label: 'GPU idle between steps',
      kind: 'gap',
      base_ms: step,
      ms: period.ms,
      source: 'profile',
      note: 'step period minus step, from the trace',
    });
  }
  if (served !== undefined && step !== undefined) {
    const from = step + (period?.ms ?? 0);
    bars.push({
      key: 'host_gap',
      label: period ? 'outside the engine loop' : 'outside the GPU step',
      kind: 'gap',
      base_ms: from,
      ms: served - from,
      source: 'derived',
      note: period ? 'served TPOT minus the profiled step period' : 'served TPOT minus profiled step',
    });
  }
  if (step !== undefined) {
    bars.push({
      key: 'step',
      label: 'profiled step',
      kind: 'total',
      base_ms: 0,
      ms: step,
      source: 'profile',
      predicted_ms: b.predicted_ms,
      note: b.predicted_ms !== undefined ? `micro's parts add up to ${ms(b.predicted_ms)}` : undefined,
    });
    let base = 0;
    for (const row of b.rows) {
      if (row.profiled_ms === undefined) continue;
      bars.push({
        key: row.key,
        label: row.label,
        kind: 'part',
        base_ms: base,
        ms: row.profiled_ms,
        source: 'profile',
        predicted_ms: row.predicted_ms,
        note: row.prediction,
      });
      base += row.profiled_ms;
    }
  } else if (b.predicted_ms !== undefined) {
    let base = 0;
    for (const row of b.rows) {
      if (row.predicted_ms === undefined) continue;
      bars.push({
        key: row.key,
        label: row.label,
        kind: 'part',
        base_ms: base,
        ms: row.predicted_ms,
        source: 'micro',
        predicted_ms: row.predicted_ms,
        note: row.prediction,
      });
      base += row.predicted_ms;
    }
    if (served !== undefined)
      bars.push({
        key: 'unpredicted',
        label: 'not measured by micro',
        kind: 'gap',
        base_ms: base,
        ms: served - base,
        source: 'derived',
        note: "served TPOT minus micro's parts",
      });
  }
  const title = `Decode step at batch ${b.batch}${b.model ? ` — ${b.model.name}, TP=${b.model.tp}` : ''}${b.simulated ? ' (simulator)' : ''}`;
  return { batch: b.batch, title, bars, readings: b.readings, missing: b.missing, runs: b.runs, scope: b.scope, leftOut: b.leftOut, simulated: b.simulated };
}
