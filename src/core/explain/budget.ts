// One account of a decode step from the three phases:
//   measured  — the macro phase's TPOT at the profiled batch, and the profiler's wall time per step;
//   explained — the profiler's time per kernel category (all-reduce, GEMM, MoE, attention, ..., idle);
//   predicted — what the micro phase's isolated kernels add up to at this step's sizes;
// and the named gap between each pair, with a one-line reading of each.
import { BudgetBar, BudgetMissingPhase, BudgetScopeView, DecodeBudgetView } from '../../shared/budget';
import { MacroInput, MacroLevelInput, MicroInput, ProfileInput } from './inputs';
import { readLinearCurve, readSizeCurve } from './interpolate';
import { allReducesPerStep, decodeMessageBytes, expertSpread, LinearShape, ModelStructure, presetFor } from './modelStructure';

export interface BudgetInputs {
  macro?: MacroInput;
  micro?: MicroInput;
  profile?: ProfileInput;
  /** Overrides the structure the micro run names (or the preset its model matches). */
  model?: ModelStructure;
  /** The batch to account for when there is no profile (the profile's batch wins otherwise). */
  batch?: number;
  /** The target, server and model the runs share (campaign.ts checks that they do). */
  scope?: BudgetScopeView;
  /** Runs of other targets or servers that were not used, with why. */
  leftOut?: string[];
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
}

export interface BudgetGap {
  key: string;
  name: string;
  /** first - second. */
  first: string;
  second: string;
  ms: number;
  reading: string;
}

export interface Budget {
  batch: number;
  model?: ModelStructure;
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

interface RowDef { key: string; label: string; match: (normalized: string) => boolean }

// First match wins, as in the trace analyzer's kernel families; keys are lowercase with
// non-alphanumerics removed so "all-reduce", "allreduce" and "nccl_allreduce" all land here.
const ROW_DEFS: RowDef[] = [
  { key: 'allreduce', label: 'all-reduce', match: (c) => c.includes('allreduce') || c.includes('crossdevicereduce') },
  { key: 'collective', label: 'other collectives', match: (c) => /allgather|reducescatter|sendrecv|alltoall|nccl/.test(c) },
  { key: 'moe_gemm', label: 'MoE GEMM (routed experts)', match: (c) => c === 'moe' || c.startsWith('moegemm') || c.includes('groupgemm') || c.includes('fusedmoe') },
  { key: 'gemm', label: 'GEMM (dense and quantized)', match: (c) => !c.includes('moe') && /gemm|gemv|matmul/.test(c) },
  { key: 'attention', label: 'attention', match: (c) => c.includes('attention') || c === 'attn' },
  { key: 'idle', label: 'idle (gaps between kernels)', match: (c) => c === 'idle' },
];

const normalize = (category: string) => category.toLowerCase().replace(/[^a-z0-9]/g, '');

/** The budget row a trace category belongs to; categories no row claims keep their own name. */
export function rowFor(category: string): { key: string; label: string } {
  const c = normalize(category);
  const def = ROW_DEFS.find((d) => d.match(c));
  return def ? { key: def.key, label: def.label } : { key: category, label: category.replace(/_/g, ' ') };
}

export function buildBudget(inputs: BudgetInputs): Budget {
  const { macro, profile } = inputs;
  // A micro run without a GPU timed CPU kernels: its model structure still counts the step's parts,
  // but its times would predict nonsense for a GPU step, so they are left out.
  const micro = inputs.micro?.on_cpu ? undefined : inputs.micro;
  const model = inputs.model ?? inputs.micro?.model ?? presetFor(profile?.model ?? macro?.model);
  const batch = profile?.batch ?? inputs.batch ?? 1;
  const caveats: string[] = [];
  const readings: string[] = [];

  const tpotLevel = macro ? levelFor(macro.levels, batch) : undefined;
  const tpot = tpotLevel
    ? {
        concurrency: tpotLevel.max_concurrency,
        median_ms: tpotLevel.median_tpot_ms,
        mean_ms: tpotLevel.mean_tpot_ms,
        p99_ms: tpotLevel.p99_tpot_ms,
        exactBatch: tpotLevel.max_concurrency === batch,
      }
    : undefined;
  if (macro && !tpotLevel) caveats.push(`Macro run ${macro.runId} has no level with a TPOT; it adds nothing to the account.`);
  if (tpot && !tpot.exactBatch) {
    caveats.push(`Macro run ${macro!.runId} has no level at concurrency ${batch}; its nearest, ${tpot.concurrency ?? 'unlimited'}, stands in, so the TPOT is for a different batch than the profiled step.`);
  }
  const served = tpot?.median_ms ?? tpot?.mean_ms;

  // Explained: the profiled step folded into rows.
  const rows = new Map<string, BudgetRow>();
  if (profile) {
    for (const [category, ms] of Object.entries(profile.by_category_ms)) {
      const { key, label } = rowFor(category);
      const row = rows.get(key) ?? { key, label, categories: [], profiled_ms: 0 };
      row.categories.push(category);
      row.profiled_ms = (row.profiled_ms ?? 0) + ms;
      rows.set(key, row);
    }
    for (const row of rows.values()) row.share = (row.profiled_ms ?? 0) / profile.step_ms;
  }
  const rowOf = (key: string, label: string): BudgetRow => {
    let row = rows.get(key);
    if (!row) rows.set(key, (row = { key, label, categories: [] }));
    return row;
  };

  // Predicted: micro's isolated kernels at this step's sizes.
  // A model without tensor parallelism runs no all-reduce: nothing to predict or to miss.
  const allreduceFloor = model && allReducesPerStep(model) > 0
    ? (micro ? predictAllReduce(micro, model, batch, rowOf('allreduce', 'all-reduce'), caveats) : undefined) ?? { calls: allReducesPerStep(model), bytes: decodeMessageBytes(model, batch), worldSize: model.tp }
    : undefined;
  if (micro?.gemm_kernel?.fallback_reason && micro.gemm.length) {
    caveats.push(`Micro timed its GEMMs with ${micro.gemm_kernel.label ?? 'a fallback kernel'}, not the server's kernel (${micro.gemm_kernel.fallback_reason}); the GEMM predictions are for that kernel and its weight dtype.`);
  }
  if (micro && model) {
    predictGemms(micro, model, batch, false, rowOf('gemm', 'GEMM (dense and quantized)'), caveats);
    predictGemms(micro, model, batch, true, rowOf('moe_gemm', 'MoE GEMM (routed experts)'), caveats);
  } else if (micro) {
    caveats.push(`Micro run ${micro.runId} names no model whose structure is known (layers, shapes), so nothing is predicted from it; pass --model kimi-k2.5 or run micro with --model.`);
  }
  if (micro) predictIdle(micro, profile, rowOf('idle', 'idle (gaps between kernels)'), caveats);
  if (inputs.micro?.on_cpu) {
    caveats.push(`Micro run ${inputs.micro.runId} ran on a CPU (no GPU on its host): its times say nothing about a GPU step, so nothing is predicted from them. Run \`infbench micro\` on the GPU host, with the server's Python, to predict the step's parts.`);
  }
  for (const [key, row] of rows) {
    if (row.profiled_ms === undefined && row.predicted_ms === undefined) rows.delete(key);
    else if (row.profiled_ms !== undefined && row.predicted_ms !== undefined) row.gap_ms = row.profiled_ms - row.predicted_ms;
  }
  const ordered = [...rows.values()].sort((a, b) => {
    if (a.key === 'idle') return 1;
    if (b.key === 'idle') return -1;
    return (b.profiled_ms ?? b.predicted_ms ?? 0) - (a.profiled_ms ?? a.predicted_ms ?? 0);
  });
  const predictedRows = ordered.filter((r) => r.predicted_ms !== undefined);
  const predicted_ms = predictedRows.length ? sum(predictedRows.map((r) => r.predicted_ms!)) : undefined;
  const predicted_rows_profiled_ms = profile && predictedRows.length ? sum(predictedRows.map((r) => r.profiled_ms ?? 0)) : undefined;

  // Gaps between each pair of totals, and per predicted row.
  const gaps: BudgetGap[] = [];
  const step = profile?.step_ms;
  if (served !== undefined && step !== undefined) {
    const d = served - step;
    gaps.push({
      key: 'host_overhead',
      name: 'time per token outside the GPU step',
      first: 'served TPOT (macro)',
      second: 'profiled step (profile)',
      ms: d,
      reading: d >= 0
        ? `Served TPOT ${ms(served)} vs profiled step ${ms(step)}: ${ms(d)} per token (${pct(d / served)}) is spent outside the GPU step — scheduling, sampling, detokenizing and streaming${(tpot!.concurrency ?? 2) > 1 ? ', and at this concurrency the longer steps in which other requests\' prompts are prefilled' : ''}${tpot!.exactBatch ? '' : ' (and a different batch: see the caveats)'}.`
        : `Served TPOT ${ms(served)} is ${ms(-d)} shorter than the profiled step ${ms(step)}: the profiler slowed the step it recorded${tpot!.exactBatch ? '' : ', or the batches differ (see the caveats)'}.`,
    });
  }
  const period = profile?.period_ms;
  // Below 1% of the step the difference is the trace's own rounding, not time between steps.
  if (step !== undefined && period !== undefined && period - step > 0.01 * step) {
    gaps.push({
      key: 'between_steps',
      name: 'GPU idle between decode steps',
      first: 'step period (profile)',
      second: 'profiled step (profile)',
      ms: period - step,
      reading: `Between decode steps the GPU sits idle ${ms(period - step)} (a step starts every ${ms(period)}, runs ${ms(step)}): the engine's CPU work — scheduling, sampling, preparing the next step's inputs.`,
    });
  }
  if (step !== undefined && predicted_ms !== undefined) {
    const d = step - predicted_ms;
    const unpredicted = ordered.filter((r) => r.predicted_ms === undefined && r.profiled_ms !== undefined);
    gaps.push({
      key: 'step_vs_micro',
      name: 'profiled step beyond the parts micro measures',
      first: 'profiled step (profile)',
      second: 'micro prediction',
      ms: d,
      reading: d >= 0
        ? `The profiled step ${ms(step)} is ${ms(d)} more than micro's parts add up to (${ms(predicted_ms)}): ${ms(sum(unpredicted.map((r) => r.profiled_ms!)))} in categories micro does not measure (${unpredicted.slice(0, 4).map((r) => r.label).join(', ')}${unpredicted.length > 4 ? ', ...' : ''}) and ${inIsolation(sum(predictedRows.map((r) => r.gap_ms ?? 0)))}.`
        : `Micro's parts add up to ${ms(predicted_ms)}, more than the whole profiled step (${ms(step)}): micro timed slower kernels than the server runs${micro?.gemm_kernel?.fallback_reason ? ' (see the caveats)' : ''}, so its predictions bound nothing here.`,
    });
  }
  if (served !== undefined && predicted_ms !== undefined) {
    gaps.push({
      key: 'tpot_vs_micro',
      name: 'served TPOT beyond the parts micro measures',
      first: 'served TPOT (macro)',
      second: 'micro prediction',
      ms: served - predicted_ms,
      reading: `Served TPOT ${ms(served)} against ${ms(predicted_ms)} for micro's parts: ${pct(predicted_ms / served)} of the served time per token is accounted for by isolated all-reduce, GEMM and launch costs.`,
    });
  }
  for (const row of predictedRows) {
    if (row.gap_ms === undefined) continue;
    gaps.push({
      key: `${row.key}_vs_micro`,
      name: `${row.label}: in the step vs in isolation`,
      first: `${row.label} (profile)`,
      second: `${row.label} (micro)`,
      ms: row.gap_ms,
      reading: rowGapReading(row, Boolean(row.key !== 'allreduce' && row.key !== 'idle' && micro?.gemm_kernel?.fallback_reason)),
    });
  }

  // Readings: the largest row first, then the gaps that matter.
  if (profile) {
    const top = ordered.find((r) => r.key !== 'idle' && r.profiled_ms !== undefined);
    if (top?.key === 'allreduce' && allreduceFloor) readings.push(allreduceReading(top, profile.step_ms, allreduceFloor));
    else if (top) readings.push(`${cap(top.label)} takes ${ms(top.profiled_ms!)} of ${ms(profile.step_ms)} per step (${pct(top.share!)}), the largest part of the step.`);
    const ar = rows.get('allreduce');
    if (top?.key !== 'allreduce' && ar?.profiled_ms !== undefined && allreduceFloor) readings.push(allreduceReading(ar, profile.step_ms, allreduceFloor));
    const rankSpread = profile.ranks && profile.ranks.length > 1 ? spread(profile.ranks.map((r) => r.step_ms)) : undefined;
    if (rankSpread && rankSpread.max - rankSpread.min > 0.02 * rankSpread.max) {
      const slow = profile.ranks!.find((r) => r.step_ms === rankSpread.max)!;
      readings.push(`Rank ${slow.rank} is the slowest at ${ms(rankSpread.max)} per step, ${ms(rankSpread.max - rankSpread.min)} over the fastest: every all-reduce waits for it.`);
    }
  } else if (rows.get('allreduce')?.predicted_ms !== undefined) {
    readings.push(`Micro predicts ${ms(rows.get('allreduce')!.predicted_ms!)} of all-reduce per step (${rows.get('allreduce')!.prediction}); a profile would show what the step really spends.`);
  }
  for (const g of gaps) {
    if (g.key === 'host_overhead' || g.key === 'between_steps' || g.key === 'step_vs_micro') readings.push(g.reading);
  }
  for (const g of gaps) {
    if (g.key.endsWith('_vs_micro') && g.key !== 'step_vs_micro' && g.key !== 'tpot_vs_micro' && g.key !== 'allreduce_vs_micro') readings.push(g.reading);
  }
  if (!profile && served !== undefined && predicted_ms !== undefined) readings.push(gaps.find((g) => g.key === 'tpot_vs_micro')!.reading);
  if (!profile && served !== undefined && predicted_ms === undefined) readings.push(`Served TPOT at concurrency ${tpot!.concurrency ?? 'unlimited'}: ${ms(served)} per token (${(1000 / served).toFixed(1)} tok/s per stream).`);

  const missing = missingPhases(inputs, batch, model);
  for (const l of inputs.leftOut ?? []) caveats.push(`Not used: ${l}. A budget accounts one target, server and model; runs of another are never compared.`);
  const runs = { macro: macro?.runId, micro: inputs.micro?.runId, profile: profile?.runId };
  const simulated = Boolean(macro?.simulated || inputs.micro?.simulated || profile?.simulated);
  const budget: Budget = {
    batch,
    model,
    runs,
    scope: inputs.scope,
    leftOut: inputs.leftOut ?? [],
    simulated,
    measured: { tpot, step: profile ? { ms: profile.step_ms, steps: profile.steps, ranks: profile.ranks } : undefined },
    rows: ordered,
    predicted_ms,
    predicted_rows_profiled_ms,
    gaps,
    readings,
    missing,
    caveats,
    view: { batch, title: '', bars: [], readings, missing, runs, simulated },
  };
  budget.view = budgetView(budget);
  return budget;
}

/** The level whose concurrency is the batch, else the nearest one that has a TPOT. */
function levelFor(levels: MacroLevelInput[], batch: number): MacroLevelInput | undefined {
  // A level cut short (cancelled mid-way) measured a different load than it names: never a reference.
  const withTpot = levels.filter((l) => l.partial !== true && typeof (l.median_tpot_ms ?? l.mean_tpot_ms) === 'number');
  const exact = withTpot.find((l) => l.max_concurrency === batch);
  if (exact) return exact;
  const distance = (l: MacroLevelInput) => (l.max_concurrency === null ? Number.POSITIVE_INFINITY : Math.abs(Math.log(l.max_concurrency / batch)));
  return [...withTpot].sort((a, b) => distance(a) - distance(b))[0];
}

interface AllReduceFloor {
  calls: number;
  bytes: number;
  /** Micro's time for one call at this size, where a usable micro run measured it. */
  microCallUs?: number;
  busbwGbps?: number;
  peakLabel?: string;
  floorCallUs?: number;
  worldSize: number;
  backend?: string;
}

function predictAllReduce(micro: MicroInput, model: ModelStructure, batch: number, row: BudgetRow, caveats: string[]): AllReduceFloor | undefined {
  const bytes = decodeMessageBytes(model, batch);
  const calls = allReducesPerStep(model);
  const reading = readSizeCurve(micro.allreduce.map((p) => ({ x: p.size_bytes, y: p.time_us })), bytes);
  if (!reading) {
    caveats.push(`Micro run ${micro.runId} has no all-reduce points, so the all-reduce row has no prediction; run micro with its all-reduce sweep.`);
    return undefined;
  }
  if (reading.where === 'below') caveats.push(`The decode all-reduce (${size(bytes)}) is smaller than micro's smallest size; that size's time stands in (small all-reduces are latency-bound).`);
  if (reading.where === 'above') caveats.push(`The decode all-reduce (${size(bytes)}) is larger than micro's largest size; the time is scaled from the largest size's bandwidth.`);
  row.predicted_ms = (calls * reading.value) / 1000;
  row.prediction = `${calls} calls (${model.allReducesPerLayer} per layer x ${model.layers} layers + ${model.extraAllReduces}) x ${reading.value.toFixed(1)} us at ${size(bytes)}`;
  const worldSize = micro.world_size ?? micro.allreduce.find((p) => p.world_size)?.world_size ?? model.tp;
  const measuredBusbw = Math.max(0, ...micro.allreduce.map((p) => p.busbw_gbps ?? 0));
  const busbw = measuredBusbw > 0 ? measuredBusbw : micro.peak_busbw_gbps;
  const peakLabel = measuredBusbw > 0 ? 'the measured busbw' : micro.peak_busbw_gbps ? 'the datasheet busbw' : undefined;
  // nccl-tests: busbw = algbw * 2(n-1)/n, algbw = bytes / time, so the fastest one call can be is bytes * 2(n-1)/n / busbw.
  const floorCallUs = busbw && worldSize > 1 ? ((bytes * (2 * (worldSize - 1)) / worldSize) / (busbw * 1e9)) * 1e6 : undefined;
  return { calls, bytes, microCallUs: reading.value, busbwGbps: busbw, peakLabel, floorCallUs, worldSize, backend: micro.allreduce_backend };
}

function allreduceReading(row: BudgetRow, stepMs: number, f: AllReduceFloor): string {
  const perCall = (row.profiled_ms! / f.calls) * 1000;
  const parts = [`All-reduce takes ${ms(row.profiled_ms!)} of ${ms(stepMs)} per step (${pct(row.profiled_ms! / stepMs)}): ${f.calls} calls of ${size(f.bytes)}, ${perCall.toFixed(1)} us each`];
  if (f.microCallUs === undefined) return `${parts[0]}.`;
  const beyond = row.profiled_ms! - (f.calls * f.microCallUs) / 1000;
  // vLLM's custom all-reduce (cross_device_reduce_*) is not NCCL, which is what micro can time.
  const custom = row.categories.some((c) => c.toLowerCase().replace(/[^a-z]/g, '') === 'allreduce');
  if (custom && f.backend && f.backend !== 'custom') parts[0] += ` (the server runs vLLM's custom all-reduce; micro timed ${f.backend.toUpperCase()}'s)`;
  parts.push(beyond >= 0
    ? `micro measures ${f.microCallUs.toFixed(1)} us for one in isolation, so ${ms(beyond)} per step is waiting beyond the collective itself (rank skew, synchronisation)`
    : `micro measures ${f.microCallUs.toFixed(1)} us for one in isolation, slower than the step's own (${ms(-beyond)} per step): micro's all-reduce is not the one the server uses`);
  if (f.floorCallUs !== undefined && f.busbwGbps) {
    const bound = f.microCallUs > 4 * f.floorCallUs ? 'latency, not bandwidth, bounds it' : 'it runs near the bandwidth floor';
    parts.push(`at ${f.peakLabel} ${gbps(f.busbwGbps)} GB/s the floor for this message size is ${ms((f.calls * f.floorCallUs) / 1000)} per step (${f.floorCallUs.toFixed(2)} us per call): ${bound}`);
  }
  return `${parts.join('; ')}.`;
}

function predictGemms(micro: MicroInput, model: ModelStructure, batch: number, routed: boolean, row: BudgetRow, caveats: string[]): void {
  const linears = model.linears.filter((l) => Boolean(l.routedExpert) === routed);
  if (!linears.length || !micro.gemm.length) return;
  let total = 0;
  const used: { name: string; calls: number; m: number; us: number }[] = [];
  const unmeasured: string[] = [];
  for (const linear of linears) {
    const points = gemmPointsFor(micro, linear);
    let calls = linear.perStep;
    let m = batch;
    if (routed && model.experts) {
      const { distinct, tokensPerExpert } = expertSpread(model.experts.total, model.experts.active, batch);
      calls = (linear.perStep / model.experts.active) * distinct;
      m = tokensPerExpert;
    }
    const reading = readLinearCurve(points.map((p) => ({ x: p.m, y: p.time_us })), m);
    if (!reading) {
      unmeasured.push(linear.name);
      continue;
    }
    total += (calls * reading.value) / 1000;
    used.push({ name: linear.name, calls, m, us: reading.value });
  }
  if (!used.length) {
    caveats.push(`Micro run ${micro.runId} measured none of the ${routed ? 'routed-expert' : 'dense'} GEMM shapes (${linears.map((l) => `${l.name} ${l.n}x${l.k}`).join(', ')}); the ${row.label} row has no prediction.`);
    return;
  }
  if (unmeasured.length) caveats.push(`Micro did not measure ${unmeasured.join(', ')}; the ${row.label} prediction leaves them out, so it is low.`);
  row.predicted_ms = total;
  const mText = routed && model.experts ? `M = ${expertSpread(model.experts.total, model.experts.active, batch).tokensPerExpert.toFixed(2)} tokens per expert` : `M = ${batch}`;
  row.terms = used;
  const term = (t: (typeof used)[number]) => `${t.name} ${Math.round(t.calls)} x ${t.us.toFixed(1)} us`;
  if (used.length <= 3) {
    row.prediction = `${mText}: ${used.map(term).join(' + ')}`;
  } else {
    // Ten shapes do not fit a table cell: the count and the biggest term; `terms` holds them all.
    const top = [...used].sort((a, b) => b.calls * b.us - a.calls * a.us)[0];
    row.prediction = `${mText}: ${Math.round(sum(used.map((t) => t.calls)))} GEMMs over ${used.length} shapes, most in ${term(top)}`;
  }
}

function gemmPointsFor(micro: MicroInput, linear: LinearShape) {
  const byName = micro.gemm.filter((p) => p.shape === linear.name || p.shape.startsWith(`${linear.name} `));
  if (byName.length) return byName;
  return micro.gemm.filter((p) => p.n === linear.n && p.k === linear.k);
}

function predictIdle(micro: MicroInput, profile: ProfileInput | undefined, row: BudgetRow, caveats: string[]): void {
  const launch = micro.launch.find((l) => l.mode === 'graph') ?? micro.launch.find((l) => l.mode === 'eager');
  if (!launch) return;
  const kernels = profile?.kernels_per_step;
  if (!kernels) {
    if (profile) caveats.push(`Profile run ${profile.runId} does not count kernels per step, so the launch gaps are not predicted.`);
    return;
  }
  row.predicted_ms = (kernels * launch.us_per_kernel) / 1000;
  row.prediction = `${Math.round(kernels)} kernels x ${launch.us_per_kernel.toFixed(2)} us launch gap (${launch.mode === 'graph' ? 'CUDA graph replay' : 'eager launch'})`;
}

/** `otherKernel`: micro timed something else than the server runs (a CPU, a fallback GEMM), so a gap says little. */
function rowGapReading(row: BudgetRow, otherKernel = false): string {
  const d = row.gap_ms!;
  const rel = row.predicted_ms! > 0 ? d / row.predicted_ms! : 0;
  if (row.key === 'idle') {
    return d >= 0
      ? `Idle ${ms(row.profiled_ms!)} per step against ${ms(row.predicted_ms!)} of launch gaps (${row.prediction}): ${ms(d)} of the idle time is not launch overhead — host syncs, CPU work between kernels, or waits on another stream.`
      : `Idle ${ms(row.profiled_ms!)} per step is within the launch gaps micro predicts (${ms(row.predicted_ms!)}: ${row.prediction}).`;
  }
  if (otherKernel && Math.abs(rel) >= 0.1) {
    return `${cap(row.label)}: ${ms(row.profiled_ms!)} in the step against ${ms(row.predicted_ms!)} predicted from micro, which did not time the server's kernel (see the caveats): rerun micro on the GPU host with the server's Python to compare like for like.`;
  }
  if (Math.abs(rel) < 0.1) return `${cap(row.label)}: ${ms(row.profiled_ms!)} in the step, ${ms(row.predicted_ms!)} in isolation — the step runs these kernels as fast as micro does.`;
  return d > 0
    ? `${cap(row.label)}: ${ms(row.profiled_ms!)} in the step against ${ms(row.predicted_ms!)} predicted from micro (${pct(rel)} slower): look for a different kernel or dtype than micro measured, an unexpected cast, or cold caches.`
    : `${cap(row.label)}: ${ms(row.profiled_ms!)} in the step against ${ms(row.predicted_ms!)} predicted from micro (${pct(-rel)} faster): the server fuses or batches these kernels better than micro's one-at-a-time timing.`;
}

function missingPhases(inputs: BudgetInputs, batch: number, model: ModelStructure | undefined): BudgetMissingPhase[] {
  const out: BudgetMissingPhase[] = [];
  const scope = inputs.scope;
  // The CLI line names the target and server the budget is for, so that it fills this budget's hole.
  const where = scope ? ` --target ${scope.target}` : '';
  const url = scope?.url ? ` --url ${scope.url}` : '';
  const on = scope ? ` on ${scope.target}` : '';
  if (!inputs.macro) {
    out.push({
      phase: 'macro', command: `infbench macro${where}${url} --concurrency ${batch}`,
      action: `Inference Bench: Run Macro Phase${on}, with concurrency ${batch} among its levels`,
      adds: 'the TPOT users see as served; its gap to the profiled step is the time per token spent outside the GPU (scheduling, sampling, streaming).',
    });
  }
  if (!inputs.profile) {
    out.push({
      phase: 'profile', command: `infbench profile${where}${url} --concurrency ${batch}`,
      action: `Inference Bench: Run Profiler Phase${on}`,
      adds: 'where the step\'s GPU time actually goes, per kernel category and rank; without it nothing is explained, only predicted.',
    });
  }
  const microCommand = model ? `infbench micro${where} --model ${model.name} --tp ${model.tp} --m ${batch}` : `infbench micro${where} --model <preset or config.json> --tp <TP> --m ${batch}`;
  if (!inputs.micro) {
    out.push({
      phase: 'micro', command: microCommand,
      action: `Inference Bench: Run Micro Phase${on}`,
      adds: 'what all-reduce, the GEMMs and kernel launches cost in isolation at this step\'s sizes, which tells sync waits and launch gaps apart from the kernels\' own time.',
    });
  }
  return out;
}

function budgetView(b: Budget): DecodeBudgetView {
  const bars: BudgetBar[] = [];
  const served = b.measured.tpot?.median_ms ?? b.measured.tpot?.mean_ms;
  const step = b.measured.step?.ms;
  if (served !== undefined) {
    bars.push({ key: 'tpot', label: `served TPOT (c=${b.measured.tpot!.concurrency ?? '∞'})`, kind: 'total', base_ms: 0, ms: served, source: 'macro', note: 'median time per output token, as vllm bench serve computes it' });
  }
  const period = b.gaps.find((g) => g.key === 'between_steps');
  if (step !== undefined && period) {
    bars.push({ key: 'between_steps', label: 'GPU idle between steps', kind: 'gap', base_ms: step, ms: period.ms, source: 'profile', note: 'step period minus step, from the trace' });
  }
  if (served !== undefined && step !== undefined) {
    const from = step + (period?.ms ?? 0);
    bars.push({ key: 'host_gap', label: period ? 'outside the engine loop' : 'outside the GPU step', kind: 'gap', base_ms: from, ms: served - from, source: 'derived', note: period ? 'served TPOT minus the profiled step period' : 'served TPOT minus profiled step' });
  }
  if (step !== undefined) {
    bars.push({ key: 'step', label: 'profiled step', kind: 'total', base_ms: 0, ms: step, source: 'profile', predicted_ms: b.predicted_ms, note: b.predicted_ms !== undefined ? `micro's parts add up to ${ms(b.predicted_ms)}` : undefined });
    let base = 0;
    for (const row of b.rows) {
      if (row.profiled_ms === undefined) continue;
      bars.push({ key: row.key, label: row.label, kind: 'part', base_ms: base, ms: row.profiled_ms, source: 'profile', predicted_ms: row.predicted_ms, note: row.prediction });
      base += row.profiled_ms;
    }
  } else if (b.predicted_ms !== undefined) {
    let base = 0;
    for (const row of b.rows) {
      if (row.predicted_ms === undefined) continue;
      bars.push({ key: row.key, label: row.label, kind: 'part', base_ms: base, ms: row.predicted_ms, source: 'micro', predicted_ms: row.predicted_ms, note: row.prediction });
      base += row.predicted_ms;
    }
    if (served !== undefined) bars.push({ key: 'unpredicted', label: 'not measured by micro', kind: 'gap', base_ms: base, ms: served - base, source: 'derived', note: 'served TPOT minus micro\'s parts' });
  }
  const title = `Decode step at batch ${b.batch}${b.model ? ` — ${b.model.name}, TP=${b.model.tp}` : ''}${b.simulated ? ' (simulator)' : ''}`;
  return { batch: b.batch, title, bars, readings: b.readings, missing: b.missing, runs: b.runs, scope: b.scope, leftOut: b.leftOut, simulated: b.simulated };
}

function inIsolation(gap: number): string {
  return gap >= 0
    ? `${ms(gap)} where the step's kernels run slower than the same kernels in isolation`
    : `the step's measured kernels run ${ms(-gap)} faster than micro's isolated ones`;
}

function sum(xs: number[]): number {
  return xs.reduce((a, b) => a + b, 0);
}
function spread(xs: number[]) {
  return { min: Math.min(...xs), max: Math.max(...xs) };
}
export function ms(v: number): string {
  return `${v.toFixed(2)} ms`;
}
function pct(v: number): string {
  return `${(v * 100).toFixed(1)}%`;
}
function cap(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}
function gbps(v: number): string {
  return v >= 10 ? v.toFixed(0) : v >= 1 ? v.toFixed(1) : v.toFixed(3);
}
export function size(bytes: number): string {
  if (bytes >= 1 << 20) return `${(bytes / (1 << 20)).toFixed(bytes % (1 << 20) ? 1 : 0)} MiB`;
  if (bytes >= 1024) return `${(bytes / 1024).toFixed(bytes % 1024 ? 1 : 0)} KiB`;
  return `${bytes} B`;
}
