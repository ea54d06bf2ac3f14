import { aggregateStep, foldStep, FoldedSteps, newFolded, StepAggregate } from './breakdown';
import { lastAtOrBefore, nextStepHeadAt, StepKind } from './steps';

/** Steps left open at once per track; an older one is reduced when a newer one gets kernels. */
const OPEN_STEPS = 3;

/**
 * The kernels of one open step, the first `n` of each column. Reused from step to step, so that
 * streaming makes no garbage that lives long; grown by doubling.
 */
interface KernelBuffer {
  n: number;
  ts: Float64Array;
  dur: Float64Array;
  name: Int32Array;
  /** 1: replayed by the step's graph launch (graph steps only). */
  graph: Uint8Array;
}

function newBuffer(capacity: number): KernelBuffer {
  return { n: 0, ts: new Float64Array(capacity), dur: new Float64Array(capacity), name: new Int32Array(capacity), graph: new Uint8Array(capacity) };
}

export interface OnlineStep {
  label: string;
  kind: StepKind | undefined;
  /** The step's CPU range (an annotation, a module forward; from a graph launch to the next). */
  ts: number;
  end: number;
  buffer?: KernelBuffer;
  received: number;
  open: boolean;
  aggregate?: StepAggregate;
}

/** Where a track's steps go once reduced: the sums of those whose kind is settled are folded. */
export interface StepSink {
  readonly folded: Record<StepKind, FoldedSteps>;
  /** A step just reduced, in the order steps close (nearly their order in time). */
  closed(step: StepAggregate): void;
}

export const newFoldedByKind = (): Record<StepKind, FoldedSteps> => ({ decode: newFolded(), prefill: newFolded(), mixed: newFolded() });

/** For named steps: a step whose kind its name or a nested GPU annotation tells is folded as it closes. */
export class FoldKnownKinds implements StepSink {
  readonly folded = newFoldedByKind();
  constructor(private readonly kindAt: (firstTs: number) => StepKind | undefined = () => undefined) {}
  closed(step: StepAggregate): void {
    step.kind ??= step.kernels ? this.kindAt(step.start) : undefined;
    if (step.kind) foldStep(this.folded[step.kind], step);
  }
}

/** One way of cutting the trace into steps: CPU ranges, each kernel in the one holding its launch call. */
export class StepTrack {
  readonly steps: OnlineStep[] = [];
  private readonly starts: number[] = [];
  private readonly open: OnlineStep[] = [];
  private readonly pool: KernelBuffer[] = [];
  outside = 0;
  late = 0;
  routed = 0;

  /**
   * `graphSteps`: steps run from one graph launch to the next, so the kernels launched after a
   * step's graph that prepare the next step are moved to it as the step closes (steps.ts nextStepHeadAt).
   */
  constructor(
    readonly category: readonly string[],
    readonly sink: StepSink = new FoldKnownKinds(),
    private readonly graphSteps = false,
  ) {}

  /** Adds a step range, keeping the list sorted; ranges wholly inside an earlier one are nested, not steps. */
  addRange(label: string, kind: StepKind | undefined, ts: number, end: number): OnlineStep | undefined {
    let at = this.steps.length;
    while (at > 0 && this.starts[at - 1] > ts) at--;
    for (let j = at - 1; j >= 0 && j >= at - 4; j--) if (this.steps[j].ts <= ts && end <= this.steps[j].end) return undefined;
    return this.insert(at, { label, kind, ts, end, received: 0, open: false });
  }

  /** Adds a step that lasts until the next one starts (a CUDA graph launch). */
  addStart(label: string, ts: number): void {
    let at = this.steps.length;
    while (at > 0 && this.starts[at - 1] > ts) at--;
    this.insert(at, { label, kind: undefined, ts, end: Infinity, received: 0, open: false });
  }

  private insert(at: number, step: OnlineStep): OnlineStep {
    this.steps.splice(at, 0, step);
    this.starts.splice(at, 0, step.ts);
    return step;
  }

  /** The step whose range holds CPU time t (the latest starting one). */
  find(t: number): OnlineStep | undefined {
    const i = lastAtOrBefore(this.starts, t);
    return i >= 0 && t <= this.steps[i].end ? this.steps[i] : undefined;
  }

  add(step: OnlineStep | undefined, ts: number, dur: number, name: number, graph = false): void {
    if (!step) {
      this.outside++;
      return;
    }
    if (step.aggregate) {
      this.late++;
      return;
    }
    this.routed++;
    if (!step.open) {
      step.open = true;
      step.buffer = this.pool.pop() ?? newBuffer(256);
      this.open.push(step);
      while (this.open.length > OPEN_STEPS) this.close(this.open.shift()!);
    }
    let b = step.buffer!;
    if (b.n === b.ts.length) {
      const more = newBuffer(2 * b.n);
      more.ts.set(b.ts);
      more.dur.set(b.dur);
      more.name.set(b.name);
      more.graph.set(b.graph);
      more.n = b.n;
      b = step.buffer = more;
    }
    b.ts[b.n] = ts;
    b.dur[b.n] = dur;
    b.name[b.n] = name;
    b.graph[b.n] = graph ? 1 : 0;
    b.n++;
    step.received++;
  }

  private close(step: OnlineStep): void {
    step.open = false;
    const b = step.buffer!;
    const n = b.n;
    const order = Array.from({ length: n }, (_, i) => i).sort((x, y) => b.ts[x] - b.ts[y] || x - y);
    let kept = n;
    // The last step has no next one: whatever follows its graph is its own.
    const next = this.graphSteps ? this.stepAfter(step) : undefined;
    if (next) {
      kept = nextStepHeadAt(
        n,
        (i) => b.ts[order[i]],
        (i) => b.dur[order[i]],
        (i) => b.graph[order[i]] === 1,
      );
      if (kept < n) {
        for (let i = kept; i < n; i++) {
          const o = order[i];
          this.add(next, b.ts[o], b.dur[o], b.name[o]);
        }
        // Counted once, where they land.
        this.routed -= n - kept;
      }
    }
    step.aggregate = aggregateStep(step.label, step.kind, kept, b, order, this.category);
    b.n = 0;
    this.pool.push(b);
    step.buffer = undefined;
    this.sink.closed(step.aggregate);
  }

  /** The step that starts next after `step`, or undefined for the last. */
  private stepAfter(step: OnlineStep): OnlineStep | undefined {
    for (let i = this.steps.length - 1; i >= 0; i--) if (this.steps[i] === step) return this.steps[i + 1];
    return undefined;
  }

  /** Closes the steps still open; with `dropLast` (a cut file) the latest of them is left out, being cut too. */
  finish(dropLast = false): { steps: StepAggregate[]; dropped: boolean } {
    let dropped = false;
    if (dropLast && this.open.length) {
      const last = this.open.reduce((a, b) => (b.ts > a.ts ? b : a));
      this.open.splice(this.open.indexOf(last), 1);
      last.open = false;
      last.buffer = undefined;
      dropped = true;
    }
    while (this.open.length) this.close(this.open.shift()!);
    return { steps: this.steps.filter((s) => s.aggregate && s.aggregate.kernels > 0).map((s) => s.aggregate!), dropped };
  }
}
