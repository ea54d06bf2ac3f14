import { CollectedTrace } from './collect';
import { EventCat, EventView, isGpuWork } from './jsonReader';

// The streaming analysis (online.ts, unnamed.ts, stepTrack.ts) reads a trace in the order Kineto
// writes it: every CPU-side event of the window first (the step annotations, module forwards),
// then the GPU activities with their launch calls, each thread's calls in the order they ran, and
// kernels in about the order they ran: libkineto/src/GenericActivityProfiler.cpp
// (processTraceInternal: the CPU trace buffers, then processGpuActivities) says "Activities may
// appear in the buffers out of order", and real traces hold kernels hundreds of milliseconds
// behind others of the file (TraceLens's SGLang trace: one stream 465 ms behind). The reorder
// window of unnamed.ts and the late counts of stepTrack.ts absorb that much. A file in another
// order (events shuffled, sorted by something else, joined from pieces) would give other figures,
// silently: a shuffled SGLang trace read a 473.75 ms step as 10.43 ms. OrderWatch notices such an
// order while the file streams; the analysis then keeps every kernel and puts the collection in
// time order (inTimeOrder) before it finds the steps, which gives the figures of the ordered file.

// The categories as plain numbers, read once: under a loader that keeps `const enum`s as objects
// (tsx), each EventCat.X is a property read through the module's getter, per event.
const RUNTIME = EventCat.CudaRuntime;
const DRIVER = EventCat.CudaDriver;
const ANNOTATION = EventCat.UserAnnotation;
const PYTHON = EventCat.PythonFunction;
const CPU_OP = EventCat.CpuOp;
const OTHER = EventCat.Other;

/** Why the order is not one the streaming analysis can read, in words; thrown to stop a streaming reading early. */
export class OutOfOrder extends Error {
  constructor(readonly why: string) {
    super(why);
    this.name = 'OutOfOrder';
  }
}

/**
 * Watches the events the analysis reads, in file order, for an order it cannot stream: a launch
 * call or CPU-side annotation earlier than one before it on its thread; a step annotation or module
 * forward after a launch call later than its start (Kineto writes the CPU side first); a kernel
 * further behind the kernels before it than `window` kernels.
 */
export class OrderWatch {
  /** The first sign of disorder, in words; undefined while the order is one Kineto writes. */
  why: string | undefined;
  /** Per thread and kind (launch call, CPU annotation, Python function: key 4 tid + kind), its place in lastStart. */
  private readonly threadSlot = new Map<number, number>();
  /** The last start of each thread and kind: in a typed array, as a Map of doubles would make an object per launch call. */
  private lastStart = new Float64Array(16);
  private latestLaunch = -Infinity;
  /** The latest kernel start seen after each kernel, `window` places back: a kernel behind it is out of the window. */
  private readonly ring: Float64Array;
  private kernels = 0;
  private latestKernel = -Infinity;

  constructor(private readonly window: number) {
    this.ring = new Float64Array(window);
  }

  readonly onEvent = (e: EventView): void => {
    const cat = e.cat;
    if (cat === CPU_OP || cat === OTHER || this.why !== undefined || e.ph !== 0x58) return;
    const ts = e.ts;
    if (isGpuWork(cat)) {
      const slot = this.kernels % this.window;
      if (this.kernels >= this.window && ts < this.ring[slot])
        this.why = `a kernel starting at ${ts} us comes more than ${this.window} kernels after kernels that start later`;
      if (ts > this.latestKernel) this.latestKernel = ts;
      this.ring[slot] = this.latestKernel;
      this.kernels++;
    } else if (cat === RUNTIME || cat === DRIVER) {
      this.onThread(e.tid, 0, ts, 'a launch call');
      if (ts > this.latestLaunch) this.latestLaunch = ts;
    } else if (cat === ANNOTATION || cat === PYTHON) {
      this.onThread(e.tid, cat === ANNOTATION ? 1 : 2, ts, 'a CPU annotation');
      if (ts < this.latestLaunch) this.why = `a CPU annotation starting at ${ts} us comes after a launch call made later (${this.latestLaunch} us)`;
    }
  };

  private onThread(tid: number, kind: number, ts: number, what: string): void {
    const k = (Number.isNaN(tid) ? -1 : tid) * 4 + kind;
    let at = this.threadSlot.get(k);
    if (at === undefined) {
      at = this.threadSlot.size;
      this.threadSlot.set(k, at);
      if (at === this.lastStart.length) {
        const grown = new Float64Array(2 * at);
        grown.set(this.lastStart);
        this.lastStart = grown;
      }
    } else if (ts < this.lastStart[at]) {
      this.why = `${what} starting at ${ts} us comes after one of its thread that starts later (${this.lastStart[at]} us)`;
    }
    this.lastStart[at] = ts;
  }
}

function permute<T extends Float64Array | Int32Array | Uint8Array>(col: T, order: Uint32Array, make: (n: number) => T): T {
  const out = make(order.length);
  for (let i = 0; i < order.length; i++) out[i] = col[order[i]];
  return out;
}

/**
 * The collection in time order, whatever order the file had: kernels and launch calls by start
 * (ties by correlation id, duration, stream, name), annotations by start (the longer first), kernel
 * names numbered in the order they first run. Two files holding the same events in any order give
 * the same collection.
 */
export function inTimeOrder(trace: CollectedTrace): CollectedTrace {
  const k = trace.kernels;
  const byName = k.names;
  const ko = Uint32Array.from({ length: k.count }, (_, i) => i).sort(
    (a, b) =>
      k.ts[a] - k.ts[b] ||
      k.correlation[a] - k.correlation[b] ||
      k.dur[a] - k.dur[b] ||
      k.stream[a] - k.stream[b] ||
      k.memory[a] - k.memory[b] ||
      (byName[k.name[a]] < byName[k.name[b]] ? -1 : byName[k.name[a]] > byName[k.name[b]] ? 1 : 0),
  );
  const names: string[] = [];
  const renamed = new Int32Array(byName.length).fill(-1);
  const name = new Int32Array(k.count);
  for (let i = 0; i < ko.length; i++) {
    const old = k.name[ko[i]];
    if (renamed[old] < 0) renamed[old] = names.push(byName[old]) - 1;
    name[i] = renamed[old];
  }
  const r = trace.runtime;
  const ro = Uint32Array.from({ length: r.count }, (_, i) => i).sort(
    (a, b) => r.ts[a] - r.ts[b] || r.correlation[a] - r.correlation[b] || r.dur[a] - r.dur[b] || r.kind[a] - r.kind[b],
  );
  const annotations = [...trace.annotations].sort(
    (a, b) =>
      a.ts - b.ts ||
      b.dur - a.dur ||
      Number(a.gpu) - Number(b.gpu) ||
      Number(!!a.module) - Number(!!b.module) ||
      (a.name < b.name ? -1 : a.name > b.name ? 1 : 0) ||
      a.pid - b.pid,
  );
  return {
    ...trace,
    kernels: {
      count: k.count,
      ts: permute(k.ts, ko, (n) => new Float64Array(n)),
      dur: permute(k.dur, ko, (n) => new Float64Array(n)),
      name,
      correlation: permute(k.correlation, ko, (n) => new Int32Array(n)),
      stream: permute(k.stream, ko, (n) => new Int32Array(n)),
      memory: permute(k.memory, ko, (n) => new Uint8Array(n)),
      names,
    },
    runtime: {
      count: r.count,
      ts: permute(r.ts, ro, (n) => new Float64Array(n)),
      dur: permute(r.dur, ro, (n) => new Float64Array(n)),
      correlation: permute(r.correlation, ro, (n) => new Int32Array(n)),
      kind: permute(r.kind, ro, (n) => new Uint8Array(n)),
    },
    annotations,
  };
}
