import { Annotation, CollectedTrace, LaunchIndex, RuntimeKind } from './collect';
import { compileUserPattern } from './userPattern';
import { shortKernelName } from './format';
import { StepSource, TraceAnalysisOptions } from './types';

/** A mixed step holds prefill (context) and decode (generation) work at once, and the server's name says so. */
export type StepKind = 'prefill' | 'decode' | 'mixed';

/** One step: its kernels, as indices into the collected kernel columns, in start-time order. */
export interface Step {
  kind: StepKind;
  label: string;
  kernels: number[];
}

/** How sure the step boundaries are: the server named them, the trace's structure shows them, or a guess. */
export type StepConfidence = 'exact' | 'likely' | 'unsure';

export interface StepFinding {
  source: StepSource;
  annotation?: string;
  steps: Step[];
  kernelsOutside: number;
  warnings: string[];
  confidence?: StepConfidence;
  /** Who named the steps (StepPattern.writer), for annotation and module sources. */
  writer?: string;
  /** The repeating pass, where one was found; for 'repeating-pattern' its steps are `steps` (kernel indices by then). */
  repeats?: RepeatingSteps;
  /** What else gave the count of steps a cut with no names has (graph launches, sampling kernels...), in words. */
  witness?: string;
  /** Why there are no steps although there are kernels, in words: what the trace is, or which witnesses disagreed. */
  noSteps?: string;
}

export interface StepPattern {
  re: RegExp;
  /** 'prefill' / 'decode' / 'mixed' when the name says; undefined to decide from the step's size. */
  kindOf(name: string): StepKind | undefined;
  /** Who writes these names, for the "steps from ..." line. */
  writer: string;
}

export const byName = (name: string): StepKind | undefined => (/prefill|extend/i.test(name) ? 'prefill' : /decode/i.test(name) ? 'decode' : undefined);

/** The kind a request count split gives: any context request makes the step a prefill, both make it mixed. */
const fromCounts = (context: number, generation: number): StepKind => (context > 0 ? (generation > 0 ? 'mixed' : 'prefill') : 'decode');

/** vLLM's step name, any payload: execute_[N_]context_C(...)_generation_G(...); groups: C, G. */
export const VLLM_ITERATION_NAME = /^execute_(?:\d+_)?context_(\d+)(?:\([^)]*\)?)?_generation_(\d+)(?:\(|$)/;

/** vLLM's older step name: execute_new_N_cached_M, any payload after the counts; groups: N, M. */
export const VLLM_NEW_CACHED_NAME = /^execute_new_(\d+)(?:\([^)]*\)?)?_cached_(\d+)/;

/** Where the module forward of a with_stack trace starts: torch names python_function ranges of modules `nn.Module: <Class>_<n>`. */
export const MODULE_FORWARD = /^nn\.Module: /;

// Step annotations, best first; each is cited to the code that writes it.
export const BUILTIN_PATTERNS: StepPattern[] = [
  {
    // vLLM 0.26+: vllm/v1/worker/gpu_worker.py annotate_profile() names each step
    // execute_context_{ctx reqs}({ctx tokens})_generation_{gen reqs}({gen tokens}), counted by
    // vllm/v1/utils.py compute_iteration_details(), where a request still in chunked prefill is context.
    // Public vLLM traces also carry other payloads in the same frame: the step's request count before
    // "context" (execute_32_context_0(...)_generation_32(...)), and per part more than a token count
    // in the parentheses (888_788544, sq32sk55086...), cut short at times. Only the request counts
    // after "context_" and "generation_" are read: the kind comes from them, whatever the parentheses hold.
    re: VLLM_ITERATION_NAME,
    kindOf: (n) => {
      const m = VLLM_ITERATION_NAME.exec(n);
      return m ? fromCounts(Number(m[1]), Number(m[2])) : undefined;
    },
    writer: "vLLM's step annotation",
  },
  {
    // vLLM 0.11-0.25: the same annotate_profile() wrote execute_new_{N}_cached_{M}: N new requests
    // (prefill), M cached ones (decoding, or a chunked prefill going on). Both at once is a mixed step.
    re: VLLM_NEW_CACHED_NAME,
    kindOf: (n) => {
      const m = VLLM_NEW_CACHED_NAME.exec(n);
      return m ? fromCounts(Number(m[1]), Number(m[2])) : undefined;
    },
    writer: "vLLM's step annotation",
  },
  {
    // SGLang's model runner: step[DECODE bs=8], step[EXTEND bs=1 toks=512], step[MIXED ...], step[IDLE ...].
    re: /^step\[[A-Z_]+/,
    kindOf: (n) => {
      const mode = /^step\[([A-Z_]+)/.exec(n)?.[1] ?? '';
      return mode.startsWith('DECODE') ? 'decode' : mode === 'MIXED' ? 'mixed' : mode === 'EXTEND' || mode === 'PREFILL' ? 'prefill' : undefined;
    },
    writer: "SGLang's step annotation",
  },
  // torch.profiler's schedule marks each prof.step() as ProfilerStep#k (torch/profiler/profiler.py).
  { re: /^ProfilerStep#\d+$/, kindOf: byName, writer: "torch's ProfilerStep" },
  {
    re: /execute_model|model_forward|forward_batch|run_batch|forward_(decode|extend|idle)|decode_step|prefill_step|^(decode|prefill)$/i,
    kindOf: byName,
    writer: 'step annotation',
  },
  // vLLM's VLLM_CUSTOM_SCOPES_FOR_PROFILING scopes (vllm/v1/utils.py record_function_or_nullcontext):
  // the forward of each step, when the trace names nothing better.
  { re: /^gpu_model_runner: forward$/, kindOf: () => undefined, writer: "vLLM's gpu_model_runner scope" },
];

/** The outermost module forward of a with_stack trace: one per forward pass, so one per step. */
export const MODULE_PATTERN: StepPattern = { re: MODULE_FORWARD, kindOf: () => undefined, writer: 'the outermost module forward (with_stack)' };

/** Sorted kernel order by start time. */
export function kernelOrder(trace: CollectedTrace): Uint32Array {
  const { ts, count } = trace.kernels;
  const order = new Uint32Array(count);
  let sorted = true;
  for (let i = 0; i < count; i++) {
    order[i] = i;
    if (i > 0 && ts[i] < ts[i - 1]) sorted = false;
  }
  if (!sorted) order.sort((a, b) => ts[a] - ts[b] || a - b);
  return order;
}

/** Index of the last start <= t in an ascending array, or -1. */
export function lastAtOrBefore(starts: ArrayLike<number>, t: number): number {
  let lo = 0;
  let hi = starts.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (starts[mid] <= t) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found;
}

/**
 * Outermost annotations only: a range wholly inside an earlier kept one (same pattern) is nested,
 * not a step. Ranges that merely overlap stay separate steps; a kernel then joins the later one.
 */
export function outermost(list: Annotation[]): Annotation[] {
  const sorted = [...list].sort((a, b) => a.ts - b.ts || b.dur - a.dur);
  const kept: Annotation[] = [];
  let end = -Infinity;
  for (const a of sorted) {
    if (a.ts + a.dur <= end) continue;
    kept.push(a);
    end = Math.max(end, a.ts + a.dur);
  }
  return kept;
}

function median(values: number[]): number {
  if (!values.length) return 0;
  const s = [...values].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** What the step-kind rules need to know of a step. */
export interface KindCandidate {
  kind: StepKind | undefined;
  /** Start of the step's first kernel on the GPU, us. */
  firstTs: number;
  kernels: number;
  busyUs: number;
}

/** GPU-side annotations whose names tell a step's kind ("prefill+decode", "decode", SGLang's "extend"...). */
export function isKindAnnotation(a: Annotation): boolean {
  return a.gpu && byName(a.name) !== undefined;
}

/** What a step's kind is told from when nothing names it: its kernel count and GPU busy time. */
export interface StepSize {
  kernels: number;
  busyUs: number;
}

/**
 * A rule that tells prefill from decode by a step's size against the trace's typical step: `typical`
 * is what the rule measures over all such steps, `kindOf` the step's kind against it. `steady` says
 * which of the two typical figures a few more steps barely move (a mode, not a median).
 */
export interface SizeRule {
  typical(steps: readonly StepSize[]): [number, number];
  kindOf(step: StepSize, typical: readonly [number, number]): StepKind;
  steady: [boolean, boolean];
}

/** For steps a name or annotation cut: much bigger than the median step means prefill (or mixed), else decode. */
export const BY_SIZE: SizeRule = {
  typical: (steps) => [median(steps.map((p) => p.kernels)), median(steps.map((p) => p.busyUs))],
  kindOf: (p, [typicalCount, typicalBusy]) => (p.kernels > 1.5 * typicalCount || p.busyUs > 2.5 * typicalBusy ? 'prefill' : 'decode'),
  steady: [false, false],
};

/**
 * For steps cut by structure (module forwards, repeats): a step whose kernel count differs from the
 * common one and that is busier than the median is a prefill (the first, larger pass of a generate
 * loop); the repeating ones are decode.
 */
export const BY_SHAPE: SizeRule = {
  typical: (steps) => {
    const counts = new Map<number, number>();
    for (const s of steps) counts.set(s.kernels, (counts.get(s.kernels) ?? 0) + 1);
    const commonCount = [...counts].sort((a, b) => b[1] - a[1] || a[0] - b[0])[0]?.[0] ?? 0;
    return [commonCount, median(steps.map((s) => s.busyUs))];
  },
  kindOf: (s, [commonCount, typicalBusy]) => (s.kernels !== commonCount && s.busyUs > 1.1 * typicalBusy ? 'prefill' : 'decode'),
  steady: [true, false],
};

/**
 * Decides the kind of steps no name told: first from a nested GPU annotation at the step's first
 * kernel, else by size: much bigger than the typical step means prefill (or mixed), else decode.
 */
export function settleStepKinds(items: KindCandidate[], kindAnnotations: Annotation[]): void {
  settleStepKindsByAnnotation(items, kindAnnotations);
  const unknown = items.filter((p) => p.kind === undefined);
  const typical = BY_SIZE.typical(unknown);
  for (const p of unknown) p.kind = BY_SIZE.kindOf(p, typical);
}

/** Only the annotation rule of settleStepKinds. `kindAnnotations` sorted by ts is fastest; it is sorted here if not. */
export function settleStepKindsByAnnotation(items: KindCandidate[], kindAnnotations: Annotation[]): void {
  let kinds = kindAnnotations;
  for (let i = 1; i < kinds.length; i++) {
    if (kinds[i].ts < kinds[i - 1].ts) {
      kinds = [...kindAnnotations].sort((a, b) => a.ts - b.ts);
      break;
    }
  }
  const starts = kinds.map((a) => a.ts);
  for (const p of items) {
    if (p.kind !== undefined || !p.kernels || !kinds.length) continue;
    // The latest-starting range that holds t is the innermost; a range ending exactly at t is the step before.
    for (let i = lastAtOrBefore(starts, p.firstTs), seen = 0; i >= 0 && seen < 8; i--, seen++) {
      const a = kinds[i];
      if (p.firstTs >= a.ts + a.dur) continue;
      p.kind = byName(a.name);
      break;
    }
  }
}

function settleKinds(trace: CollectedTrace, pending: { step: Step; kind: StepKind | undefined }[]): void {
  const items = pending.map((p) => ({
    kind: p.kind,
    firstTs: p.step.kernels.length ? trace.kernels.ts[p.step.kernels[0]] : 0,
    kernels: p.step.kernels.length,
    busyUs: p.step.kernels.reduce((acc, k) => acc + trace.kernels.dur[k], 0),
  }));
  settleStepKinds(items, trace.annotations.filter(isKindAnnotation));
  pending.forEach((p, i) => (p.step.kind = items[i].kind!));
}

/** The kinds of steps cut by structure (module forwards, repeats), by their shape (BY_SHAPE). */
function settleKindsByShape(trace: CollectedTrace, steps: Step[]): void {
  const sizes = steps.map((s) => ({ kernels: s.kernels.length, busyUs: s.kernels.reduce((acc, k) => acc + trace.kernels.dur[k], 0) }));
  const typical = BY_SHAPE.typical(sizes);
  steps.forEach((s, i) => (s.kind = BY_SHAPE.kindOf(sizes[i], typical)));
}

/** Kernels that pick the next token: once per forward pass (greedy argmax, sampling from probabilities). */
const SAMPLING = /ArgMax|argmax|sampl|multinomial/;

/** Steps cut where the kernel sequence repeats: what a forward pass looks like when nothing names it. */
export interface RepeatingSteps {
  steps: Step[];
  /** Kernels per repeat. */
  period: number;
  /** Share of kernels equal to the kernel one period later: 1 for a loop of identical passes. */
  periodicity: number;
  /** Name id of the kernel each pass starts at. */
  anchor: number;
}

/**
 * Finds the forward pass in a trace with no step names: the kernel sequence repeats once per pass.
 * Kernels launched once per pass recur at a fixed distance (the pass length in kernels); kernels
 * launched once per layer recur at a shorter one. The longest distance at which some kernel keeps
 * recurring across the trace is the pass; each pass starts at the earliest such kernel.
 */
export function findRepeatingSteps(
  nameOf: (o: number) => number,
  durOf: (o: number) => number,
  n: number,
  nameText: (id: number) => string = () => '',
): RepeatingSteps | undefined {
  if (n < 8) return undefined;
  const lastAt = new Map<number, number>();
  const firstAt = new Map<number, number>();
  const gaps = new Map<number, Map<number, number>>();
  for (let o = 0; o < n; o++) {
    const id = nameOf(o);
    const prev = lastAt.get(id);
    if (prev === undefined) firstAt.set(id, o);
    else {
      let h = gaps.get(id);
      if (!h) gaps.set(id, (h = new Map()));
      h.set(o - prev, (h.get(o - prev) ?? 0) + 1);
    }
    lastAt.set(id, o);
  }
  // Candidate periods: the regular gap of kernels that recur at least four times and whose
  // recurrences span most of the trace (a kernel seen three times far apart is no pass).
  const candidates = new Map<number, number[]>();
  for (const [id, h] of gaps) {
    let total = 0;
    let modeGap = 0;
    let modeCount = 0;
    for (const [g, c] of h) {
      total += c;
      if (c > modeCount || (c === modeCount && g > modeGap)) [modeGap, modeCount] = [g, c];
    }
    if (modeGap < 2 || total < 3 || modeCount < 0.8 * total || n / modeGap < 4 || (total + 1) * modeGap < 0.6 * n) continue;
    const list = candidates.get(modeGap) ?? [];
    list.push(id);
    candidates.set(modeGap, list);
  }
  if (!candidates.size) return undefined;
  const periodicityAt = (p: number) => {
    let same = 0;
    for (let o = 0; o + p < n; o++) if (nameOf(o) === nameOf(o + p)) same++;
    return same / Math.max(1, n - p);
  };
  // The pass is the longest candidate, unless a divisor of it repeats nearly as exactly: a kernel
  // whose variant cycles over several passes (a vectorised fill whose width follows the position)
  // makes a multiple of the pass look regular. A layer repeats clearly less exactly than the pass,
  // since the ends of each pass (embedding, LM head, sampling) differ from a layer.
  let period = Math.max(...candidates.keys());
  let periodicity = periodicityAt(period);
  const ascending = [...candidates.keys()].sort((a, b) => a - b);
  // A pass ends in sampling (once per pass, never per layer): where the longest candidate spans
  // several passes (a trace of several generate calls, each with its prefill), the shortest period
  // at which a sampling kernel recurs is the pass.
  const sampled = ascending.find((p) => candidates.get(p)!.some((id) => SAMPLING.test(nameText(id))) && periodicityAt(p) >= 0.6);
  if (sampled !== undefined) {
    period = sampled;
    periodicity = periodicityAt(sampled);
  } else {
    for (const p of ascending) {
      if (p >= period || period % p !== 0) continue;
      const at = periodicityAt(p);
      if (at >= periodicity - 0.005) {
        period = p;
        periodicity = at;
        break;
      }
    }
  }
  if (periodicity < 0.6) return undefined;
  const anchors = candidates.get(period)!;
  const anchor = anchors.reduce((a, b) => (firstAt.get(b)! < firstAt.get(a)! ? b : a));
  const steps: Step[] = [];
  let current: Step = { kind: 'decode', label: 'pass 1', kernels: [] };
  // What runs before the first pass start joins the first pass (the head of a prefill pass), unless
  // it is a pass of its own: as busy as half a pass, with no kernel that the passes also run.
  const start = firstAt.get(anchor)!;
  let preambleUs = 0;
  for (let o = 0; o < start; o++) preambleUs += durOf(o);
  let passUs = 0;
  for (let o = start; o < Math.min(n, start + period); o++) passUs += durOf(o);
  let shared = false;
  for (let o = 0; o < start && !shared; o++) shared = lastAt.get(nameOf(o))! >= start;
  const ownPreamble = !shared && preambleUs >= 0.5 * passUs;
  for (let o = 0; o < n; o++) {
    if ((nameOf(o) === anchor && o > start) || (ownPreamble && o === start && o > 0)) {
      steps.push(current);
      current = { kind: 'decode', label: `pass ${steps.length + 1}`, kernels: [] };
    }
    current.kernels.push(o);
  }
  steps.push(current);
  return steps.length >= 2 ? { steps, period, periodicity, anchor } : undefined;
}

/** How sure steps cut at a repeating pass are, by the share of kernels that repeat one pass later. */
export function repeatingConfidence(periodicity: number): StepConfidence {
  return periodicity >= 0.9 ? 'likely' : 'unsure';
}

/** What a breakdown cut at a repeating pass says of it; `witness`: what else gives the same count of steps. */
export function repeatingWarning(period: number, anchorName: string, periodicity: number, graphLaunches: number, steps: number, witness?: string): string {
  return (
    `No step annotations: steps cut where the kernel sequence repeats (a pass of ${period} kernels, each starting at ${shortKernelName(anchorName, 48)}, ` +
    `${(100 * periodicity).toFixed(0)}% of kernels repeat one pass later), the first larger pass taken as the prefill` +
    (witness ? `; as many steps as ${witness} give.` : '.') +
    (graphLaunches ? ` The ${graphLaunches} CUDA graph launches are ${(graphLaunches / steps).toFixed(1)} per step (piecewise graphs).` : '')
  );
}

/** What a breakdown cut at graph launches says of it. */
export const graphStepsWarning = (witness: string): string =>
  `No step annotations: one step per cudaGraphLaunch, as many as ${witness} give; each step runs from its input preparation, ` +
  'launched before the graph, to its sampling after it.';

export const unlaunchedWarning = (n: number): string =>
  `${n} kernels have no launch call in the trace (no matching correlation id) and were left out of the steps.`;
export const emptyStepsWarning = (n: number): string => `${n} step annotation(s) launched no GPU kernel and were skipped.`;
export const GPU_ONLY_WARNING = 'Steps come from GPU-side annotations only (no CPU annotation matched): nested annotations may cover part of a step.';

// A breakdown is kept in the run folder and read by either front end: both ways to name the annotation.
const NAME_THE_ANNOTATION = "name the server's step annotation (the inferenceBench.stepAnnotation setting, or infbench analyze --step-annotation)";

/** What a breakdown with no steps says; `firstKernels`: the streaming analysis looked for steps in that many kernels only. */
export const noStepsWarning = (firstKernels?: number): string =>
  'No step annotations, no module forwards, no CUDA graph launches, and no forward pass that repeats in the kernel sequence' +
  (firstKernels === undefined ? '' : ` of the first ${firstKernels} kernels (of a longer trace; no further kernels were kept to look for steps)`) +
  `: the steps cannot be told apart. Profile through the server (its step annotations), or ${NAME_THE_ANNOTATION}.`;

/** Kernels that pick the next token, counted over the trace: one sampling per step (or a few kernels each). */
export function samplingKernels(trace: CollectedTrace): number {
  const k = trace.kernels;
  const sampling = k.names.map((n) => SAMPLING.test(n));
  let n = 0;
  for (let i = 0; i < k.count; i++) if (sampling[k.name[i]] && !k.memory[i]) n++;
  return n;
}

/** Two counts of steps agree: within two steps, or a tenth of the larger (a profile cuts a step at each end). */
export const countsAgree = (a: number, b: number): boolean => Math.abs(a - b) <= Math.max(2, 0.1 * Math.max(a, b));

/** The number of sampling kernels per step (1 to 4) at which `sampling` kernels agree with `steps` steps, or 0. */
export function samplingPerStep(sampling: number, steps: number): number {
  for (let k = 1; k <= 4 && steps > 0; k++) if (countsAgree(sampling, k * steps)) return k;
  return 0;
}

/** What the trace says about its steps besides their names: each a count that a cut must agree with. */
export interface StepWitnesses {
  graphLaunches: number;
  /** Passes of the repeating kernel sequence, 0 where none repeats. */
  repeats: number;
  sampling: number;
  /** Steps the workload must have caused, where the caller drove it (TraceAnalysisOptions.expectedSteps). */
  expected?: { min: number; max: number; what: string };
}

/**
 * The first witness other than `self` that agrees with a cut of `count` steps, in words (no counts:
 * a streamed trace decides on its first kernels, and the words must hold for the whole), or undefined.
 */
export function confirmingWitness(count: number, w: StepWitnesses, self: 'graph' | 'repeat'): string | undefined {
  if (self !== 'graph' && w.graphLaunches && countsAgree(w.graphLaunches, count)) return 'the CUDA graph launches';
  if (self !== 'repeat' && w.repeats && countsAgree(w.repeats, count)) return 'the repeats of the kernel sequence';
  const perStep = samplingPerStep(w.sampling, count);
  if (perStep) return `the sampling kernels (${perStep} per step)`;
  if (w.expected && count >= w.expected.min && count <= w.expected.max) return `the workload driven (${w.expected.what})`;
  return undefined;
}

/**
 * The steps a decode workload the tool drove must have caused: `streams` requests at once, each
 * `outputTokens` long. All in step: one prefill and outputTokens - 1 decode steps; one after
 * another: a prefill and outputTokens - 1 decode steps each. A step either end may be cut.
 */
export function workloadSteps(streams: number, outputTokens: number): StepWitnesses['expected'] {
  if (!(streams >= 1 && outputTokens >= 2)) return undefined;
  return { min: outputTokens - 2, max: streams * outputTokens + 2, what: `${streams} stream(s) × ${outputTokens} tokens` };
}

/** Why steps cut without names were not taken: the witnesses, each with the count it gives. */
export function unidentifiedReason(w: StepWitnesses): string {
  const said: string[] = [];
  if (w.graphLaunches) said.push(`${w.graphLaunches} CUDA graph launches`);
  if (w.repeats) said.push(`a kernel sequence that repeats ${w.repeats} times`);
  said.push(`${w.sampling} sampling kernels`);
  if (w.expected) said.push(`${w.expected.min}-${w.expected.max} steps from the workload driven (${w.expected.what})`);
  return (
    `Steps could not be identified: no step names, and the trace's own counts disagree (${said.join(', ')}); ` +
    `no cut is borne out by two of them, so only totals over the capture are shown. Profile through the server (its step names), or ${NAME_THE_ANNOTATION}.`
  );
}

/** Graph capture and instantiation calls, and no graph launched: a profile of a server's start-up. */
export function captureOnlyReason(captures: number, kernels: number): string {
  return (
    `A CUDA-graph capture profile: ${captures} graph capture call(s) and no graph launch — a server's start-up (warm-up passes and graph capture), ` +
    `not serving. Its ${kernels} kernels are warm-up, not decode steps; profile while requests run.`
  );
}

/** GPU idle after a graph's last kernel that marks the next step's start: at least this long, and longer than any gap inside the replay. */
const STEP_BREAK_MIN_US = 20;

/**
 * Where the next step's head starts among kernels cut from one graph launch to the next (start
 * order): the launch call comes after the next step's input preparation, so the kernels launched
 * between are that step's head. It starts at the longest GPU gap after the graph's last kernel (the
 * host between steps: sampling read back, scheduling), when that gap is longer than any inside the
 * replay; else nothing is the next step's (returns n).
 */
export function nextStepHeadAt(n: number, ts: (i: number) => number, dur: (i: number) => number, graph: (i: number) => boolean): number {
  let first = -1;
  let last = -1;
  for (let i = 0; i < n; i++) {
    if (!graph(i)) continue;
    if (first < 0) first = i;
    last = i;
  }
  if (last < 0) return n;
  let end = ts(first) + dur(first);
  let inside = 0;
  for (let i = first + 1; i <= last; i++) {
    inside = Math.max(inside, ts(i) - end);
    end = Math.max(end, ts(i) + dur(i));
  }
  let best = n;
  let bestGap = Math.max(STEP_BREAK_MIN_US, inside);
  for (let i = last + 1; i < n; i++) {
    const gap = ts(i) - end;
    if (gap > bestGap) [best, bestGap] = [i, gap];
    end = Math.max(end, ts(i) + dur(i));
  }
  return best;
}

/** Assigns kernels to CPU ranges by their launch call's time; returns the kernels outside every range. */
function assignByLaunch(
  trace: CollectedTrace,
  order: Uint32Array,
  launches: LaunchIndex,
  ranges: Annotation[],
  steps: Step[],
): { outside: number; unlaunched: number } {
  const k = trace.kernels;
  const starts = ranges.map((a) => a.ts);
  let outside = 0;
  let unlaunched = 0;
  for (let o = 0; o < order.length; o++) {
    const ki = order[o];
    const r = launches.find(k.correlation[ki]);
    if (r < 0) {
      unlaunched++;
      outside++;
      continue;
    }
    const t = trace.runtime.ts[r];
    const s = lastAtOrBefore(starts, t);
    if (s >= 0 && t <= ranges[s].ts + ranges[s].dur) steps[s].kernels.push(ki);
    else outside++;
  }
  return { outside, unlaunched };
}

/**
 * Finds the steps of a trace, best source first: the server's step annotations (CPU ranges; the
 * graph launches and kernels inside one range belong to that step, however many graphs it
 * replays), the same names on the GPU side, the outermost module forward of a with_stack trace,
 * the kernel sequence that repeats once per forward pass, and CUDA graph launches last. `partial`:
 * the trace is the first part of a longer one, whose last pass is cut short.
 */
export function findSteps(trace: CollectedTrace, order: Uint32Array, options: TraceAnalysisOptions = {}, partial = false): StepFinding {
  const warnings: string[] = [];
  const k = trace.kernels;
  if (k.count === 0)
    return {
      source: 'none',
      steps: [],
      kernelsOutside: 0,
      warnings: ['The trace holds no GPU kernels: was the profiler started with CUDA activities, and did the server run any request while it was on?'],
    };
  const patterns: StepPattern[] = [];
  if (options.stepAnnotation)
    patterns.push({
      re: compileUserPattern('The step annotation (--step-annotation)', options.stepAnnotation),
      kindOf: byName,
      writer: 'your step annotation',
    });
  patterns.push(...BUILTIN_PATTERNS);
  const launches = new LaunchIndex(trace.runtime);

  // 1. Step annotations; kernels join the step whose range holds their launch call (CPU) or their start (GPU side).
  for (const gpu of [false, true]) {
    for (const pattern of patterns) {
      const matching = trace.annotations.filter((a) => a.gpu === gpu && !a.module && pattern.re.test(a.name));
      if (!matching.length) continue;
      const ranges = outermost(matching);
      const starts = ranges.map((a) => a.ts);
      const steps: Step[] = ranges.map((a) => ({ kind: 'decode', label: a.name, kernels: [] }));
      let outside = 0;
      let unlaunched = 0;
      if (gpu) {
        for (let o = 0; o < order.length; o++) {
          const ki = order[o];
          const s = lastAtOrBefore(starts, k.ts[ki]);
          if (s >= 0 && k.ts[ki] <= ranges[s].ts + ranges[s].dur) steps[s].kernels.push(ki);
          else outside++;
        }
      } else ({ outside, unlaunched } = assignByLaunch(trace, order, launches, ranges, steps));
      if (unlaunched) warnings.push(unlaunchedWarning(unlaunched));
      const pending: { step: Step; kind: StepKind | undefined }[] = [];
      steps.forEach((step, s) => {
        if (step.kernels.length) pending.push({ step, kind: pattern.kindOf(ranges[s].name) });
      });
      const empty = steps.length - pending.length;
      if (empty) warnings.push(emptyStepsWarning(empty));
      if (!pending.length) continue;
      settleKinds(trace, pending);
      if (gpu) warnings.push(GPU_ONLY_WARNING);
      return {
        source: gpu ? 'gpu-annotation' : 'annotation',
        annotation: pattern.re.source,
        steps: pending.map((p) => p.step),
        kernelsOutside: outside,
        warnings,
        confidence: gpu ? 'likely' : 'exact',
        writer: pattern.writer,
      };
    }
  }

  // 2. with_stack traces: each outermost module forward is one forward pass.
  const modules = trace.annotations.filter((a) => a.module);
  if (modules.length) {
    const ranges = outermost(modules);
    const steps: Step[] = ranges.map((a) => ({ kind: 'decode', label: a.name, kernels: [] }));
    const { outside } = assignByLaunch(trace, order, launches, ranges, steps);
    const found = steps.filter((s) => s.kernels.length);
    if (found.length >= 2) {
      settleKindsByShape(trace, found);
      warnings.push(
        `No step annotations: one step per outermost module forward (${ranges[0].name.replace(MODULE_FORWARD, '')}), the first larger pass taken as the prefill; sampling kernels outside the forward are left out.`,
      );
      return {
        source: 'module-forward',
        annotation: MODULE_FORWARD.source,
        steps: found,
        kernelsOutside: outside,
        warnings,
        confidence: 'likely',
        writer: MODULE_PATTERN.writer,
      };
    }
  }

  // 3. No names: graph launches, or the repeating forward pass, each taken only where another
  // witness (sampling kernels, the other of the two, the workload driven) gives the same count.
  const graphStarts: number[] = [];
  const graphCorrToStep = new Map<number, number>();
  let captures = 0;
  {
    const r = trace.runtime;
    const graphIdx: number[] = [];
    for (let i = 0; i < r.count; i++) {
      if (r.kind[i] === RuntimeKind.GraphLaunch) graphIdx.push(i);
      else if (r.kind[i] === RuntimeKind.Capture) captures++;
    }
    graphIdx.sort((a, b) => r.ts[a] - r.ts[b]);
    graphIdx.forEach((gi, s) => {
      graphStarts.push(r.ts[gi]);
      graphCorrToStep.set(r.correlation[gi], s);
    });
  }
  if (captures && !graphStarts.length) {
    const noSteps = captureOnlyReason(captures, k.count);
    warnings.push(noSteps);
    return { source: 'none', steps: [], kernelsOutside: k.count, warnings, confidence: 'unsure', noSteps };
  }
  const repeats = findRepeatingSteps(
    (o) => k.name[order[o]],
    (o) => k.dur[order[o]],
    order.length,
    (id) => k.names[id],
  );
  const witnesses: StepWitnesses = {
    graphLaunches: graphStarts.length,
    repeats: repeats?.steps.length ?? 0,
    sampling: samplingKernels(trace),
    // The workload's count holds for a whole capture, not for the first kernels of one.
    expected: partial ? undefined : options.expectedSteps,
  };
  const graphWitness = graphStarts.length ? confirmingWitness(graphStarts.length, witnesses, 'graph') : undefined;
  const repeatWitness = repeats && !graphWitness ? confirmingWitness(repeats.steps.length, witnesses, 'repeat') : undefined;
  if (repeats && repeatWitness) {
    // From positions in start order to kernel indices, in place: a second array per step would be a copy of every kernel.
    const steps = repeats.steps;
    for (const step of steps) for (let i = 0; i < step.kernels.length; i++) step.kernels[i] = order[step.kernels[i]];
    settleKindsByShape(trace, steps);
    warnings.push(repeatingWarning(repeats.period, k.names[repeats.anchor], repeats.periodicity, graphStarts.length, steps.length, repeatWitness));
    return {
      source: 'repeating-pattern',
      steps,
      kernelsOutside: 0,
      warnings,
      confidence: repeatingConfidence(repeats.periodicity),
      repeats,
      witness: repeatWitness,
    };
  }

  // 4. CUDA graphs: each cudaGraphLaunch starts a step; its replayed kernels carry its correlation id.
  if (graphStarts.length && graphWitness) {
    const steps: Step[] = graphStarts.map((_, s) => ({ kind: 'decode', label: `cudaGraphLaunch #${s + 1}`, kernels: [] }));
    let outside = 0;
    // Kernels launched before the first graph launch: the capture's earlier work, and the first step's input copies.
    const before: number[] = [];
    for (let o = 0; o < order.length; o++) {
      const ki = order[o];
      const corr = k.correlation[ki];
      let s = graphCorrToStep.get(corr);
      if (s === undefined) {
        // An eager kernel (sampling, input copies) joins the graph launch before it.
        const r = launches.find(corr);
        s = r >= 0 ? lastAtOrBefore(graphStarts, trace.runtime.ts[r]) : -1;
        if (r >= 0 && s < 0) before.push(ki);
      }
      if (s >= 0) steps[s].kernels.push(ki);
      else outside++;
    }
    // The kernels launched after a step's graph that prepare the next step belong to the next one.
    const isGraph = (ki: number) => graphCorrToStep.has(k.correlation[ki]);
    // The last step has no next one: whatever follows its graph is its own.
    let secondHead = 0;
    steps.slice(0, -1).forEach((step, s) => {
      const ks = step.kernels;
      const head = nextStepHeadAt(
        ks.length,
        (i) => k.ts[ks[i]],
        (i) => k.dur[ks[i]],
        (i) => isGraph(ks[i]),
      );
      if (s === 0) secondHead = ks.length - head;
      if (head === ks.length) return;
      steps[s + 1].kernels.unshift(...ks.splice(head));
    });
    // The first step has no step before it to take its head from: the kernels just before its graph
    // are its own input copies where they repeat the second step's head, name for name.
    const firstHead = before.slice(before.length - secondHead);
    if (secondHead && firstHead.length === secondHead && firstHead.every((ki, i) => k.name[ki] === k.name[steps[1].kernels[i]])) {
      steps[0].kernels.unshift(...firstHead);
      outside -= secondHead;
    }
    warnings.push(graphStepsWarning(graphWitness));
    const pending = steps.filter((s) => s.kernels.length).map((step) => ({ step, kind: undefined as StepKind | undefined }));
    settleKinds(trace, pending);
    return {
      source: 'cuda-graph',
      steps: pending.map((p) => p.step),
      kernelsOutside: outside,
      warnings,
      confidence: 'likely',
      repeats,
    };
  }

  if (graphStarts.length || repeats) {
    const noSteps = unidentifiedReason(witnesses);
    warnings.push(noSteps);
    return { source: 'none', steps: [], kernelsOutside: k.count, warnings, confidence: 'unsure', repeats, noSteps };
  }

  warnings.push(noStepsWarning());
  return { source: 'none', steps: [], kernelsOutside: k.count, warnings, confidence: 'unsure' };
}
