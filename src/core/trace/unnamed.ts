import { aggregateStep, foldStep, StepAggregate } from './breakdown';
import { Annotation, CollectedTrace, LaunchIndex, RuntimeKind } from './collect';
import { StepSink, newFoldedByKind, StepTrack } from './stepTrack';
import {
  BY_SHAPE,
  BY_SIZE,
  emptyStepsWarning,
  GPU_ONLY_WARNING,
  MODULE_FORWARD,
  MODULE_PATTERN,
  outermost,
  repeatingConfidence,
  repeatingWarning,
  settleStepKindsByAnnotation,
  SizeRule,
  StepConfidence,
  StepFinding,
  StepKind,
  StepPattern,
} from './steps';
import { StepSource } from './types';

// Streaming steps for a trace that names none (no step annotation on the CPU side). The analyzer
// keeps the first kernels as numbers, decides from them how the steps are cut, as steps.ts would for
// the whole trace (GPU-side step annotations, the outermost module forward of a with_stack trace,
// the kernel sequence that repeats once per forward pass, or one CUDA graph launch per step), and
// from then on cuts every later kernel into its step as it arrives, reducing each step to an
// aggregate: memory no longer grows with the file. The kinds of such steps come from their name
// where it tells, else from their size against the typical step, known only at the end; a step is
// folded before that only when its kind could not change.

/** Steps that count towards the typical step before any is folded under a kind settled by size. */
const STEPS_BEFORE_FOLDING = 64;
/** How far the typical step may yet move (a share) for a step's kind to count as settled while streaming. */
const TYPICAL_MARGIN = 0.1;
/** Steps left unfolded at most, waiting for their kind; beyond, the oldest is folded on today's typical step. */
const MAX_UNSETTLED = 1024;
/** Kernels held back to be cut in start order: how far apart in the file two kernels in start order may be (streams interleave). */
const REORDER_WINDOW = 1 << 15;

/**
 * The kinds of steps cut by structure, settled as steps.ts settles them for the whole trace, while
 * they stream. Steps are folded in the order they close, each once its kind is the same whether the
 * typical step grows or shrinks by TYPICAL_MARGIN; the rest wait for the end. Folding in order keeps
 * the sums added in the same order as the in-memory way adds them, so that the figures agree exactly.
 */
export class StreamedKinds implements StepSink {
  readonly folded = newFoldedByKind();
  private readonly waiting: StepAggregate[] = [];
  private head = 0;
  /** Sizes of the steps the rule measures (all but those a GPU annotation typed). */
  private readonly sizes: { kernels: number; busyUs: number }[] = [];
  private typical: [number, number] | undefined;
  private typicalAt = STEPS_BEFORE_FOLDING;
  /** Steps whose kind their name or a nested GPU annotation gave (graph and GPU-annotated steps only, as steps.ts does). */
  private readonly annotated = new Set<StepAggregate>();
  private ending = false;

  constructor(
    private readonly rule: SizeRule,
    private readonly kindAt?: (firstTs: number) => StepKind | undefined,
  ) {}

  closed(step: StepAggregate): void {
    // A kind the step's name gave, else one a nested GPU annotation gives.
    const kind = step.kind ?? (this.kindAt && step.kernels ? this.kindAt(step.start) : undefined);
    if (kind) {
      step.kind = kind;
      this.annotated.add(step);
    } else this.sizes.push({ kernels: step.kernels, busyUs: step.busyUs });
    this.waiting.push(step);
    this.foldReady();
  }

  isFolded(step: StepAggregate): boolean {
    return step.kind !== undefined && !this.waiting.includes(step, this.head);
  }

  /** The kind that every typical step within the margin gives, or undefined. */
  private settledKind(step: StepAggregate, typical: [number, number]): StepKind | undefined {
    const kind = this.rule.kindOf(step, typical);
    for (const lo of [1 - TYPICAL_MARGIN, 1 + TYPICAL_MARGIN]) {
      for (const hi of [1 - TYPICAL_MARGIN, 1 + TYPICAL_MARGIN]) {
        const moved: [number, number] = [this.rule.steady[0] ? typical[0] : typical[0] * lo, this.rule.steady[1] ? typical[1] : typical[1] * hi];
        if (this.rule.kindOf(step, moved) !== kind) return undefined;
      }
    }
    return kind;
  }

  private foldReady(): void {
    if (this.ending) return;
    if (this.sizes.length >= this.typicalAt) {
      this.typical = this.rule.typical(this.sizes);
      this.typicalAt = 2 * this.sizes.length;
    }
    while (this.head < this.waiting.length) {
      const step = this.waiting[this.head];
      let kind = this.annotated.has(step) ? step.kind : undefined;
      if (!kind && this.typical) {
        kind = this.settledKind(step, this.typical);
        if (!kind && this.waiting.length - this.head > MAX_UNSETTLED) kind = this.rule.kindOf(step, this.typical);
      }
      if (!kind) break;
      step.kind = kind;
      foldStep(this.folded[kind], step);
      this.head++;
    }
    if (this.head > 1024 && this.head > this.waiting.length >> 1) {
      this.waiting.splice(0, this.head);
      this.head = 0;
    }
  }

  /** From here on nothing is folded: the last step may be cut with the file, and is dropped unfolded. */
  end(): void {
    this.ending = true;
  }

  /**
   * Settles the kinds of the steps still waiting by the rule over every step (`all`, in time order),
   * as steps.ts does; returns how many folded steps it would have given another kind.
   */
  settle(all: readonly StepAggregate[], kindAnnotations: Annotation[]): number {
    const waiting = new Set(this.waiting.slice(this.head).filter((s) => !this.annotated.has(s)));
    if (this.kindAt) {
      // GPU annotations seen since a waiting step closed still type it first.
      const candidates = [...waiting].map((s) => ({
        step: s,
        kind: undefined as StepKind | undefined,
        firstTs: s.start,
        kernels: s.kernels,
        busyUs: s.busyUs,
      }));
      settleStepKindsByAnnotation(candidates, kindAnnotations);
      for (const c of candidates) {
        if (!c.kind) continue;
        c.step.kind = c.kind;
        this.annotated.add(c.step);
        waiting.delete(c.step);
      }
    }
    const measured = all.filter((s) => !this.annotated.has(s));
    const typical = this.rule.typical(measured);
    let changed = 0;
    for (const s of measured) {
      const kind = this.rule.kindOf(s, typical);
      if (waiting.has(s)) s.kind = kind;
      else if (s.kind !== kind) changed++;
    }
    return changed;
  }
}

/**
 * The kernels of one step being cut, in start order (`sorted` false once one came late): the first
 * `n` of columns reused from pass to pass, grown by doubling.
 */
interface OpenPass {
  n: number;
  ts: Float64Array;
  dur: Float64Array;
  name: Int32Array;
  seq: Float64Array;
  sorted: boolean;
}

function grown<T extends Float64Array | Int32Array>(a: T, make: (n: number) => T): T {
  const b = make(2 * a.length);
  b.set(a);
  return b;
}

/**
 * Kernels held back so that they leave in start order (equal starts in the order they came): streams
 * interleave in the file. Holds `size` kernels; each one more lets the earliest go to `out`.
 */
export class StartOrderWindow {
  private readonly ts: Float64Array;
  private readonly dur: Float64Array;
  private readonly name: Int32Array;
  private readonly seq: Float64Array;
  private head = 0;
  private tail = 0;

  constructor(
    private readonly size: number,
    private readonly out: (ts: number, dur: number, name: number, seq: number) => void,
  ) {
    const capacity = 2 * size + 16;
    this.ts = new Float64Array(capacity);
    this.dur = new Float64Array(capacity);
    this.name = new Int32Array(capacity);
    this.seq = new Float64Array(capacity);
  }

  push(ts: number, dur: number, name: number, seq: number): void {
    this.hold(ts, dur, name, seq);
    if (this.tail - this.head > this.size) this.release();
  }

  /** Lets every kernel held go, in start order. */
  flush(): void {
    while (this.head < this.tail) this.release();
  }

  /** Into the window, kept sorted by start, then by place in the file. */
  private hold(ts: number, dur: number, name: number, seq: number): void {
    if (this.tail === this.ts.length) {
      const n = this.tail - this.head;
      this.ts.copyWithin(0, this.head, this.tail);
      this.dur.copyWithin(0, this.head, this.tail);
      this.name.copyWithin(0, this.head, this.tail);
      this.seq.copyWithin(0, this.head, this.tail);
      this.head = 0;
      this.tail = n;
    }
    let at = this.tail;
    if (at > this.head && this.ts[at - 1] > ts) {
      // Out of order: after the last kernel that starts no later.
      let lo = this.head;
      let hi = this.tail;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (this.ts[mid] <= ts) lo = mid + 1;
        else hi = mid;
      }
      at = lo;
      this.ts.copyWithin(at + 1, at, this.tail);
      this.dur.copyWithin(at + 1, at, this.tail);
      this.name.copyWithin(at + 1, at, this.tail);
      this.seq.copyWithin(at + 1, at, this.tail);
    }
    this.ts[at] = ts;
    this.dur[at] = dur;
    this.name[at] = name;
    this.seq[at] = seq;
    this.tail++;
  }

  private release(): void {
    const i = this.head++;
    this.out(this.ts[i], this.dur[i], this.name[i], this.seq[i]);
  }
}

/**
 * Cuts kernels into forward passes as they stream: in start order (kernels are held back in a
 * window sorted by start, since streams interleave in the file), every kernel named as the anchor
 * starts a new pass, as findRepeatingSteps cuts the whole trace after its first pass. Counts, as it
 * goes, the kernels equal to the kernel one pass earlier (the periodicity findRepeatingSteps reports).
 */
export class RepeatCutter {
  readonly steps: StepAggregate[] = [];
  /** Kernels that started before the pass being cut when they came, too late for their own pass: left out. */
  late = 0;
  private readonly window: StartOrderWindow;
  private lastTs = -Infinity;
  private passStart = -Infinity;
  private readonly pass: OpenPass = {
    n: 0,
    ts: new Float64Array(256),
    dur: new Float64Array(256),
    name: new Int32Array(256),
    seq: new Float64Array(256),
    sorted: true,
  };
  private readonly ring: Int32Array;
  private cut = 0;
  private same = 0;

  constructor(
    readonly anchor: number,
    readonly period: number,
    private readonly category: readonly string[],
    private readonly sink: StepSink,
    window: number,
  ) {
    this.window = new StartOrderWindow(window, (ts, dur, name, seq) => this.take(ts, dur, name, seq, name === this.anchor));
    this.ring = new Int32Array(period);
  }

  /** Share of kernels (in start order) equal to the kernel one pass earlier, over the whole trace. */
  get periodicity(): number {
    return this.same / Math.max(1, this.cut - this.period);
  }

  /** A kernel already in start order and past the window: the pass it belongs to is the open one, or a new one if it is the anchor. */
  take(ts: number, dur: number, name: number, seq: number, newPass: boolean): void {
    const o = this.cut++;
    const at = o % this.period;
    if (o >= this.period && this.ring[at] === name) this.same++;
    this.ring[at] = name;
    if (newPass) {
      this.closePass();
      this.passStart = ts;
    } else if (this.pass.n === 0) this.passStart = ts;
    this.addToPass(ts, dur, name, seq);
    this.lastTs = ts;
  }

  /** A kernel as it arrives; `seq` is its place among the file's kernels (the tie-break of equal starts). */
  push(ts: number, dur: number, name: number, seq: number): void {
    if (ts < this.lastTs) {
      // Later in the file than the window reaches: into the open pass if it starts inside it.
      if (ts < this.passStart) {
        this.late++;
        return;
      }
      this.addToPass(ts, dur, name, seq);
      this.pass.sorted = false;
      return;
    }
    this.window.push(ts, dur, name, seq);
  }

  private addToPass(ts: number, dur: number, name: number, seq: number): void {
    const p = this.pass;
    if (p.n === p.ts.length) {
      p.ts = grown(p.ts, (n) => new Float64Array(n));
      p.dur = grown(p.dur, (n) => new Float64Array(n));
      p.name = grown(p.name, (n) => new Int32Array(n));
      p.seq = grown(p.seq, (n) => new Float64Array(n));
    }
    p.ts[p.n] = ts;
    p.dur[p.n] = dur;
    p.name[p.n] = name;
    p.seq[p.n] = seq;
    p.n++;
  }

  private closePass(): void {
    const p = this.pass;
    const n = p.n;
    if (!n) return;
    const order = p.sorted ? undefined : Array.from({ length: n }, (_, i) => i).sort((x, y) => p.ts[x] - p.ts[y] || p.seq[x] - p.seq[y]);
    const step = aggregateStep(`pass ${this.steps.length + 1}`, undefined, n, p, order, this.category);
    p.n = 0;
    p.sorted = true;
    this.steps.push(step);
    this.sink.closed(step);
  }

  /** Cuts what the window still holds and closes the last pass. */
  finish(): StepAggregate[] {
    this.window.flush();
    this.closePass();
    return this.steps;
  }
}

/**
 * Steps from GPU-side step annotations (gpu_user_annotation ranges on the GPU timeline): each kernel
 * joins the range holding its start, as steps.ts assigns them, in start order through a window.
 * Ranges must be known before the kernels they hold leave the window; one that comes later makes
 * the cut `stale` (the analyzer then reads the file again with every range known from the start).
 */
export class GpuRangeCut {
  readonly track: StepTrack;
  private readonly window: StartOrderWindow;
  /** Start of the last kernel that left the window. */
  private lastTs = -Infinity;
  stale = false;

  constructor(
    readonly pattern: StepPattern,
    category: readonly string[],
    sink: StepSink,
    window: number,
  ) {
    this.track = new StepTrack(category, sink);
    this.window = new StartOrderWindow(window, (ts, dur, name) => this.route(ts, dur, name));
  }

  /** Kernels it has put in a step, or found too late for theirs. */
  get taken(): number {
    return this.track.routed + this.track.late;
  }

  /** A step range, in GPU time. */
  range(name: string, ts: number, end: number): void {
    if (ts <= this.lastTs) this.stale = true;
    this.track.addRange(name, this.pattern.kindOf(name), ts, end);
  }

  kernel(ts: number, dur: number, name: number): void {
    // Later in the file than the window reaches: straight to its step, if that is still open.
    if (ts < this.lastTs) this.track.add(this.track.find(ts), ts, dur, name);
    else this.window.push(ts, dur, name, 0);
  }

  private route(ts: number, dur: number, name: number): void {
    this.lastTs = ts;
    this.track.add(this.track.find(ts), ts, dur, name);
  }

  flush(): void {
    this.window.flush();
  }
}

/** What the streamed cut gives the rank's parts at the end. */
export interface UnnamedResult {
  source: StepSource;
  annotation?: string;
  stepWriter?: string;
  confidence?: StepConfidence;
  /** In time order, kinds settled, the step cut with a cut file left out. */
  steps: StepAggregate[];
  /** Kernels in no step that the streamed cut counted (kernels with no launch call come on top). */
  outside: number;
  warnings: string[];
  dropped: boolean;
  folded: StreamedKinds['folded'];
}

/** What the analyzer knows that the cut needs: name ids and categories in its own numbering, and GPU kind annotations. */
export interface UnnamedContext {
  /** The analyzer's name id of each name id of the collected trace. */
  idOf: readonly number[];
  category: readonly string[];
  kindAt: (firstTs: number) => StepKind | undefined;
}

/** Kernels a cut holds back to put them in start order: a quarter of the prefix, at most REORDER_WINDOW. */
export const windowFor = (prefixKernels: number): number => Math.max(1, Math.min(REORDER_WINDOW, prefixKernels >> 2));

/**
 * The steps of a trace that names none on the CPU side, cut as the kernels stream, from the decision
 * steps.ts made on the kernels collected first. `byLaunch`: module forwards or graph launches,
 * kernels joining the step whose range holds their launch call; `cutter`: the repeating pass,
 * kernels cut in start order; `byGpu`: GPU-side step annotations, kernels joining the range that
 * holds their start.
 */
export class UnnamedSteps {
  byLaunch?: StepTrack;
  cutter?: RepeatCutter;
  byGpu?: GpuRangeCut;
  readonly wantsModules: boolean;
  private readonly kinds: StreamedKinds;
  private anchorName = '';

  private constructor(
    readonly source: 'module-forward' | 'repeating-pattern' | 'cuda-graph' | 'gpu-annotation',
    private readonly finding: StepFinding | undefined,
    ctx: UnnamedContext,
  ) {
    const bySize = source === 'cuda-graph' || source === 'gpu-annotation';
    this.kinds = new StreamedKinds(bySize ? BY_SIZE : BY_SHAPE, bySize ? ctx.kindAt : undefined);
    this.wantsModules = source === 'module-forward';
  }

  /**
   * The streamed cut for the source steps.ts found on the collected kernels, or undefined where it
   * has none (named steps that have not routed a kernel yet, no steps): those keep being collected.
   * For GPU-side annotations, the pattern that named them (the analyzer's).
   */
  static from(finding: StepFinding, ctx: UnnamedContext, trace: CollectedTrace, order: Uint32Array, gpuPattern?: StepPattern): UnnamedSteps | undefined {
    const s = finding.source;
    if (s === 'gpu-annotation') {
      if (!gpuPattern) return undefined;
      const u = UnnamedSteps.gpu(gpuPattern, ctx, windowFor(order.length));
      const ranges = outermost(trace.annotations.filter((a) => a.gpu && !a.module && gpuPattern.re.test(a.name)));
      for (const a of ranges) u.byGpu!.range(a.name, a.ts, a.ts + a.dur);
      const k = trace.kernels;
      for (let o = 0; o < order.length; o++) {
        const ki = order[o];
        u.byGpu!.kernel(k.ts[ki], k.dur[ki], ctx.idOf[k.name[ki]]);
      }
      return u;
    }
    if (s !== 'module-forward' && s !== 'repeating-pattern' && s !== 'cuda-graph') return undefined;
    const u = new UnnamedSteps(s, finding, ctx);
    u.cutCollected(ctx, trace, order);
    return u;
  }

  /** Steps from GPU-side annotations of `pattern`, whose ranges the caller gives (range()) before or as their kernels come. */
  static gpu(pattern: StepPattern, ctx: UnnamedContext, window: number): UnnamedSteps {
    const u = new UnnamedSteps('gpu-annotation', undefined, ctx);
    u.byGpu = new GpuRangeCut(pattern, ctx.category, u.kinds, window);
    return u;
  }

  private cutCollected(ctx: UnnamedContext, trace: CollectedTrace, order: Uint32Array): void {
    const finding = this.finding!;
    const k = trace.kernels;
    const { idOf } = ctx;
    if (this.source === 'repeating-pattern') {
      const repeats = finding.repeats!;
      const n = order.length;
      const window = windowFor(n);
      this.cutter = new RepeatCutter(idOf[repeats.anchor], repeats.period, ctx.category, this.kinds, window);
      this.anchorName = k.names[repeats.anchor];
      // Passes are runs of positions in start order; up to `split` they are cut as steps.ts cut
      // them (the first pass may start before the first anchor), from there as the stream is.
      let first = 0;
      while (first < n && k.name[order[first]] !== repeats.anchor) first++;
      const split = Math.min(n, Math.max(first + 1, n - window));
      let o = 0;
      for (const step of repeats.steps) {
        for (let i = 0; i < step.kernels.length && o < split; i++, o++) {
          const ki = step.kernels[i];
          this.cutter.take(k.ts[ki], k.dur[ki], idOf[k.name[ki]], ki, i === 0 && o > 0);
        }
      }
      for (; o < n; o++) {
        const ki = order[o];
        this.cutter.push(k.ts[ki], k.dur[ki], idOf[k.name[ki]], ki);
      }
      return;
    }
    // Module forwards or graph launches: the ranges seen so far, and the collected kernels routed
    // into them by their launch call, in start order as steps.ts assigns them. Kernels whose launch
    // call has not come yet are the analyzer's to route when it comes.
    const track = new StepTrack(ctx.category, this.kinds, this.source === 'cuda-graph');
    this.byLaunch = track;
    if (this.source === 'module-forward') {
      for (const a of outermost(trace.annotations.filter((x) => x.module))) track.addRange(a.name, undefined, a.ts, a.ts + a.dur);
    } else {
      const r = trace.runtime;
      const graphs: number[] = [];
      for (let i = 0; i < r.count; i++) if (r.kind[i] === RuntimeKind.GraphLaunch) graphs.push(r.ts[i]);
      graphs.sort((a, b) => a - b);
      for (const ts of graphs) this.graphLaunch(ts);
    }
    const launches = new LaunchIndex(trace.runtime);
    for (let o = 0; o < order.length; o++) {
      const ki = order[o];
      const row = launches.find(k.correlation[ki]);
      if (row >= 0) this.launched(trace.runtime.ts[row], k.ts[ki], k.dur[ki], idOf[k.name[ki]], trace.runtime.kind[row] === RuntimeKind.GraphLaunch);
    }
  }

  /** Every kernel, as it arrives; `seq` is its place among the file's kernels. */
  kernel(ts: number, dur: number, name: number, seq: number): void {
    this.cutter?.push(ts, dur, name, seq);
    this.byGpu?.kernel(ts, dur, name);
  }

  /** A kernel whose launch call is known, at the launch call's CPU time; `graph`: replayed by a graph launch. */
  launched(launchTs: number, ts: number, dur: number, name: number, graph = false): void {
    const t = this.byLaunch;
    if (t) t.add(t.find(launchTs), ts, dur, name, graph);
  }

  graphLaunch(ts: number): void {
    if (this.source === 'cuda-graph') this.byLaunch!.addStart(`cudaGraphLaunch #${this.byLaunch!.steps.length + 1}`, ts);
  }

  module(name: string, ts: number, end: number): void {
    if (MODULE_FORWARD.test(name)) this.byLaunch?.addRange(name, undefined, ts, end);
  }

  /**
   * `leadWarnings`: for GPU-side annotations, what steps.ts says before it comes to them (CPU
   * annotations and earlier patterns that took no kernel).
   */
  finish(opts: { truncated: boolean; graphLaunches: number; kindAnnotations: Annotation[]; leadWarnings?: string[] }): UnnamedResult {
    this.kinds.end();
    let steps: StepAggregate[];
    let outside = 0;
    let late = 0;
    let empty = 0;
    if (this.cutter) {
      steps = this.cutter.finish();
      late = this.cutter.late;
    } else if (this.byGpu) {
      const g = this.byGpu;
      g.flush();
      steps = g.track.finish(false).steps;
      empty = g.track.steps.length - steps.length;
      outside = g.track.outside;
      late = g.track.late;
    } else {
      const t = this.byLaunch!;
      steps = t.finish(false).steps;
      outside = t.outside;
      late = t.late;
    }
    steps.sort((a, b) => a.start - b.start);
    const changed = this.kinds.settle(steps, opts.kindAnnotations);
    // steps.ts's warnings, the last of which says how the steps were cut; for a repeating pass its
    // figures are the whole trace's.
    const gpu = this.byGpu;
    const warnings = gpu ? [...(opts.leadWarnings ?? []), ...(empty ? [emptyStepsWarning(empty)] : []), GPU_ONLY_WARNING] : [...this.finding!.warnings];
    let confidence = gpu ? 'likely' : this.finding!.confidence;
    if (this.cutter) {
      const periodicity = this.cutter.periodicity;
      warnings[warnings.length - 1] = repeatingWarning(
        this.cutter.period,
        this.anchorName,
        periodicity,
        opts.graphLaunches,
        steps.length,
        this.finding!.witness,
      );
      confidence = repeatingConfidence(periodicity);
    }
    if (late) warnings.push(`${late} kernels came too far out of order in the file to be cut into their step, and were left out of the steps.`);
    if (changed)
      warnings.push(
        `${changed} steps were counted as decode or prefill while the trace streamed, before its typical step was known, and would have been counted as the other kind at the end.`,
      );
    let dropped = false;
    const last = steps.at(-1);
    if (opts.truncated && last && !this.kinds.isFolded(last)) {
      steps.pop();
      dropped = true;
    }
    return {
      source: this.source,
      annotation: gpu ? gpu.pattern.re.source : this.source === 'module-forward' ? MODULE_FORWARD.source : undefined,
      stepWriter: gpu ? gpu.pattern.writer : this.source === 'module-forward' ? MODULE_PATTERN.writer : undefined,
      confidence,
      steps,
      outside: outside + late,
      warnings,
      dropped,
      folded: this.kinds.folded,
    };
  }
}
