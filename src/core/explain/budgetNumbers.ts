// The arithmetic of the decode-step budget: which rows the profiled categories fold into, what micro's
// isolated kernels predict for each, the gaps between the totals, and what could not be done (as facts;
// budgetWords.ts says them).
import { MacroLevelInput, MicroInput, ProfileInput } from './inputs';
import { readLinearCurve, readSizeCurve } from './interpolate';
import { allReducesPerStep, decodeMessageBytes, expertSpread, LinearShape, ModelStructure, presetFor } from './modelStructure';
import { shellQuote } from '../../remote/shellQuote';
import { ServedConfig, servedText, servedVsModel, servedVsTrace } from './servedModel';
import { BudgetInputs, BudgetRow, GapKind } from './budgetParts';

export interface GapFigure {
  kind: GapKind;
  /** first - second. */
  ms: number;
  /** For row_vs_micro: the row. */
  row?: BudgetRow;
}

/** How a row's prediction was computed, with its numbers. */
export type PredictionBasis =
  | { kind: 'allreduce'; calls: number; perLayer: number; layers: number; extra: number; us: number; bytes: number }
  | {
      kind: 'gemm';
      routed: boolean;
      batch: number;
      tokensPerExpert?: number;
      terms: NonNullable<BudgetRow['terms']>;
      /** Routed experts as servers run them: one fused kernel per MoE layer, reading the experts hit at the copy bandwidth. */
      fused?: { experts: number; tbps: number };
    }
  | { kind: 'idle'; kernels: number; us: number; mode: 'graph' | 'eager' };

/** Something the account could not do, or did with a stand-in. */
export type Caveat =
  | { kind: 'macro_no_tpot'; runId: string }
  | { kind: 'macro_other_batch'; runId: string; batch: number; concurrency: number | null }
  | { kind: 'no_allreduce_points'; runId: string }
  | { kind: 'allreduce_outside'; where: 'below' | 'above'; bytes: number }
  | { kind: 'gemm_fallback'; label?: string; reason: string }
  | { kind: 'no_model'; runId: string }
  | { kind: 'no_gemm_shapes'; runId: string; routed: boolean; linears: LinearShape[]; row: string }
  | { kind: 'gemm_unmeasured'; names: string[]; row: string }
  /** Routed experts not predicted: the fused MoE kernel is priced from the copy peak and each GEMM's bytes, and micro lacks one. */
  | { kind: 'moe_no_copy_peak'; runId: string; names: string[]; missing: 'copy' | 'bytes'; experts: number; active: number }
  | { kind: 'no_kernel_count'; runId: string }
  | { kind: 'micro_on_cpu'; runId: string }
  | { kind: 'model_mismatch'; runId: string; model: string; reasons: string[] }
  /** The probe's config of the served model contradicts the trace: the probe saw another model or server. */
  | { kind: 'served_vs_trace'; served: string; reasons: string[] }
  /** The model the budget would predict from is not the one served. */
  | { kind: 'served_mismatch'; from: string; model: string; served: string; reasons: string[]; microCommand: string };

export interface AllReduceFloor {
  calls: number;
  bytes: number;
  /** Micro's time for one call at this size, where a usable micro run measured it. */
  microCallUs?: number;
  busbwGbps?: number;
  peakLabel?: 'measured' | 'datasheet';
  floorCallUs?: number;
  worldSize: number;
  backend?: string;
}

export interface TpotFigure {
  concurrency: number | null;
  median_ms?: number;
  mean_ms?: number;
  p99_ms?: number;
  exactBatch: boolean;
}

/** The budget's numbers, before any word is said about them. */
export interface BudgetFigures {
  batch: number;
  model?: ModelStructure;
  /** The micro run whose times count (none from a CPU). */
  micro?: MicroInput;
  tpot?: TpotFigure;
  /** The served TPOT the account starts from (median, else mean). */
  served?: number;
  /** All rows, largest first, idle last. */
  rows: BudgetRow[];
  bases: Map<string, PredictionBasis>;
  predictedRows: BudgetRow[];
  predicted_ms?: number;
  predicted_rows_profiled_ms?: number;
  allreduceFloor?: AllReduceFloor;
  gaps: GapFigure[];
  caveats: Caveat[];
  /** The slowest and fastest rank's step, where they differ by more than 2%. */
  rankSpread?: { slowest: number; max: number; min: number };
  /** What expert parallelism's all-to-alls would cost per step at this batch, from a cluster micro run. */
  expertParallel?: ExpertParallelFigure;
  /** The served model's config, where a probe read it and the trace does not contradict it. */
  servedConfig?: ServedConfig;
  /** Where the model came from and what it was checked against, in words. */
  modelLine?: string;
}

export interface ExpertParallelFigure {
  batch: number;
  worldSize: number;
  tokensPerRank: number;
  topK: number;
  /** Dispatch and combine per MoE layer. */
  calls: number;
  bytes: number;
  callUs: number;
  ms: number;
  /** Today's all-reduce per step: profiled where a profile is, else micro's prediction. */
  allreduceMs?: number;
  allreduceFrom?: 'profiled' | 'predicted';
}

interface RowDef {
  key: string;
  label: string;
  match: (normalized: string) => boolean;
}

// First match wins, as in the trace analyzer's kernel families; keys are lowercase with
// non-alphanumerics removed so "all-reduce", "allreduce" and "nccl_allreduce" all land here.
const ROW_DEFS: RowDef[] = [
  { key: 'allreduce', label: 'all-reduce', match: (c) => c.includes('allreduce') || c.includes('crossdevicereduce') },
  { key: 'collective', label: 'other collectives', match: (c) => /allgather|reducescatter|sendrecv|alltoall|nccl/.test(c) },
  {
    key: 'moe_gemm',
    label: 'MoE GEMM (routed experts)',
    match: (c) => c === 'moe' || c.startsWith('moegemm') || c.includes('groupgemm') || c.includes('fusedmoe'),
  },
  { key: 'gemm', label: 'GEMM (dense and quantized)', match: (c) => !c.includes('moe') && /gemm|gemv|matmul/.test(c) },
  { key: 'attention', label: 'attention', match: (c) => c.includes('attention') || c === 'attn' },
  { key: 'idle', label: 'idle (gaps between kernels)', match: (c) => c === 'idle' },
];
const labelOf = (key: string) => ROW_DEFS.find((d) => d.key === key)!.label;

const normalize = (category: string) => category.toLowerCase().replace(/[^a-z0-9]/g, '');

/** The budget row a trace category belongs to; categories no row claims keep their own name. */
export function rowFor(category: string): { key: string; label: string } {
  const c = normalize(category);
  const def = ROW_DEFS.find((d) => d.match(c));
  return def ? { key: def.key, label: def.label } : { key: category, label: category.replace(/_/g, ' ') };
}

export function budgetFigures(inputs: BudgetInputs): BudgetFigures {
  const { macro, profile } = inputs;
  // A micro run without a GPU timed CPU kernels: its model structure still counts the step's parts,
  // but its times would predict nonsense for a GPU step, so they are left out.
  const micro = inputs.micro?.on_cpu ? undefined : inputs.micro;
  const model = inputs.model ?? inputs.micro?.model ?? presetFor(profile?.model ?? macro?.model);
  const batch = profile?.batch ?? inputs.batch ?? 1;
  const caveats: Caveat[] = [];
  const bases = new Map<string, PredictionBasis>();

  const tpotLevel = macro ? levelFor(macro.levels, batch) : undefined;
  const tpot: TpotFigure | undefined = tpotLevel
    ? {
        concurrency: tpotLevel.max_concurrency,
        median_ms: tpotLevel.median_tpot_ms,
        mean_ms: tpotLevel.mean_tpot_ms,
        p99_ms: tpotLevel.p99_tpot_ms,
        exactBatch: tpotLevel.max_concurrency === batch,
      }
    : undefined;
  if (macro && !tpotLevel) caveats.push({ kind: 'macro_no_tpot', runId: macro.runId });
  if (macro && tpot && !tpot.exactBatch) caveats.push({ kind: 'macro_other_batch', runId: macro.runId, batch, concurrency: tpot.concurrency });
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
  const rowOf = (key: string): BudgetRow => {
    let row = rows.get(key);
    if (!row) rows.set(key, (row = { key, label: labelOf(key), categories: [] }));
    return row;
  };

  // Micro's times predict this step only for the model that was profiled: a trace whose structure
  // contradicts micro's model (another layer count, world size) gets no prediction, and says why.
  const mismatch = micro && model && profile ? structureMismatch(model, profile) : [];
  if (mismatch.length) caveats.push({ kind: 'model_mismatch', runId: micro!.runId, model: modelText(model!), reasons: mismatch });
  // The served config where the probe read one: first against the trace (a probe of another server or an
  // earlier model is not this one), then against the model the prediction would use.
  const traceVsServed = inputs.served && profile ? servedVsTrace(inputs.served, profile) : [];
  if (traceVsServed.length) caveats.push({ kind: 'served_vs_trace', served: servedText(inputs.served!), reasons: traceVsServed });
  const servedConfig = traceVsServed.length ? undefined : inputs.served;
  const notServed = servedConfig && model ? servedVsModel(servedConfig, model) : [];
  if (notServed.length)
    caveats.push({
      kind: 'served_mismatch',
      from: model!.source,
      model: modelText(model!),
      served: servedText(servedConfig!),
      reasons: notServed,
      microCommand: servedMicroCommand(servedConfig!, batch),
    });
  const refused = mismatch.length > 0 || notServed.length > 0;
  const predicting = refused ? undefined : micro;
  // Predicted: micro's isolated kernels at this step's sizes.
  // A model without tensor parallelism runs no all-reduce: nothing to predict or to miss.
  const allreduceFloor =
    model && allReducesPerStep(model) > 0 && !refused
      ? ((micro ? predictAllReduce(micro, model, batch, rowOf('allreduce'), bases, caveats) : undefined) ?? {
          calls: allReducesPerStep(model),
          bytes: decodeMessageBytes(model, batch),
          worldSize: model.tp,
        })
      : undefined;
  if (predicting?.gemm_kernel?.fallback_reason && predicting.gemm.length) {
    caveats.push({ kind: 'gemm_fallback', label: predicting.gemm_kernel.label, reason: predicting.gemm_kernel.fallback_reason });
  }
  if (predicting && model) {
    predictGemms(predicting, model, batch, false, rowOf('gemm'), bases, caveats);
    predictGemms(predicting, model, batch, true, rowOf('moe_gemm'), bases, caveats);
  } else if (micro && !model) {
    caveats.push({ kind: 'no_model', runId: micro.runId });
  }
  if (predicting) predictIdle(predicting, profile, rowOf('idle'), bases, caveats);
  const idleRow = rows.get('idle');
  if (idleRow?.profiled_ms !== undefined && profile?.graph_launch_wait_ms)
    idleRow.graph_launch_ms = Math.min(idleRow.profiled_ms, profile.graph_launch_wait_ms);
  if (inputs.micro?.on_cpu) caveats.push({ kind: 'micro_on_cpu', runId: inputs.micro.runId });
  for (const [key, row] of rows) {
    if (row.profiled_ms === undefined && row.predicted_ms === undefined) rows.delete(key);
    // Idle before a graph's first kernel is the launch call's, not a gap micro's launch cost predicts.
    else if (row.profiled_ms !== undefined && row.predicted_ms !== undefined) row.gap_ms = row.profiled_ms - (row.graph_launch_ms ?? 0) - row.predicted_ms;
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
  const gaps: GapFigure[] = [];
  const step = profile?.step_ms;
  if (served !== undefined && step !== undefined) gaps.push({ kind: 'host_overhead', ms: served - step });
  const period = profile?.period_ms;
  // Below 1% of the step the difference is the trace's own rounding, not time between steps.
  if (step !== undefined && period !== undefined && period - step > 0.01 * step) gaps.push({ kind: 'between_steps', ms: period - step });
  if (step !== undefined && predicted_ms !== undefined) gaps.push({ kind: 'step_vs_micro', ms: step - predicted_ms });
  if (served !== undefined && predicted_ms !== undefined) gaps.push({ kind: 'tpot_vs_micro', ms: served - predicted_ms });
  for (const row of predictedRows) {
    if (row.gap_ms !== undefined) gaps.push({ kind: 'row_vs_micro', ms: row.gap_ms, row });
  }

  const ranks = profile?.ranks && profile.ranks.length > 1 ? profile.ranks : undefined;
  let rankSpread: BudgetFigures['rankSpread'];
  if (ranks) {
    const max = Math.max(...ranks.map((r) => r.step_ms));
    const min = Math.min(...ranks.map((r) => r.step_ms));
    if (max - min > 0.02 * max) rankSpread = { slowest: ranks.find((r) => r.step_ms === max)!.rank, max, min };
  }

  const ar = rows.get('allreduce');
  const expertParallel = predicting
    ? predictExpertParallel(predicting, batch, ar?.profiled_ms ?? ar?.predicted_ms, ar?.profiled_ms !== undefined ? 'profiled' : 'predicted')
    : undefined;

  return {
    batch,
    model,
    micro,
    expertParallel,
    tpot,
    served,
    rows: ordered,
    bases,
    predictedRows,
    predicted_ms,
    predicted_rows_profiled_ms,
    allreduceFloor,
    gaps,
    caveats,
    rankSpread,
    servedConfig,
    modelLine: modelLine(model, servedConfig, refused, profile),
  };
}

/** The micro run that measures the served model: the agent finds its config.json by the same id on the host. */
export const servedMicroCommand = (s: ServedConfig, batch: number, target = '') =>
  `infbench micro${target} --model ${shellQuote(s.model)} --tp ${s.tp ?? 1} --m ${batch}`;

const modelText = (m: ModelStructure) =>
  `${m.name} at TP ${m.tp}, ${m.layers} layers${m.experts ? `, ${m.experts.total} experts, ${m.experts.active} active` : ''}`;

/** Where the model came from, and what it agrees with: the served config.json, the trace's attention kernels and ranks. */
function modelLine(
  model: ModelStructure | undefined,
  served: ServedConfig | undefined,
  refused: boolean,
  profile: ProfileInput | undefined,
): string | undefined {
  if (!model) return served ? `Served model: ${servedText(served)}.` : undefined;
  const line = `Model: ${modelText(model)}, from ${model.source}`;
  if (refused) return `${line}; it disagrees with what was served or profiled (see the caveats).`;
  const witnesses = [
    served ? `the served config.json (${servedText(served)})` : '',
    profile?.attention_kernels_per_step !== undefined && profile.kernels_per_step
      ? `the trace (${profile.attention_kernels_per_step.toFixed(0)} attention kernels per step${profile.world_size !== undefined ? `, ${profile.world_size} GPU${profile.world_size === 1 ? '' : 's'}` : ''})`
      : '',
  ].filter(Boolean);
  return witnesses.length
    ? `${line}; it agrees with ${witnesses.join(' and ')}.`
    : `${line}; nothing was there to check it against (no probe read the served config.json, no trace counted attention kernels).`;
}

/**
 * Where the profiled step contradicts the model micro timed, in words; empty where nothing does.
 * Attention runs once per layer (one to a few kernels: the attention itself, the KV-cache write), so
 * a step with far fewer attention kernels than the model has layers is another model; tensor
 * parallelism over several GPUs all-reduces every layer, one GPU never does.
 */
export function structureMismatch(model: ModelStructure, profile: ProfileInput): string[] {
  const reasons: string[] = [];
  const attention = profile.attention_kernels_per_step;
  if (attention !== undefined && profile.kernels_per_step && (attention < 0.5 * model.layers || attention > 6 * model.layers))
    reasons.push(`the profiled step runs ${attention.toFixed(0)} attention kernels, where ${model.layers} layers run one to a few each`);
  const world = profile.world_size;
  if (world !== undefined && world !== model.tp) reasons.push(`the profile ran on ${world} GPU${world === 1 ? '' : 's'}, micro's model at TP ${model.tp}`);
  const allReduceMs = Object.entries(profile.by_category_ms)
    .filter(([c]) => rowFor(c).key === 'allreduce')
    .reduce((a, [, ms]) => a + ms, 0);
  if (world === undefined && model.tp > 1 && allReduceMs === 0 && profile.kernels_per_step)
    reasons.push(`the profiled step runs no all-reduce, where TP ${model.tp} runs ${allReducesPerStep(model)}`);
  return reasons;
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

function predictAllReduce(
  micro: MicroInput,
  model: ModelStructure,
  batch: number,
  row: BudgetRow,
  bases: Map<string, PredictionBasis>,
  caveats: Caveat[],
): AllReduceFloor | undefined {
  const bytes = decodeMessageBytes(model, batch);
  const calls = allReducesPerStep(model);
  const reading = readSizeCurve(
    micro.allreduce.map((p) => ({ x: p.size_bytes, y: p.time_us })),
    bytes,
  );
  if (!reading) {
    caveats.push({ kind: 'no_allreduce_points', runId: micro.runId });
    return undefined;
  }
  if (reading.where === 'below' || reading.where === 'above') caveats.push({ kind: 'allreduce_outside', where: reading.where, bytes });
  row.predicted_ms = (calls * reading.value) / 1000;
  bases.set(row.key, {
    kind: 'allreduce',
    calls,
    perLayer: model.allReducesPerLayer,
    layers: model.layers,
    extra: model.extraAllReduces,
    us: reading.value,
    bytes,
  });
  const worldSize = micro.world_size ?? micro.allreduce.find((p) => p.world_size)?.world_size ?? model.tp;
  const measuredBusbw = Math.max(0, ...micro.allreduce.map((p) => p.busbw_gbps ?? 0));
  const busbw = measuredBusbw > 0 ? measuredBusbw : micro.peak_busbw_gbps;
  const peakLabel = measuredBusbw > 0 ? 'measured' : micro.peak_busbw_gbps ? 'datasheet' : undefined;
  // nccl-tests: busbw = algbw * 2(n-1)/n, algbw = bytes / time, so the fastest one call can be is bytes * 2(n-1)/n / busbw.
  const floorCallUs = busbw && worldSize > 1 ? ((bytes * (2 * (worldSize - 1))) / worldSize / (busbw * 1e9)) * 1e6 : undefined;
  return { calls, bytes, microCallUs: reading.value, busbwGbps: busbw, peakLabel, floorCallUs, worldSize, backend: micro.allreduce_backend };
}

/**
 * Expert parallelism at the same batch: each of the W ranks holds ceil(batch / W) tokens and sends each
 * to its top-k experts and back, ceil(batch / W) x top-k x hidden x 2 bytes per all-to-all, rounded up
 * to a multiple of W elements for all_to_all_single's even split (the sizes the agent's `collective
 * --plan` gives, agent/infbench_agent/micro/collective.py); dispatch and combine once per MoE layer.
 */
function predictExpertParallel(
  micro: MicroInput,
  batch: number,
  allreduceMs: number | undefined,
  from: 'profiled' | 'predicted',
): ExpertParallelFigure | undefined {
  const ep = micro.expertParallel;
  if (!ep || !micro.alltoall?.length) return undefined;
  const tokensPerRank = Math.ceil(batch / ep.worldSize);
  const bytes = Math.ceil((tokensPerRank * ep.topK * ep.hidden) / ep.worldSize) * ep.worldSize * 2;
  const reading = readSizeCurve(
    micro.alltoall.map((p) => ({ x: p.size_bytes, y: p.time_us })),
    bytes,
  );
  if (!reading) return undefined;
  const calls = 2 * ep.moeLayers;
  return {
    batch,
    worldSize: ep.worldSize,
    tokensPerRank,
    topK: ep.topK,
    calls,
    bytes,
    callUs: reading.value,
    ms: (calls * reading.value) / 1000,
    allreduceMs,
    allreduceFrom: allreduceMs === undefined ? undefined : from,
  };
}

function predictGemms(
  micro: MicroInput,
  model: ModelStructure,
  batch: number,
  routed: boolean,
  row: BudgetRow,
  bases: Map<string, PredictionBasis>,
  caveats: Caveat[],
): void {
  const linears = model.linears.filter((l) => Boolean(l.routedExpert) === routed);
  if (!linears.length || !micro.gemm.length) return;
  let total = 0;
  const used: NonNullable<BudgetRow['terms']> = [];
  const unmeasured: string[] = [];
  // Servers run a layer's routed experts as one fused kernel (vLLM's fused_moe, SGLang's, Marlin MoE),
  // not one GEMM per expert: it reads the weights of every expert hit once, at close to the copy
  // bandwidth, where micro's one-expert GEMMs each pay a small kernel's low bandwidth.
  const spread = routed && model.experts ? expertSpread(model.experts.total, model.experts.active, batch) : undefined;
  const fusedAt = spread && micro.copy_tbps ? micro.copy_tbps : undefined;
  const unfused: string[] = [];
  for (const linear of linears) {
    const points = gemmPointsFor(micro, linear);
    let calls = linear.perStep;
    let m = batch;
    if (spread) m = spread.tokensPerExpert;
    const reading = readLinearCurve(
      points.map((p) => ({ x: p.m, y: p.time_us })),
      m,
    );
    if (!reading) {
      unmeasured.push(linear.name);
      continue;
    }
    let us = reading.value;
    const bytes = fusedAt
      ? readLinearCurve(
          points.filter((p) => p.bytes !== undefined).map((p) => ({ x: p.m, y: p.bytes! })),
          m,
        )
      : undefined;
    if (spread && fusedAt && bytes) {
      // One call per MoE layer; no faster than one expert's GEMM alone.
      calls = linear.perStep / model.experts!.active;
      us = Math.max(reading.value, (spread.distinct * bytes.value) / (fusedAt * 1e6));
    } else if (spread) {
      // Without the copy peak (or the GEMM's bytes) the fused kernel has no price; one-expert GEMMs
      // times the experts hit would be a different, far slower kernel than the server runs.
      unfused.push(linear.name);
      continue;
    }
    total += (calls * us) / 1000;
    used.push({ name: linear.name, calls, m, us });
  }
  if (unfused.length)
    caveats.push({
      kind: 'moe_no_copy_peak',
      runId: micro.runId,
      names: unfused,
      missing: fusedAt ? 'bytes' : 'copy',
      experts: model.experts!.total,
      active: model.experts!.active,
    });
  if (!used.length) {
    if (unfused.length) return;
    caveats.push({ kind: 'no_gemm_shapes', runId: micro.runId, routed, linears, row: row.label });
    return;
  }
  if (unmeasured.length) caveats.push({ kind: 'gemm_unmeasured', names: unmeasured, row: row.label });
  row.predicted_ms = total;
  row.terms = used;
  const fused = spread && fusedAt && used.every((t) => t.calls === linears.find((l) => l.name === t.name)!.perStep / model.experts!.active);
  bases.set(row.key, {
    kind: 'gemm',
    routed,
    batch,
    tokensPerExpert: spread?.tokensPerExpert,
    terms: used,
    ...(fused ? { fused: { experts: spread.distinct, tbps: fusedAt } } : {}),
  });
}

function gemmPointsFor(micro: MicroInput, linear: LinearShape) {
  const byName = micro.gemm.filter((p) => p.shape === linear.name || p.shape.startsWith(`${linear.name} `));
  if (byName.length) return byName;
  return micro.gemm.filter((p) => p.n === linear.n && p.k === linear.k);
}

function predictIdle(micro: MicroInput, profile: ProfileInput | undefined, row: BudgetRow, bases: Map<string, PredictionBasis>, caveats: Caveat[]): void {
  const launch = micro.launch.find((l) => l.mode === 'graph') ?? micro.launch.find((l) => l.mode === 'eager');
  if (!launch) return;
  const kernels = profile?.kernels_per_step;
  if (!kernels) {
    if (profile) caveats.push({ kind: 'no_kernel_count', runId: profile.runId });
    return;
  }
  row.predicted_ms = (kernels * launch.us_per_kernel) / 1000;
  bases.set(row.key, { kind: 'idle', kernels, us: launch.us_per_kernel, mode: launch.mode === 'graph' ? 'graph' : 'eager' });
}

export function sum(xs: number[]): number {
  return xs.reduce((a, b) => a + b, 0);
}
