import { CUT_STEP_WARNING, distribution, RankFileFacts, RankParts } from './breakdown';
import { compileUserPattern } from './userPattern';
import {
  Annotation,
  badTimesWarning,
  CollectedTrace,
  hasBadTime,
  ModuleForwards,
  RawNameTable,
  RuntimeKind,
  RuntimeKindCache,
  TraceCollector,
} from './collect';
import { KernelClassifier, MEMORY_CATEGORY } from './families';
import { EventCat, EventView } from './jsonReader';
import { FoldKnownKinds, StepTrack } from './stepTrack';
import {
  BUILTIN_PATTERNS,
  byName,
  emptyStepsWarning,
  findSteps,
  isKindAnnotation,
  kernelOrder,
  lastAtOrBefore,
  noStepsWarning,
  outermost,
  settleStepKinds,
  StepKind,
  StepPattern,
  unlaunchedWarning,
} from './steps';
import { Distribution, LaunchStats, TraceAnalysisOptions } from './types';
import { beforeLaunchWarning, withoutKernelsBeforeLaunch } from './sanity';
import { UnnamedSteps, windowFor } from './unnamed';

// The streaming way to a breakdown, in one pass and with memory that does not grow with the file:
// each kernel is routed to its step as it arrives (through its launch call's correlation id and
// the step annotation holding that call), and a step is reduced to an aggregate, its kernels
// dropped, once kernels of later steps arrive. Kineto writes CPU events (the step annotations)
// ahead of the GPU events and launches next to their kernels, which is what makes this work.
// Until a step annotation has taken a kernel, the same pass also collects the kernels as numbers
// (collect.ts). A trace that names no step and ends within the first `prefixKernels` kernels is cut
// into steps from that collection at the end, as steps.ts cuts it. A longer one is cut while it
// streams (unnamed.ts): at that many kernels the collection shows how its steps are cut (module
// forwards, a repeating pass, graph launches, GPU-side step annotations), and from then on kernels
// go to their step as they come, as named ones do. Where that many kernels show no steps, it looks
// in up to MAX_PREFIX_FACTOR times as many, then stops keeping kernels: the trace has no steps. A
// trace is read a second time only where its annotated kernels come out of order for streaming, or
// where GPU-side step annotations come after the kernels they hold (Kineto writes them last): the
// second reading knows them from the first kernel.

/** Kernels collected, while no step annotation has taken one, before deciding how to cut the steps (TraceAnalysisOptions.prefixKernels). */
export const PREFIX_KERNELS = 1 << 17;
/** Where the prefix shows no steps, it grows (doubling) to this many times its size, no further: then the trace has none. */
const MAX_PREFIX_FACTOR = 8;

/** Bounds on bookkeeping for launches and kernels that have not met their partner yet. */
const MAX_PENDING = 500_000;
/** A free place in CorrelationTable's hash table (correlation ids are never negative there). */
const EMPTY = -1;

/**
 * Entries keyed by correlation id, kept in typed columns with a free list: launches waiting for
 * their kernels and kernels waiting for their launch, without an object per entry. The ids are
 * found through an open-addressing hash table of typed arrays, not a Map: every launch is added and
 * removed once, and a Map that churns so rebuilds its table every few changes, garbage that lives
 * long enough to reach the old heap and makes most of the analysis's GC slack.
 */
export class CorrelationTable {
  /** Hash table: a correlation id (EMPTY where free) and its first slot. Never more than half full. */
  private keys = new Int32Array(1024).fill(EMPTY);
  private heads = new Int32Array(1024);
  private shift = 32 - 10;
  private count = 0;
  private free: number[] = [];
  private used = 0;
  a = new Float64Array(1024);
  b = new Float64Array(1024);
  c = new Int32Array(1024);
  /** The next slot with the same correlation id, or -1. */
  next = new Int32Array(1024);

  get size(): number {
    return this.count;
  }

  /** Where a correlation id is in the hash table, or the free place where it would go. */
  private place(corr: number): number {
    const mask = this.keys.length - 1;
    let i = Math.imul(corr, 0x9e3779b1) >>> this.shift;
    while (this.keys[i] !== EMPTY && this.keys[i] !== corr) i = (i + 1) & mask;
    return i;
  }

  /** First slot of a correlation id, or -1. */
  head(corr: number): number {
    if (corr < 0) return -1;
    const i = this.place(corr);
    return this.keys[i] === corr ? this.heads[i] : -1;
  }

  /** Adds an entry (in front of any others with the same id; ids are never negative); returns its slot. */
  add(corr: number, a: number, b: number, c: number): number {
    let slot = this.free.pop();
    if (slot === undefined) {
      slot = this.used++;
      if (slot >= this.a.length) this.grow();
    }
    this.a[slot] = a;
    this.b[slot] = b;
    this.c[slot] = c;
    const i = this.place(corr);
    if (this.keys[i] === corr) this.next[slot] = this.heads[i];
    else {
      this.next[slot] = -1;
      this.keys[i] = corr;
      if (++this.count > this.keys.length >> 1) {
        this.heads[i] = slot;
        this.rehash();
        return slot;
      }
    }
    this.heads[i] = slot;
    return slot;
  }

  /** Calls `fn` with every slot in use. */
  forEach(fn: (slot: number) => void): void {
    for (let i = 0; i < this.keys.length; i++) {
      if (this.keys[i] === EMPTY) continue;
      for (let s = this.heads[i]; s >= 0; s = this.next[s]) fn(s);
    }
  }

  /** Removes every entry of a correlation id. */
  remove(corr: number): void {
    if (corr < 0) return;
    let i = this.place(corr);
    if (this.keys[i] !== corr) return;
    for (let s = this.heads[i]; s >= 0; s = this.next[s]) this.free.push(s);
    this.count--;
    // Linear probing: ids placed after this one in its run move back, so that no search stops early.
    const keys = this.keys;
    const mask = keys.length - 1;
    keys[i] = EMPTY;
    for (let j = (i + 1) & mask; keys[j] !== EMPTY; j = (j + 1) & mask) {
      const home = Math.imul(keys[j], 0x9e3779b1) >>> this.shift;
      // Stays unless its home is cyclically outside (i, j].
      const stays = i < j ? home > i && home <= j : home > i || home <= j;
      if (stays) continue;
      keys[i] = keys[j];
      this.heads[i] = this.heads[j];
      keys[j] = EMPTY;
      i = j;
    }
  }

  /** Drops the oldest ids until `keep` remain; Kineto numbers launches in order, so the lowest ids are the oldest. */
  trim(keep: number): void {
    if (this.count <= keep) return;
    const live = this.keys.filter((k) => k !== EMPTY).sort();
    for (let i = 0; i < live.length - keep; i++) this.remove(live[i]);
  }

  private rehash(): void {
    const keys = this.keys;
    const heads = this.heads;
    this.keys = new Int32Array(keys.length * 2).fill(EMPTY);
    this.heads = new Int32Array(keys.length * 2);
    this.shift--;
    for (let i = 0; i < keys.length; i++) {
      if (keys[i] === EMPTY) continue;
      const at = this.place(keys[i]);
      this.keys[at] = keys[i];
      this.heads[at] = heads[i];
    }
  }

  private grow(): void {
    const n = this.a.length * 2;
    const grow64 = (x: Float64Array) => {
      const y = new Float64Array(n);
      y.set(x);
      return y;
    };
    const grow32 = (x: Int32Array) => {
      const y = new Int32Array(n);
      y.set(x);
      return y;
    };
    this.a = grow64(this.a);
    this.b = grow64(this.b);
    this.c = grow32(this.c);
    this.next = grow32(this.next);
  }
}

/** Exact statistics up to `capacity` values, a uniform sample beyond (seeded, so runs repeat). */
class Sampler {
  /** The first `kept` hold the sample: a typed array, grown by doubling up to the capacity. */
  private values = new Float64Array(1024);
  private kept = 0;
  private seen = 0;
  private sum = 0;
  private min = Infinity;
  private max = -Infinity;
  private seed = 12345;
  constructor(private readonly capacity = 1 << 17) {}
  add(v: number): void {
    this.seen++;
    this.sum += v;
    if (v < this.min) this.min = v;
    if (v > this.max) this.max = v;
    if (this.kept < this.capacity) {
      if (this.kept === this.values.length) {
        const grown = new Float64Array(Math.min(this.capacity, 2 * this.values.length));
        grown.set(this.values);
        this.values = grown;
      }
      this.values[this.kept++] = v;
    } else {
      this.seed = (this.seed * 1103515245 + 12345) >>> 0;
      const j = this.seed % this.seen;
      if (j < this.capacity) this.values[j] = v;
    }
  }
  distribution(): Distribution | null {
    const d = distribution(this.values.subarray(0, this.kept));
    if (!d || this.seen === this.kept) return d;
    return { ...d, mean: this.sum / this.seen, min: this.min, max: this.max };
  }
}

export class OnlineAnalyzer {
  private readonly classifier: KernelClassifier;
  private readonly patterns: StepPattern[];
  private readonly names: string[] = [];
  private readonly nameIds = new Map<string, number>();
  private readonly rawNames = new RawNameTable();
  private readonly addKernelName = (name: string): number => this.nameId(name, false);
  private readonly addMemoryName = (name: string): number => this.nameId(name, true);
  private readonly category: string[] = [];
  private readonly tracks: (StepTrack | undefined)[];
  /** Launch calls waiting for their kernels: a = CPU ts, c = 1 for a graph launch. */
  private readonly launches = new CorrelationTable();
  /** Kernels that came before their launch call: a = ts, b = dur, c = name id. */
  private readonly pendingKernels = new CorrelationTable();
  private pendingCount = 0;
  /** One launch call's pending kernels, newest first: reused, not an array per launch call. */
  private chain = new Int32Array(64);
  private droppedPending = 0;
  private readonly kindAnnotations: Annotation[] = [];
  private readonly kindStarts: number[] = [];
  private readonly totals = new Map<number, [number, number, number, number]>();
  private kernels = 0;
  private kernelUs = 0;
  private firstTs = Infinity;
  private lastEnd = -Infinity;
  private readonly launchCalls = new Sampler();
  private readonly launchToStart = new Sampler();
  /** Graph launch correlation id -> [launch call start, first replayed kernel start]. */
  private readonly graphFirstKernel = new Map<number, [number, number]>();
  private launchCount = 0;
  private graphLaunches = 0;
  private syncUs = 0;
  private runtimeSeen = 0;
  private readonly runtimeKinds = new RuntimeKindCache();
  private readonly moduleForwards = new ModuleForwards();
  /** Every kernel as numbers, until a step annotation takes one or the steps are cut while streaming: the steps of an unnamed trace are found from it. */
  private collector: TraceCollector | undefined = new TraceCollector();
  private readonly prefixKernels: number;
  /** The collected kernels at which to decide how an unnamed trace's steps are cut (doubled while nothing can be decided). */
  private decideAt: number;
  /** The steps of a trace that names none, cut while streaming once decided. */
  private unnamed: UnnamedSteps | undefined;
  /** GPU-side step annotations of each pattern, as they came (for a second reading that knows them all from the start). */
  private readonly gpuRanges: Annotation[][];
  /** Steps cut by each pattern's GPU-side annotations: the one the prefix chose, or, read a second time, every pattern's. */
  private readonly gpuSteps: (UnnamedSteps | undefined)[];
  /** The defined ones of gpuSteps, for each kernel. */
  private readonly liveGpu: UnnamedSteps[] = [];
  /** The pattern whose GPU-side annotations the prefix chose. */
  private gpuChosen = -1;
  /** Every GPU-side annotation was given before reading (the second reading): those in the file are skipped. */
  private readonly gpuPreset: boolean;
  /** The prefix grew to its cap with no steps in it: nothing more is collected, and the trace has none. */
  private noSteps: { kernels: number; reason?: string } | undefined;
  private readonly graphCorrs: number[] = [];
  /** Events whose ts or dur was not a finite, non-negative number: left out, and counted. */
  private badTimes = 0;
  /** Kernels that start before their launch call: left out, and counted. */
  private beforeLaunch = 0;
  /** Those of them that came before their launch call in the file too (in `kernels`, taken out at the end). */
  private pendingBeforeLaunch = 0;

  /**
   * `gpuAnnotations`: every GPU-side annotation of the trace, from a first reading (the `reread`
   * that finish() asked for): GPU-side steps are then cut by every pattern from the first kernel.
   */
  constructor(
    private readonly options: TraceAnalysisOptions = {},
    gpuAnnotations?: readonly Annotation[],
  ) {
    this.prefixKernels = Math.max(1, options.prefixKernels ?? PREFIX_KERNELS);
    this.decideAt = this.prefixKernels;
    this.classifier = new KernelClassifier(options.extraFamilies);
    this.patterns = [
      ...(options.stepAnnotation
        ? [{ re: compileUserPattern('The step annotation (--step-annotation)', options.stepAnnotation), kindOf: byName, writer: 'your step annotation' }]
        : []),
      ...BUILTIN_PATTERNS,
    ];
    this.tracks = this.patterns.map(() => undefined);
    this.gpuRanges = this.patterns.map(() => []);
    this.gpuSteps = this.patterns.map(() => undefined);
    this.gpuPreset = gpuAnnotations !== undefined;
    if (!gpuAnnotations) return;
    // In start order, so that the kind annotations go in at the end of their sorted list.
    for (const a of [...gpuAnnotations].sort((x, y) => x.ts - y.ts)) this.gpuAnnotation(a);
    const ctx = { idOf: [], category: this.category, kindAt: this.kindAt };
    this.patterns.forEach((p, i) => {
      if (!this.gpuRanges[i].length) return;
      const u = UnnamedSteps.gpu(p, ctx, windowFor(this.prefixKernels));
      for (const a of outermost(this.gpuRanges[i])) u.byGpu!.range(a.name, a.ts, a.ts + a.dur);
      this.gpuSteps[i] = u;
      this.liveGpu.push(u);
    });
  }

  /** Kernels kept as numbers to decide the steps from (none once decided, or once the trace showed it has none). */
  get keptKernels(): number {
    return this.collector?.kernelCount ?? 0;
  }

  private nameId(name: string, memory: boolean): number {
    let id = this.nameIds.get(name);
    if (id === undefined) {
      id = this.names.length;
      this.names.push(name);
      this.nameIds.set(name, id);
      this.category.push(memory ? MEMORY_CATEGORY : this.classifier.classify(name));
    }
    return id;
  }

  readonly onEvent = (e: EventView): void => {
    this.collector?.onEvent(e);
    const cat = e.cat;
    if (cat === EventCat.CpuOp || e.ph !== 0x58) return;
    if (hasBadTime(e)) {
      this.badTimes++;
      return;
    }
    if (cat === EventCat.Kernel || cat === EventCat.GpuMemcpy || cat === EventCat.GpuMemset) this.kernel(e, cat !== EventCat.Kernel);
    else if (cat === EventCat.CudaRuntime || cat === EventCat.CudaDriver) this.runtime(e);
    else if (cat === EventCat.UserAnnotation || cat === EventCat.GpuUserAnnotation) this.annotation(e, cat === EventCat.GpuUserAnnotation);
    else if (cat === EventCat.PythonFunction && this.unnamed?.wantsModules) {
      const name = this.moduleForwards.nameOf(e);
      if (name !== undefined) this.unnamed.module(name, e.ts, e.ts + (Number.isNaN(e.dur) ? 0 : e.dur));
    }
  };

  private kernel(e: EventView, memory: boolean): void {
    const ts = e.ts;
    const corr = e.correlation;
    const slot = this.launches.head(corr);
    if (slot >= 0 && ts < this.launches.a[slot]) {
      // A kernel cannot start before its launch call: a damaged time or correlation id.
      this.beforeLaunch++;
      return;
    }
    const id = this.rawNames.idOf(e, memory ? this.addMemoryName : this.addKernelName);
    const dur = Number.isNaN(e.dur) ? 0 : e.dur;
    this.kernels++;
    this.count(dur, id);
    this.unnamed?.kernel(ts, dur, id, this.kernels - 1);
    for (const g of this.liveGpu) g.kernel(ts, dur, id, 0);
    if (slot >= 0) {
      this.span(ts, dur);
      const launchTs = this.launches.a[slot];
      const byGraph = this.launches.c[slot] === 1;
      if (!byGraph) {
        this.launches.remove(corr);
        if (!memory) this.launchToStart.add(ts - launchTs);
      }
      if (byGraph) this.graphKernel(corr, launchTs, ts);
      this.route(launchTs, ts, dur, id, byGraph);
    } else if (corr >= 0 && this.pendingCount < MAX_PENDING) {
      // The launch call comes later in the file: keep the kernel until it does (in the GPU span
      // then, or at the end if it never comes; one that starts before its launch is taken out).
      this.pendingKernels.add(corr, ts, dur, id);
      this.pendingCount++;
    } else {
      this.span(ts, dur);
      this.droppedPending++;
    }
    if (this.collector && this.collector.kernelCount >= this.decideAt) this.decide();
  }

  /** A kernel into the whole trace's sums (kernelTotals, kernel time), in file order as the in-memory way adds them. */
  private count(dur: number, id: number): void {
    this.kernelUs += dur;
    const t = this.totals.get(id);
    if (!t) this.totals.set(id, [1, dur, dur, dur]);
    else {
      t[0]++;
      t[1] += dur;
      if (dur < t[2]) t[2] = dur;
      if (dur > t[3]) t[3] = dur;
    }
  }

  /** Takes a kernel counted on arrival out of the sums again (it started before its launch call). */
  private uncount(dur: number, id: number): void {
    this.kernelUs -= dur;
    const t = this.totals.get(id)!;
    if (--t[0] === 0) this.totals.delete(id);
    else t[1] -= dur;
  }

  /** A kernel into the trace's GPU span. */
  private span(ts: number, dur: number): void {
    if (ts < this.firstTs) this.firstTs = ts;
    if (ts + dur > this.lastEnd) this.lastEnd = ts + dur;
  }

  /**
   * A long trace that no step annotation has cut yet: decide from the kernels collected how its steps
   * are cut, as steps.ts would, and from here on cut them as they stream. Where the collection shows
   * no such way (no steps yet), it goes on collecting and asks again at twice as many kernels, up
   * to MAX_PREFIX_FACTOR times the prefix, where it stops: the trace has no steps. It also asks
   * again, once, for graph launches while no pass repeats yet (too few passes collected to tell,
   * which decides how sure the graph steps are).
   */
  private decide(): void {
    if (this.gpuSteps.some((g) => g && g.byGpu!.taken > 0)) {
      // Read a second time, GPU-side steps known: they take the kernels (unless a CPU annotation does).
      this.collector = undefined;
      return;
    }
    const { trace } = withoutKernelsBeforeLaunch(this.collector!.result());
    const order = kernelOrder(trace);
    const finding = findSteps(trace, order, this.options, true);
    if (!(finding.source === 'cuda-graph' && !finding.repeats && this.decideAt === this.prefixKernels)) {
      const idOf = trace.kernels.names.map((n) => this.nameIds.get(n)!);
      const ctx = { idOf, category: this.category, kindAt: this.kindAt };
      if (finding.source === 'gpu-annotation' && !this.gpuPreset) {
        // The first pattern of steps.ts's list with this source is the one it took.
        const i = this.patterns.findIndex((p) => p.re.source === finding.annotation);
        const u = UnnamedSteps.from(finding, ctx, trace, order, this.patterns[i]);
        this.gpuSteps[i] = u;
        this.gpuChosen = i;
        if (u) {
          this.liveGpu.push(u);
          this.collector = undefined;
          return;
        }
      } else this.unnamed = UnnamedSteps.from(finding, ctx, trace, order);
    }
    if (this.unnamed) this.collector = undefined;
    else if (finding.source === 'none' && this.decideAt >= MAX_PREFIX_FACTOR * this.prefixKernels) {
      this.noSteps = { kernels: this.decideAt, reason: finding.noSteps };
      this.collector = undefined;
    } else this.decideAt *= 2;
  }

  private runtime(e: EventView): void {
    const kind = this.runtimeKinds.kindOfEvent(e);
    if (kind === undefined) return;
    this.runtimeSeen++;
    const dur = Number.isNaN(e.dur) ? 0 : e.dur;
    if (kind === RuntimeKind.Sync) {
      this.syncUs += dur;
      return;
    }
    if (kind === RuntimeKind.Capture) return;
    const graph = kind === RuntimeKind.GraphLaunch;
    if (kind !== RuntimeKind.Copy) {
      this.launchCount++;
      this.launchCalls.add(dur);
    }
    const corr = e.correlation;
    if (graph) {
      this.graphLaunches++;
      this.unnamed?.graphLaunch(e.ts);
      // Replayed kernels of old launches have long arrived: forget them.
      this.graphCorrs.push(corr);
      if (this.graphCorrs.length > 256) this.launches.remove(this.graphCorrs.shift()!);
    }
    if (corr < 0) return;
    const first = this.pendingKernels.head(corr);
    if (first >= 0) {
      // Kernels that arrived first, oldest last in the chain: route them in arrival order.
      let waiting = 0;
      for (let s = first; s >= 0; s = this.pendingKernels.next[s]) {
        if (waiting === this.chain.length) {
          const grown = new Int32Array(2 * waiting);
          grown.set(this.chain);
          this.chain = grown;
        }
        this.chain[waiting++] = s;
      }
      for (let i = waiting - 1; i >= 0; i--) {
        const s = this.chain[i];
        const ts = this.pendingKernels.a[s];
        const id = this.pendingKernels.c[s];
        if (ts < e.ts) {
          // Came before its launch call in the file and starts before it too: left out.
          this.beforeLaunch++;
          this.pendingBeforeLaunch++;
          this.uncount(this.pendingKernels.b[s], id);
          continue;
        }
        this.span(ts, this.pendingKernels.b[s]);
        if (!graph && this.category[id] !== MEMORY_CATEGORY) this.launchToStart.add(ts - e.ts);
        if (graph) this.graphKernel(corr, e.ts, ts);
        this.route(e.ts, ts, this.pendingKernels.b[s], id, graph);
      }
      this.pendingCount -= waiting;
      this.pendingKernels.remove(corr);
      if (!graph) return;
    }
    this.launches.add(corr, e.ts, 0, graph ? 1 : 0);
    // Launches whose kernels never came (outside the profiled window): drop the oldest.
    if (this.launches.size > MAX_PENDING) this.launches.trim((MAX_PENDING * 4) / 5);
  }

  private annotation(e: EventView, gpu: boolean): void {
    const name = e.name();
    const dur = Number.isNaN(e.dur) ? 0 : e.dur;
    if (gpu) {
      if (!this.gpuPreset) this.gpuAnnotation({ name, ts: e.ts, dur, gpu: true, pid: e.pid });
      return;
    }
    this.patterns.forEach((p, i) => {
      if (!p.re.test(name)) return;
      const track = (this.tracks[i] ??= new StepTrack(this.category, new FoldKnownKinds(this.kindAt)));
      track.addRange(name, p.kindOf(name), e.ts, e.ts + dur);
    });
  }

  /** A GPU-side annotation: one that names a kind, or a step range of some pattern (or both). */
  private gpuAnnotation(a: Annotation): void {
    if (isKindAnnotation(a)) {
      // kept sorted by start: they come in order, nearly always
      let at = this.kindAnnotations.length;
      while (at > 0 && this.kindStarts[at - 1] > a.ts) at--;
      this.kindAnnotations.splice(at, 0, a);
      this.kindStarts.splice(at, 0, a.ts);
    }
    this.patterns.forEach((p, i) => {
      if (!p.re.test(a.name)) return;
      this.gpuRanges[i].push(a);
      if (!this.gpuPreset) this.gpuSteps[i]?.byGpu!.range(a.name, a.ts, a.ts + a.dur);
    });
  }

  /** The kind a nested GPU annotation seen so far gives a step starting at t, if any. */
  private readonly kindAt = (t: number): StepKind | undefined => {
    // The latest-starting range that holds t is the innermost; a range ending exactly at t is the step before.
    for (let i = lastAtOrBefore(this.kindStarts, t), seen = 0; i >= 0 && seen < 8; i--, seen++) {
      const a = this.kindAnnotations[i];
      if (t < a.ts + a.dur) return byName(a.name);
    }
    return undefined;
  };

  private graphKernel(corr: number, launchTs: number, ts: number): void {
    const seen = this.graphFirstKernel.get(corr);
    if (!seen) this.graphFirstKernel.set(corr, [launchTs, ts]);
    else if (ts < seen[1]) seen[1] = ts;
  }

  private route(launchTs: number, ts: number, dur: number, id: number, graph: boolean): void {
    this.unnamed?.launched(launchTs, ts, dur, id, graph);
    // Tracks below the best one that has steps can no longer be chosen (finish() takes the first
    // annotation pattern with kernels): skip them. A graph launch inside a step range brings all
    // its replayed kernels into that step, however many graphs the step replays.
    for (const track of this.tracks) {
      if (!track) continue;
      track.add(track.find(launchTs), ts, dur, id);
      if (track.routed > 0) {
        // The server names its steps: they stream, and the collection is not needed.
        this.collector = undefined;
        break;
      }
    }
  }

  /**
   * The rank's parts; or, for a trace that names no step on the CPU side, every kernel collected
   * in this pass, for steps.ts to cut; or a reason to read the file again (annotated kernels that
   * came out of order for streaming); or the GPU-side annotations to read it again knowing (`reread`).
   */
  finish(base: RankFileFacts): RankParts | { collected: CollectedTrace } | { fallback: string } | { reread: Annotation[] } {
    // Kernels whose launch call never came count in the totals all the same.
    this.pendingKernels.forEach((s) => this.span(this.pendingKernels.a[s], this.pendingKernels.b[s]));
    if (this.kernels === 0 && this.collector) return { collected: this.collector.result() };
    const unresolved = this.pendingCount + this.droppedPending;
    let chosen: { track: StepTrack; pattern: StepPattern } | undefined;
    for (let i = 0; i < this.patterns.length && !chosen; i++) {
      const t = this.tracks[i];
      if (t && t.routed + t.late > 0) chosen = { track: t, pattern: this.patterns[i] };
    }
    if (!chosen) {
      // A trace shorter than the prefix is cut from its collection, as the in-memory way cuts it.
      if (!this.collector) {
        // Kernels still held back count: a pattern whose steps only they are in comes first all the same.
        for (const g of this.liveGpu) g.byGpu!.flush();
        if (this.gpuRereadNeeded()) return { reread: [...new Set([...this.gpuRanges.flat(), ...this.kindAnnotations])] };
        const i = this.gpuSteps.findIndex((g) => g && g.byGpu!.taken > 0);
        if (i >= 0) return this.unnamedParts(base, unresolved, this.gpuSteps[i]!, this.leadWarnings(unresolved, i));
      }
      if (this.unnamed) return this.unnamedParts(base, unresolved, this.unnamed);
      if (this.noSteps) return this.noStepParts(base, unresolved);
      return this.collector ? { collected: this.collector.result() } : { fallback: 'no step annotation kept its kernels' };
    }
    const { track } = chosen;
    // Kernels that reached a step after it was reduced, or that found no range because its
    // annotation came later in the file: this layout needs the in-memory way to be exact.
    if (track.late > 0 || track.outside > 0.05 * this.kernels) {
      return { fallback: `kernels out of order for streaming (${track.late} late, ${track.outside} outside)` };
    }
    const { steps, dropped } = track.finish(base.truncated !== undefined);
    const candidates = steps.map((s) => ({ kind: s.kind, firstTs: s.start, kernels: s.kernels, busyUs: s.busyUs }));
    settleStepKinds(candidates, this.kindAnnotations);
    candidates.forEach((c, i) => (steps[i].kind = c.kind));
    steps.sort((a, b) => a.start - b.start);
    const warnings: string[] = [];
    if (this.badTimes) warnings.push(badTimesWarning(this.badTimes));
    if (this.beforeLaunch) warnings.push(beforeLaunchWarning(this.beforeLaunch));
    if (dropped) warnings.push(CUT_STEP_WARNING);
    if (unresolved) warnings.push(unlaunchedWarning(unresolved));
    return {
      ...this.common(base),
      source: 'annotation',
      annotation: chosen.pattern.re.source,
      stepWriter: chosen.pattern.writer,
      confidence: 'exact',
      steps,
      kernelsOutside: track.outside + unresolved,
      warnings,
      folded: track.sink.folded,
    };
  }

  /**
   * Whether GPU-side step annotations came that the first reading could not cut by (after the
   * kernels they hold, as Kineto writes them, at the end of the file; or of a pattern before the one
   * the prefix chose): the file is read again, with them known from the first kernel.
   */
  private gpuRereadNeeded(): boolean {
    if (this.gpuPreset) return false;
    const chosen = this.gpuChosen >= 0 ? this.gpuSteps[this.gpuChosen] : undefined;
    if (chosen?.byGpu!.stale) return true;
    return this.gpuRanges.some((r, i) => r.length > 0 && (!chosen || i < this.gpuChosen));
  }

  /** What steps.ts says of the annotations it passes over before it takes the GPU-side ones of pattern `upTo` (or finds no steps). */
  private leadWarnings(unresolved: number, upTo = this.patterns.length): string[] {
    const warnings: string[] = [];
    for (const t of this.tracks) {
      if (!t) continue;
      if (unresolved) warnings.push(unlaunchedWarning(unresolved));
      if (t.steps.length) warnings.push(emptyStepsWarning(t.steps.length));
    }
    for (let i = 0; i < upTo; i++) {
      const g = this.gpuSteps[i]?.byGpu;
      if (g && g.track.steps.length) warnings.push(emptyStepsWarning(g.track.steps.length));
    }
    return warnings;
  }

  /** The parts of a trace that the prefix, grown to its cap, showed no steps in. */
  private noStepParts(base: RankFileFacts, unresolved: number): RankParts {
    const { kernels, reason } = this.noSteps!;
    const warnings = [...this.leadWarnings(unresolved), reason ?? noStepsWarning(kernels)];
    if (this.badTimes) warnings.push(badTimesWarning(this.badTimes));
    if (this.beforeLaunch) warnings.push(beforeLaunchWarning(this.beforeLaunch));
    return {
      ...this.common(base),
      source: 'none',
      ...(reason ? { noSteps: reason } : {}),
      confidence: 'unsure',
      steps: [],
      kernelsOutside: this.kernels,
      warnings,
    };
  }

  /** The parts of a trace whose steps were cut while streaming with no CPU name: warnings in the order the in-memory way gives them. */
  private unnamedParts(base: RankFileFacts, unresolved: number, unnamed: UnnamedSteps, leadWarnings?: string[]): RankParts {
    const u = unnamed.finish({
      truncated: base.truncated !== undefined,
      graphLaunches: this.graphLaunches,
      kindAnnotations: this.kindAnnotations,
      leadWarnings,
    });
    const warnings = [...u.warnings];
    if (this.badTimes) warnings.push(badTimesWarning(this.badTimes));
    if (this.beforeLaunch) warnings.push(beforeLaunchWarning(this.beforeLaunch));
    if (u.dropped) warnings.push(CUT_STEP_WARNING);
    return {
      ...this.common(base),
      source: u.source,
      annotation: u.annotation,
      stepWriter: u.stepWriter,
      confidence: u.confidence,
      steps: u.steps,
      // A repeating pass takes every kernel, launched or not; a range takes kernels by their launch call.
      kernelsOutside: u.outside + (unnamed.byLaunch ? unresolved : 0),
      warnings,
      folded: u.folded,
    };
  }

  /** What the parts hold whichever way the steps were cut: the whole trace's kernel and launch figures. */
  private common(base: RankFileFacts) {
    const launch: LaunchStats | null = this.runtimeSeen
      ? {
          launches: this.launchCount,
          graphLaunches: this.graphLaunches,
          launchCallUs: this.launchCalls.distribution(),
          launchToStartUs: this.launchToStart.distribution(),
          syncMs: this.syncUs / 1000,
          ...(this.graphFirstKernel.size
            ? { graphLaunchToFirstKernelUs: distribution([...this.graphFirstKernel.values()].map(([launch, first]) => first - launch)) }
            : {}),
        }
      : null;
    return {
      ...base,
      names: this.names,
      category: this.category,
      kernelTotals: this.totals,
      launch,
      kernels: this.kernels - this.pendingBeforeLaunch,
      kernelUs: this.kernelUs,
      firstTs: this.firstTs,
      lastEnd: this.lastEnd,
      analysis: 'streaming' as const,
    };
  }
}
