import { EventCat, EventView } from './jsonReader';

/**
 * A growable typed array kept in fixed-size chunks: growing copies nothing, so a multi-GB trace's
 * kernels cost their own bytes and one chunk of slack, not the 2-4x of doubling and copying. The
 * chunks are joined into one array once, when the collection is read. Each kind of array has its
 * own class, for its own push: one push storing into three kinds of typed array took the slow,
 * generic way for every value.
 */
abstract class Vec<T extends Float64Array | Int32Array | Uint8Array> {
  protected static readonly CHUNK = 1 << 16;
  private chunks: T[] = [];
  protected current: T;
  protected used = 0;
  length = 0;
  constructor(private readonly make: (n: number) => T) {
    this.current = make(Vec.CHUNK);
  }
  /** A fresh chunk, the full one kept. */
  protected nextChunk(): void {
    this.chunks.push(this.current);
    this.current = this.make(Vec.CHUNK);
    this.used = 0;
  }
  /** Everything pushed, as one array; the chunks are let go. */
  view(): T {
    const all = this.make(this.length);
    let at = 0;
    for (const c of this.chunks) {
      all.set(c, at);
      at += c.length;
    }
    all.set(this.current.subarray(0, this.used), at);
    this.chunks = [all];
    this.current = this.make(0);
    this.used = 0;
    return all;
  }
}

class F64Vec extends Vec<Float64Array> {
  constructor() {
    super((n) => new Float64Array(n));
  }
  push(v: number): void {
    if (this.used === this.current.length) this.nextChunk();
    this.current[this.used++] = v;
    this.length++;
  }
}

class I32Vec extends Vec<Int32Array> {
  constructor() {
    super((n) => new Int32Array(n));
  }
  push(v: number): void {
    if (this.used === this.current.length) this.nextChunk();
    this.current[this.used++] = v;
    this.length++;
  }
}

class U8Vec extends Vec<Uint8Array> {
  constructor() {
    super((n) => new Uint8Array(n));
  }
  push(v: number): void {
    if (this.used === this.current.length) this.nextChunk();
    this.current[this.used++] = v;
    this.length++;
  }
}

export const enum RuntimeKind {
  KernelLaunch = 0,
  GraphLaunch = 1,
  Copy = 2,
  Sync = 3,
  /** Graph capture or instantiation (cudaStreamBeginCapture, cudaGraphInstantiate): a server building its graphs. */
  Capture = 4,
}

export interface Annotation {
  name: string;
  ts: number;
  dur: number;
  gpu: boolean;
  pid: number;
  /** A with_stack `nn.Module: ...` python_function range, not a named annotation. */
  module?: boolean;
}

/** Kernels as columns. `name` indexes `names`; `memory` is 1 for gpu_memcpy/gpu_memset events. */
export interface KernelColumns {
  count: number;
  ts: Float64Array;
  dur: Float64Array;
  name: Int32Array;
  correlation: Int32Array;
  stream: Int32Array;
  memory: Uint8Array;
  names: string[];
}

export interface RuntimeColumns {
  count: number;
  ts: Float64Array;
  dur: Float64Array;
  correlation: Int32Array;
  kind: Uint8Array;
}

/**
 * Launch calls (cuda_runtime / cuda_driver rows) by correlation id: a sorted index searched by
 * halves, not a Map per launch, since a trace with no step names keeps every launch of the part it
 * collects. Where an id repeats (traces joined by hand), the row written last is the one found.
 */
export class LaunchIndex {
  /** Row numbers, by correlation id, then by position in the file. */
  readonly rows: Int32Array;
  constructor(
    private readonly runtime: RuntimeColumns,
    keep?: (row: number) => boolean,
  ) {
    const { correlation, count } = runtime;
    const rows = new Int32Array(count);
    let n = 0;
    let sorted = true;
    for (let i = 0; i < count; i++) {
      if (keep && !keep(i)) continue;
      if (n && correlation[i] < correlation[rows[n - 1]]) sorted = false;
      rows[n++] = i;
    }
    this.rows = rows.subarray(0, n);
    // Kineto writes launches in correlation order nearly always: sorting is then not needed.
    if (!sorted) this.rows.sort((a, b) => correlation[a] - correlation[b] || a - b);
  }

  /** Where in `rows` the last launch with this id is, or -1. */
  slot(corr: number): number {
    if (corr < 0) return -1;
    const { correlation } = this.runtime;
    const rows = this.rows;
    let lo = 0;
    let hi = rows.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (correlation[rows[mid]] <= corr) lo = mid + 1;
      else hi = mid;
    }
    return lo > 0 && correlation[rows[lo - 1]] === corr ? lo - 1 : -1;
  }

  /** The row of the launch call with this id, or -1. */
  find(corr: number): number {
    const s = this.slot(corr);
    return s < 0 ? -1 : this.rows[s];
  }
}

export interface CollectedTrace {
  kernels: KernelColumns;
  runtime: RuntimeColumns;
  annotations: Annotation[];
  cpuOps: number;
  /** Events left out for a time that was not a finite, non-negative number. */
  badTimes?: number;
}

/**
 * What a runtime call is, by its name: CUDA runtime and driver calls, and ROCm's HIP ones, which
 * Kineto files under the same cuda_runtime category on AMD GPUs (hipLaunchKernel,
 * hipExtModuleLaunchKernel, hipMemcpyWithStream... as in HTA's MI250 test trace).
 */
export function runtimeKind(name: string): RuntimeKind | undefined {
  if (/^(cuda|cu|hip)GraphLaunch/.test(name)) return RuntimeKind.GraphLaunch;
  if (/^cu(da)?LaunchKernel|^cu(da)?LaunchCooperativeKernel|^hip(Ext)?(Module)?LaunchKernel|^hipLaunchCooperativeKernel/.test(name))
    return RuntimeKind.KernelLaunch;
  if (/^(cu(da)?|hip)Mem(cpy|set)/.test(name)) return RuntimeKind.Copy;
  if (/Synchronize$/.test(name)) return RuntimeKind.Sync;
  if (/^(cuda|cu|hip)(StreamBeginCapture|GraphInstantiate)/.test(name)) return RuntimeKind.Capture;
  return undefined;
}

/** runtimeKind remembered per name: a trace repeats a few runtime call names millions of times. */
export class RuntimeKindCache {
  private readonly kinds = new Map<string, RuntimeKind | undefined>();
  private readonly byRaw = new RawNameTable();
  private readonly rawKinds: (RuntimeKind | undefined)[] = [];
  private readonly addRaw = (name: string): number => this.rawKinds.push(this.kindOf(name)) - 1;

  kindOf(name: string): RuntimeKind | undefined {
    if (this.kinds.has(name)) return this.kinds.get(name);
    const kind = runtimeKind(name);
    this.kinds.set(name, kind);
    return kind;
  }

  /** The kind of the event's call, from its raw name bytes (no string made per event). */
  kindOfEvent(e: EventView): RuntimeKind | undefined {
    return this.rawKinds[this.byRaw.idOf(e, this.addRaw)];
  }
}

/**
 * A time the analysis cannot use: an infinite or negative duration (a trace written by a crashed or
 * broken profiler, or a hand-edited one), or an infinite start. Such an event is left out and
 * counted, not turned into "NaN%" or "Infinity ms".
 */
export function hasBadTime(e: EventView): boolean {
  const cat = e.cat;
  const gpu = cat === EventCat.Kernel || cat === EventCat.GpuMemcpy || cat === EventCat.GpuMemset;
  const used =
    gpu ||
    cat === EventCat.CudaRuntime ||
    cat === EventCat.CudaDriver ||
    cat === EventCat.UserAnnotation ||
    cat === EventCat.GpuUserAnnotation ||
    cat === EventCat.PythonFunction;
  if (!used) return false;
  // GPU work without a duration is as unusable as one with a broken duration.
  if (!Number.isFinite(e.ts) || (gpu && Number.isNaN(e.dur))) return true;
  return !Number.isNaN(e.dur) && (!Number.isFinite(e.dur) || e.dur < 0);
}

export function badTimesWarning(n: number): string {
  return `${n} event(s) with a non-finite or negative time (NaN, Infinity, a negative duration) were left out of the analysis.`;
}

/**
 * Name ids of one consumer (kernels, runtime calls), found through the reader's id of the event's
 * raw name bytes (EventView.rawNameId): no string is made per event, and the bytes are hashed once
 * per event however many tables ask. `add` gives the id of a name first met.
 */
export class RawNameTable {
  private view: EventView | undefined;
  /** Our id by the reader's raw name id; -1 where not met yet. */
  private byRaw = new Int32Array(0);

  /** The id of the event's name; `add` gives the id of a name not seen in these bytes before. */
  idOf(e: EventView, add: (name: string) => number): number {
    if (e !== this.view) {
      // Another reading: its raw ids are its own.
      this.view = e;
      this.byRaw = new Int32Array(0);
    }
    const r = e.rawNameId();
    if (r < 0) return add(e.name());
    if (r >= this.byRaw.length) {
      const grown = new Int32Array(Math.max(256, 2 * (r + 1))).fill(-1);
      grown.set(this.byRaw);
      this.byRaw = grown;
    }
    let id = this.byRaw[r];
    if (id < 0) id = this.byRaw[r] = add(e.name());
    return id;
  }
}

/**
 * Which Python functions of a with_stack trace are module forwards (`nn.Module: ...`), told once per
 * name as written: such a trace has a Python function event per frame, a few hundred names repeated.
 */
export class ModuleForwards {
  private readonly rawNames = new RawNameTable();
  /** By id: the forward's name, or undefined for any other function. */
  private readonly forwards: (string | undefined)[] = [];
  private readonly ids = new Map<string, number>();
  private readonly add = (name: string): number => {
    let id = this.ids.get(name);
    if (id === undefined) {
      id = this.forwards.push(name.startsWith('nn.Module: ') ? name : undefined) - 1;
      this.ids.set(name, id);
    }
    return id;
  };

  /** The event's name if it is a module forward's, else undefined. */
  nameOf(e: EventView): string | undefined {
    return this.forwards[this.rawNames.idOf(e, this.add)];
  }
}

/**
 * Keeps what the analysis needs from the event stream: kernels (about 40 bytes each, names
 * interned), launch calls with their correlation ids, and annotations. Everything else is counted
 * and dropped.
 */
export class TraceCollector {
  private readonly kTs = new F64Vec();
  private readonly kDur = new F64Vec();
  private readonly kName = new I32Vec();
  private readonly kCorr = new I32Vec();
  private readonly kStream = new I32Vec();
  private readonly kMem = new U8Vec();
  private readonly names: string[] = [];
  private readonly nameIds = new Map<string, number>();
  private readonly rawNames = new RawNameTable();
  private readonly internName = (name: string): number => {
    let id = this.nameIds.get(name);
    if (id === undefined) {
      id = this.names.length;
      this.names.push(name);
      this.nameIds.set(name, id);
    }
    return id;
  };
  private readonly rTs = new F64Vec();
  private readonly rDur = new F64Vec();
  private readonly rCorr = new I32Vec();
  private readonly rKind = new U8Vec();
  private readonly runtimeKinds = new RuntimeKindCache();
  private readonly annotations: Annotation[] = [];
  private readonly moduleForwards = new ModuleForwards();
  private cpuOps = 0;
  private badTimes = 0;

  /** Kernels (memcpy and memset included) collected so far. */
  get kernelCount(): number {
    return this.kTs.length;
  }

  readonly onEvent = (e: EventView): void => {
    const cat = e.cat;
    if (cat === EventCat.CpuOp) {
      this.cpuOps++;
      return;
    }
    // Only complete events ("X") carry durations; flows, counters and metadata are skipped.
    if (e.ph !== 0x58) return;
    if (hasBadTime(e)) {
      this.badTimes++;
      return;
    }
    if (cat === EventCat.Kernel || cat === EventCat.GpuMemcpy || cat === EventCat.GpuMemset) {
      const id = this.rawNames.idOf(e, this.internName);
      this.kTs.push(e.ts);
      this.kDur.push(Number.isNaN(e.dur) ? 0 : e.dur);
      this.kName.push(id);
      this.kCorr.push(e.correlation);
      this.kStream.push(Number.isNaN(e.tid) ? -1 : e.tid);
      this.kMem.push(cat === EventCat.Kernel ? 0 : 1);
    } else if (cat === EventCat.CudaRuntime || cat === EventCat.CudaDriver) {
      const kind = this.runtimeKinds.kindOfEvent(e);
      if (kind === undefined) return;
      this.rTs.push(e.ts);
      this.rDur.push(Number.isNaN(e.dur) ? 0 : e.dur);
      this.rCorr.push(e.correlation);
      this.rKind.push(kind);
    } else if (cat === EventCat.PythonFunction) {
      // with_stack traces: module forwards only (the rest of the Python stack is not needed).
      const name = this.moduleForwards.nameOf(e);
      if (name !== undefined) this.annotations.push({ name, ts: e.ts, dur: Number.isNaN(e.dur) ? 0 : e.dur, gpu: false, pid: e.pid, module: true });
    } else if (cat === EventCat.UserAnnotation || cat === EventCat.GpuUserAnnotation) {
      this.annotations.push({ name: e.name(), ts: e.ts, dur: Number.isNaN(e.dur) ? 0 : e.dur, gpu: cat === EventCat.GpuUserAnnotation, pid: e.pid });
    }
  };

  result(): CollectedTrace {
    return {
      kernels: {
        count: this.kTs.length,
        ts: this.kTs.view(),
        dur: this.kDur.view(),
        name: this.kName.view(),
        correlation: this.kCorr.view(),
        stream: this.kStream.view(),
        memory: this.kMem.view(),
        names: this.names,
      },
      runtime: { count: this.rTs.length, ts: this.rTs.view(), dur: this.rDur.view(), correlation: this.rCorr.view(), kind: this.rKind.view() },
      annotations: this.annotations,
      cpuOps: this.cpuOps,
      badTimes: this.badTimes,
    };
  }
}
