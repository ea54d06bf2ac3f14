// The words of the decode-step budget: each figure of budgetNumbers.ts said once, in the order a reader
// needs it, and the commands that fill in a missing phase.
import { BudgetMissingPhase } from '../../shared/budget';
import { BudgetGap, BudgetInputs, BudgetRow, GapKind } from './budgetParts';
import { AllReduceFloor, BudgetFigures, Caveat, ExpertParallelFigure, GapFigure, PredictionBasis, servedMicroCommand, sum } from './budgetNumbers';
import { ModelStructure } from './modelStructure';
import { ServedConfig } from './servedModel';

export function caveatText(c: Caveat): string {
  switch (c.kind) {
    case 'macro_no_tpot':
      return `Macro run ${c.runId} has no level with a TPOT; it adds nothing to the account.`;
    case 'macro_other_batch':
      return `Macro run ${c.runId} has no level at concurrency ${c.batch}; its nearest, ${c.concurrency ?? 'unlimited'}, stands in, so the TPOT is for a different batch than the profiled step.`;
    case 'no_allreduce_points':
      return `Micro run ${c.runId} has no all-reduce points, so the all-reduce row has no prediction; run micro with its all-reduce sweep.`;
    case 'allreduce_outside':
      return c.where === 'below'
        ? `The decode all-reduce (${size(c.bytes)}) is smaller than micro's smallest size; that size's time stands in (small all-reduces are latency-bound).`
        : `The decode all-reduce (${size(c.bytes)}) is larger than micro's largest size; the time is scaled from the largest size's bandwidth.`;
    case 'gemm_fallback':
      return `Micro timed its GEMMs with ${c.label ?? 'a fallback kernel'}, not the server's kernel (${c.reason}); the GEMM predictions are for that kernel and its weight dtype.`;
    case 'no_model':
      return `Micro run ${c.runId} names no model whose structure is known (layers, shapes), so nothing is predicted from it; pass --model kimi-k2.5 or run micro with --model.`;
    case 'no_gemm_shapes':
      return `Micro run ${c.runId} measured none of the ${c.routed ? 'routed-expert' : 'dense'} GEMM shapes (${c.linears.map((l) => `${l.name} ${l.n}x${l.k}`).join(', ')}); the ${c.row} row has no prediction.`;
    case 'gemm_unmeasured':
      return `Micro did not measure ${c.names.join(', ')}; the ${c.row} prediction leaves them out, so it is low.`;
    case 'moe_no_copy_peak':
      return `Micro run ${c.runId} has ${c.missing === 'copy' ? 'no memory-copy peak (its peak part was skipped)' : 'no bytes on its GEMM points (an older micro run)'}, so the routed experts (${c.names.join(', ')}) are not predicted: servers run them as one fused MoE kernel per layer that reads the weights of the experts hit (${c.active} of ${c.experts} per token) at close to the copy bandwidth, and ${c.active}-per-token one-expert GEMMs would price a different, slower kernel. Run micro again with its peak part (without --skip peak) to predict them.`;
    case 'no_kernel_count':
      return `Profile run ${c.runId} does not count kernels per step, so the launch gaps are not predicted.`;
    case 'model_mismatch':
      return `No prediction from micro run ${c.runId}: its model (${c.model}) is not the one profiled — ${c.reasons.join('; ')}. Run micro at the served model's shapes to predict this step.`;
    case 'served_vs_trace':
      return `The served config.json the probe read, ${c.served}, is not the model profiled — ${c.reasons.join('; ')}; it is left out (probe the server that was profiled).`;
    case 'served_mismatch':
      return `No prediction from ${c.from}: its model (${c.model}) is not the one served, ${c.served} — ${c.reasons.join('; ')}. Measure the served model: \`${c.microCommand}\`.`;
    case 'micro_on_cpu':
      return `Micro run ${c.runId} ran on a CPU (no GPU on its host): its times say nothing about a GPU step, so nothing is predicted from them. Run the micro phase on the GPU host, with the server's Python, to predict the step's parts.`;
  }
}

/** How a row's prediction was computed, with its numbers, for a table cell or a tooltip. */
export function predictionText(b: PredictionBasis): string {
  switch (b.kind) {
    case 'allreduce':
      return `${b.calls} calls (${b.perLayer} per layer x ${b.layers} layers + ${b.extra}) x ${b.us.toFixed(1)} us at ${size(b.bytes)}`;
    case 'idle':
      return `${Math.round(b.kernels)} kernels x ${b.us.toFixed(2)} us launch gap (${b.mode === 'graph' ? 'CUDA graph replay' : 'eager launch'})`;
    case 'gemm': {
      if (b.fused)
        return `one fused MoE kernel per layer and weight: ${b.terms.map((t) => `${t.name} ${Math.round(t.calls)} x ${t.us.toFixed(1)} us`).join(' + ')} (the weights of ${b.fused.experts.toFixed(1)} experts hit, at the measured ${b.fused.tbps.toFixed(2)} TB/s copy bandwidth)`;
      const mText = b.tokensPerExpert !== undefined ? `M = ${b.tokensPerExpert.toFixed(2)} tokens per expert` : `M = ${b.batch}`;
      const term = (t: (typeof b.terms)[number]) => `${t.name} ${Math.round(t.calls)} x ${t.us.toFixed(1)} us`;
      if (b.terms.length <= 3) return `${mText}: ${b.terms.map(term).join(' + ')}`;
      // Ten shapes do not fit a table cell: the count and the biggest term; `terms` holds them all.
      const top = [...b.terms].sort((x, y) => y.calls * y.us - x.calls * x.us)[0];
      return `${mText}: ${Math.round(sum(b.terms.map((t) => t.calls)))} GEMMs over ${b.terms.length} shapes, most in ${term(top)}`;
    }
  }
}

const TOTALS: Record<Exclude<GapKind, 'row_vs_micro'>, { name: string; first: string; second: string }> = {
  host_overhead: { name: 'time per token outside the GPU step', first: 'served TPOT (macro)', second: 'profiled step (profile)' },
  between_steps: { name: 'GPU idle between decode steps', first: 'step period (profile)', second: 'profiled step (profile)' },
  step_vs_micro: { name: 'profiled step beyond the parts micro measures', first: 'profiled step (profile)', second: 'micro prediction' },
  tpot_vs_micro: { name: 'served TPOT beyond the parts micro measures', first: 'served TPOT (macro)', second: 'micro prediction' },
};

/** One gap in words; its key stays as the JSON output has always named it. */
export function gapInWords(g: GapFigure, f: BudgetFigures, period: number | undefined, step: number | undefined): BudgetGap {
  if (g.kind === 'row_vs_micro') {
    const row = g.row!;
    return {
      key: `${row.key}_vs_micro`,
      kind: g.kind,
      row: row.key,
      name: `${row.label}: in the step vs in isolation`,
      first: `${row.label} (profile)`,
      second: `${row.label} (micro)`,
      ms: g.ms,
      reading: rowGapReading(row, Boolean(row.key !== 'allreduce' && row.key !== 'idle' && f.micro?.gemm_kernel?.fallback_reason)),
    };
  }
  return { key: g.kind, kind: g.kind, ...TOTALS[g.kind], ms: g.ms, reading: totalsReading(g, f, period, step!) };
}

// Below this share of the served TPOT, served and profiled agree: TPOT's own run-to-run noise is about as large.
const HOST_GAP_NOISE_SHARE = 0.005;

const graphWait = (f: BudgetFigures): number | undefined => f.rows.find((r) => r.key === 'idle')?.graph_launch_ms;

function totalsReading(g: GapFigure, f: BudgetFigures, period: number | undefined, step: number): string {
  const d = g.ms;
  const served = f.served!;
  const tpot = f.tpot!;
  const predicted = f.predicted_ms!;
  switch (g.kind) {
    case 'host_overhead':
      // A gap within the runs' own noise says nothing about the host or the profiler.
      if (Math.abs(d) < HOST_GAP_NOISE_SHARE * served)
        return `Served TPOT ${ms(served)} and the profiled step ${ms(step)} agree to ${pct(Math.abs(d) / served)}: a token takes one GPU step, and nothing measurable is spent outside it.`;
      return d >= 0
        ? `Served TPOT ${ms(served)} vs profiled step ${ms(step)}: ${ms(d)} per token (${pct(d / served)}) is spent outside the GPU step — scheduling, sampling, detokenizing and streaming${(tpot.concurrency ?? 2) > 1 ? ", and at this concurrency the longer steps in which other requests' prompts are prefilled" : ''}${tpot.exactBatch ? '' : ' (and a different batch: see the caveats)'}.`
        : `Served TPOT ${ms(served)} is ${ms(-d)} shorter than the profiled step ${ms(step)}: the profiler slowed the step it recorded${graphWait(f) ? ` (${ms(graphWait(f)!)} per step of it waiting on cudaGraphLaunch, a call the profiler makes slow)` : ''}${tpot.exactBatch ? '' : ', or the batches differ (see the caveats)'}.`;
    case 'between_steps':
      return `Between decode steps the GPU sits idle ${ms(d)} (a step starts every ${ms(period!)}, runs ${ms(step)}): the engine's CPU work — scheduling, sampling, preparing the next step's inputs.`;
    case 'step_vs_micro': {
      const unpredicted = f.rows.filter((r) => r.predicted_ms === undefined && r.profiled_ms !== undefined);
      return d >= 0
        ? `The profiled step ${ms(step)} is ${ms(d)} more than micro's parts add up to (${ms(predicted)}): ${ms(sum(unpredicted.map((r) => r.profiled_ms!)))} in categories micro does not measure (${unpredicted
            .slice(0, 4)
            .map((r) => r.label)
            .join(', ')}${unpredicted.length > 4 ? ', ...' : ''}) and ${inIsolation(sum(f.predictedRows.map((r) => r.gap_ms ?? 0)))}.`
        : `Micro's parts add up to ${ms(predicted)}, more than the whole profiled step (${ms(step)}): micro timed slower kernels than the server runs${f.micro?.gemm_kernel?.fallback_reason ? ' (see the caveats)' : ''}, so its predictions bound nothing here.`;
    }
    default:
      return `Served TPOT ${ms(served)} against ${ms(predicted)} for micro's parts: ${pct(predicted / served)} of the served time per token is accounted for by isolated all-reduce, GEMM and launch costs.`;
  }
}

/** The readings, most important first: the largest row, rank skew, then the gaps that matter. */
export function readingsOf(f: BudgetFigures, gaps: BudgetGap[], stepMs: number | undefined): string[] {
  const readings: string[] = [];
  const rows = new Map(f.rows.map((r) => [r.key, r]));
  if (stepMs !== undefined) {
    const top = f.rows.find((r) => r.key !== 'idle' && r.profiled_ms !== undefined);
    if (top?.key === 'allreduce' && f.allreduceFloor) readings.push(allreduceReading(top, stepMs, f.allreduceFloor));
    else if (top)
      readings.push(`${cap(top.label)} takes ${ms(top.profiled_ms!)} of ${ms(stepMs)} per step (${pct(top.share!)}), the largest part of the step.`);
    const ar = rows.get('allreduce');
    if (top?.key !== 'allreduce' && ar?.profiled_ms !== undefined && f.allreduceFloor) readings.push(allreduceReading(ar, stepMs, f.allreduceFloor));
    if (f.rankSpread) {
      const s = f.rankSpread;
      readings.push(`Rank ${s.slowest} is the slowest at ${ms(s.max)} per step, ${ms(s.max - s.min)} over the fastest: every all-reduce waits for it.`);
    }
  } else if (rows.get('allreduce')?.predicted_ms !== undefined) {
    readings.push(
      `Micro predicts ${ms(rows.get('allreduce')!.predicted_ms!)} of all-reduce per step (${rows.get('allreduce')!.prediction}); a profile would show what the step really spends.`,
    );
  }
  if (f.expertParallel) readings.push(expertParallelReading(f.expertParallel, f.micro?.runId));
  for (const g of gaps) {
    if (g.kind === 'host_overhead' || g.kind === 'between_steps' || g.kind === 'step_vs_micro') readings.push(g.reading);
  }
  // The all-reduce row's gap is in its own reading above.
  for (const g of gaps) {
    if (g.kind === 'row_vs_micro' && g.row !== 'allreduce') readings.push(g.reading);
  }
  const idle = rows.get('idle');
  if (idle?.graph_launch_ms && idle.gap_ms === undefined) readings.push(graphWaitText(idle));
  if (stepMs === undefined && f.served !== undefined && f.predicted_ms !== undefined) readings.push(gaps.find((g) => g.kind === 'tpot_vs_micro')!.reading);
  if (stepMs === undefined && f.served !== undefined && f.predicted_ms === undefined)
    readings.push(
      `Served TPOT at concurrency ${f.tpot!.concurrency ?? 'unlimited'}: ${ms(f.served)} per token (${(1000 / f.served).toFixed(1)} tok/s per stream).`,
    );
  return readings;
}

/** Would expert parallelism help? Its all-to-alls per step against today's all-reduce, at the same batch. */
function expertParallelReading(e: ExpertParallelFigure, runId: string | undefined): string {
  const today =
    e.allreduceMs === undefined
      ? ''
      : `, against ${ms(e.allreduceMs)} of all-reduce per step today (${e.allreduceFrom === 'profiled' ? 'profiled' : "micro's prediction"}): ${e.ms < e.allreduceMs ? `${ms(e.allreduceMs - e.ms)} less` : `${ms(e.ms - e.allreduceMs)} more`}`;
  return (
    `Expert parallelism instead, at batch ${e.batch}: ${e.calls} all-to-alls per step (dispatch and combine per MoE layer) of ${size(e.bytes)} ` +
    `(${e.tokensPerRank} token(s) per rank × top-${e.topK}, ${e.worldSize} ranks) would take ${ms(e.ms)} at ${e.callUs.toFixed(1)} µs each` +
    `${runId ? ` (micro run ${runId})` : ''}${today}. Attention would then run data-parallel; its cost is not in this figure.`
  );
}

function allreduceReading(row: BudgetRow, stepMs: number, f: AllReduceFloor): string {
  const perCall = (row.profiled_ms! / f.calls) * 1000;
  const parts = [
    `All-reduce takes ${ms(row.profiled_ms!)} of ${ms(stepMs)} per step (${pct(row.profiled_ms! / stepMs)}): ${f.calls} calls of ${size(f.bytes)}, ${perCall.toFixed(1)} us each`,
  ];
  if (f.microCallUs === undefined) return `${parts[0]}.`;
  const beyond = row.profiled_ms! - (f.calls * f.microCallUs) / 1000;
  // vLLM's custom all-reduce (cross_device_reduce_*) is not NCCL, which is what micro can time.
  const custom = row.categories.some((c) => c.toLowerCase().replace(/[^a-z]/g, '') === 'allreduce');
  if (custom && f.backend && f.backend !== 'custom') parts[0] += ` (the server runs vLLM's custom all-reduce; micro timed ${f.backend.toUpperCase()}'s)`;
  parts.push(
    beyond >= 0
      ? `micro measures ${f.microCallUs.toFixed(1)} us for one in isolation, so ${ms(beyond)} per step is waiting beyond the collective itself (rank skew, synchronisation)`
      : `micro measures ${f.microCallUs.toFixed(1)} us for one in isolation, slower than the step's own (${ms(-beyond)} per step): micro's all-reduce is not the one the server uses`,
  );
  if (f.floorCallUs !== undefined && f.busbwGbps) {
    const bound = f.microCallUs > 4 * f.floorCallUs ? 'latency, not bandwidth, bounds it' : 'it runs near the bandwidth floor';
    const peak = f.peakLabel === 'measured' ? 'the measured busbw' : 'the datasheet busbw';
    parts.push(
      `at ${peak} ${gbps(f.busbwGbps)} GB/s the floor for this message size is ${ms((f.calls * f.floorCallUs) / 1000)} per step (${f.floorCallUs.toFixed(2)} us per call): ${bound}`,
    );
  }
  return `${parts.join('; ')}.`;
}

/** Idle under CUDA graphs, split: before the graph's first kernel (the launch call), and the rest. */
export function graphWaitText(row: BudgetRow): string {
  return (
    `Idle ${ms(row.profiled_ms!)} per step: ${ms(row.graph_launch_ms!)} of it before the graph's first kernel, the GPU waiting while the CPU sits in ` +
    'cudaGraphLaunch (the call is slow under the profiler, tens of µs without it).'
  );
}

/** `otherKernel`: micro timed something else than the server runs (a CPU, a fallback GEMM), so a gap says little. */
function rowGapReading(row: BudgetRow, otherKernel = false): string {
  const d = row.gap_ms!;
  const rel = row.predicted_ms! > 0 ? d / row.predicted_ms! : 0;
  if (row.key === 'idle' && row.graph_launch_ms) {
    const rest = row.profiled_ms! - row.graph_launch_ms;
    return (
      `${graphWaitText(row)} The other ${ms(rest)} against ${ms(row.predicted_ms!)} of launch gaps (${row.prediction})` +
      (d >= 0 ? `: ${ms(d)} of it is host syncs, CPU work between kernels, or waits on another stream.` : ': within them.')
    );
  }
  if (row.key === 'idle') {
    return d >= 0
      ? `Idle ${ms(row.profiled_ms!)} per step against ${ms(row.predicted_ms!)} of launch gaps (${row.prediction}): ${ms(d)} of the idle time is not launch overhead — host syncs, CPU work between kernels, or waits on another stream.`
      : `Idle ${ms(row.profiled_ms!)} per step is within the launch gaps micro predicts (${ms(row.predicted_ms!)}: ${row.prediction}).`;
  }
  if (otherKernel && Math.abs(rel) >= 0.1) {
    return `${cap(row.label)}: ${ms(row.profiled_ms!)} in the step against ${ms(row.predicted_ms!)} predicted from micro, which did not time the server's kernel (see the caveats): rerun micro on the GPU host with the server's Python to compare like for like.`;
  }
  if (Math.abs(rel) < 0.1)
    return `${cap(row.label)}: ${ms(row.profiled_ms!)} in the step, ${ms(row.predicted_ms!)} in isolation — the step runs these kernels as fast as micro does.`;
  return d > 0
    ? `${cap(row.label)}: ${ms(row.profiled_ms!)} in the step against ${ms(row.predicted_ms!)} predicted from micro (${pct(rel)} slower): look for a different kernel or dtype than micro measured, an unexpected cast, or cold caches.`
    : `${cap(row.label)}: ${ms(row.profiled_ms!)} in the step against ${ms(row.predicted_ms!)} predicted from micro (${pct(-rel)} faster): the server fuses or batches these kernels better than micro's one-at-a-time timing.`;
}

export function missingPhases(inputs: BudgetInputs, batch: number, model: ModelStructure | undefined, served?: ServedConfig): BudgetMissingPhase[] {
  const out: BudgetMissingPhase[] = [];
  const scope = inputs.scope;
  // The CLI line names the target and server the budget is for, so that it fills this budget's hole.
  const where = scope ? ` --target ${scope.target}` : '';
  const url = scope?.url ? ` --url ${scope.url}` : '';
  const on = scope ? ` on ${scope.target}` : '';
  // A run of another configuration is never set beside these: the hole is filled with the server in this one.
  const c = scope?.configuration;
  const inConfiguration =
    c && c.id !== 'unknown' ? ` Measure it with the server in configuration '${c.name}' (${c.id}): runs of another are not set beside these.` : '';
  if (!inputs.macro) {
    out.push({
      phase: 'macro',
      command: `infbench macro${where}${url} --concurrency ${batch}`,
      action: `Inference Bench: Run Macro Phase${on}, with concurrency ${batch} among its levels`,
      adds: `the TPOT users see as served; its gap to the profiled step is the time per token spent outside the GPU (scheduling, sampling, streaming).${inConfiguration}`,
    });
  }
  if (!inputs.profile) {
    out.push({
      phase: 'profile',
      command: `infbench profile${where}${url} --concurrency ${batch}`,
      action: `Inference Bench: Run Profiler Phase${on}`,
      adds: `where the step's GPU time actually goes, per kernel category and rank; without it nothing is explained, only predicted.${inConfiguration}`,
    });
  }
  // The served model's own id where a probe read its config.json: micro finds it on the host by that id.
  const microCommand = served
    ? servedMicroCommand(served, batch, where)
    : model
      ? `infbench micro${where} --model ${model.name} --tp ${model.tp} --m ${batch}`
      : `infbench micro${where} --model <preset or config.json> --tp <TP> --m ${batch}`;
  if (!inputs.micro) {
    out.push({
      phase: 'micro',
      command: microCommand,
      action: `Inference Bench: Run Micro Phase${on}`,
      adds: "what all-reduce, the GEMMs and kernel launches cost in isolation at this step's sizes, which tells sync waits and launch gaps apart from the kernels' own time.",
    });
  }
  return out;
}

function inIsolation(gap: number): string {
  return gap >= 0
    ? `${ms(gap)} where the step's kernels run slower than the same kernels in isolation`
    : `the step's measured kernels run ${ms(-gap)} faster than micro's isolated ones`;
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
