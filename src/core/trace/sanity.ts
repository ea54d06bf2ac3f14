import { CollectedTrace, hasBadTime, LaunchIndex, RuntimeKind } from './collect';
import { EventCat, EventView, isGpuWork, isTimed } from './jsonReader';

// What a trace can hold and still be a profile: the checks every event passes before the analysis
// sees it, so that a broken or hostile trace gives a breakdown of what is whole and a warning that
// counts what was left out, never "Infinity%" or a step of 1e305 ms.

/** No kernel, launch call or annotation of a profile lasts a day: a profile that long would be terabytes. */
export const MAX_EVENT_US = 86_400e6;
/**
 * A profile is one stretch of time: an event more than an hour from every event before it belongs
 * to no capture (a zeroed or corrupt timestamp), and would stretch a step to hours.
 */
export const MAX_GAP_US = 3_600e6;
/**
 * Kineto records GPU work inside the profiling window only, and writes the window's CPU events
 * first: GPU work this long before the first CPU-side event read has a damaged timestamp.
 */
export const MAX_GPU_LEAD_US = 100e3;

const PH_COMPLETE = 0x58; // X

export interface SkippedEvents {
  badTime: number;
  tooLong: number;
  outsideSpan: number;
  beforeProfile: number;
  unknownPhase: number;
}

export function noneSkipped(): SkippedEvents {
  return { badTime: 0, tooLong: 0, outsideSpan: 0, beforeProfile: 0, unknownPhase: 0 };
}

/**
 * Decides, event by event as they stream, which ones the analysis may read. The time span grows
 * with the events it accepts; one far outside it is skipped. Where the skipped ones outnumber the
 * accepted (the first event was the broken one), `rereadSpan` gives the span the majority lies in,
 * for a second reading that starts from it.
 */
export class EventSanity {
  readonly skipped = noneSkipped();
  // Numbers from the start: a field that first held undefined keeps each double it is given as an
  // object of its own, one allocation per event.
  private lo = Infinity;
  private hi = -Infinity;
  private accepted = 0;
  /** The earliest start of a CPU-side event (launch call, annotation) accepted so far. */
  private firstCpu = Infinity;
  private far = { count: 0, lo: Infinity, hi: -Infinity };
  /** The earliest start of GPU work accepted, and the latest of GPU work left out as before the profile. */
  private firstGpuAccepted = Infinity;
  private lastGpuBefore = -Infinity;

  /**
   * `firstCpu`: the profile's first CPU-side event, from an earlier reading of the whole file, for a
   * reading whose events may come in any order (the check against it is then the same for every event).
   */
  constructor(span?: { lo: number; hi: number }, firstCpu?: number) {
    this.lo = span?.lo ?? Infinity;
    this.hi = span?.hi ?? -Infinity;
    if (firstCpu !== undefined) this.firstCpu = firstCpu;
  }

  /** The earliest start of a CPU-side event accepted (Infinity if none). */
  get firstCpuStart(): number {
    return this.firstCpu;
  }

  /**
   * Whether a GPU event was judged against a first CPU event that a later one moved (GPU work read
   * before the CPU side, as Kineto never writes it): with the final one, it would have gone the other way.
   */
  orderDependent(): boolean {
    const limit = this.firstCpu - MAX_GPU_LEAD_US;
    return this.firstGpuAccepted < limit || this.lastGpuBefore >= limit;
  }

  /** True when the event must not reach the analysis (and it has been counted). */
  readonly reject = (e: EventView): boolean => {
    const cat = e.cat;
    if (e.ph !== PH_COMPLETE) {
      // Pairs and instants were joined or counted before (phases.ts): what is left has an unknown or no phase.
      if (isGpuWork(cat)) this.skipped.unknownPhase++;
      return true;
    }
    if (!isTimed(cat)) return false;
    if (hasBadTime(e)) {
      this.skipped.badTime++;
      return true;
    }
    const dur = Number.isNaN(e.dur) ? 0 : e.dur;
    if (dur > MAX_EVENT_US) {
      this.skipped.tooLong++;
      return true;
    }
    const ts = e.ts;
    if (this.lo <= this.hi && (ts > this.hi + MAX_GAP_US || ts + dur < this.lo - MAX_GAP_US)) {
      this.skipped.outsideSpan++;
      const far = this.far;
      far.count++;
      if (ts < far.lo) far.lo = ts;
      if (ts + dur > far.hi) far.hi = ts + dur;
      return true;
    }
    if (isGpuWork(cat)) {
      if (this.firstCpu !== Infinity && ts < this.firstCpu - MAX_GPU_LEAD_US) {
        this.skipped.beforeProfile++;
        if (ts > this.lastGpuBefore) this.lastGpuBefore = ts;
        return true;
      }
      if (ts < this.firstGpuAccepted) this.firstGpuAccepted = ts;
    } else if (cat !== EventCat.GpuUserAnnotation && ts < this.firstCpu) this.firstCpu = ts;
    this.accepted++;
    if (ts < this.lo) this.lo = ts;
    if (ts + dur > this.hi) this.hi = ts + dur;
    return false;
  };

  /** The span to read again from, when more events fell outside the span than inside it. */
  rereadSpan(): { lo: number; hi: number } | undefined {
    return this.far.count > this.accepted ? { lo: this.far.lo, hi: this.far.hi } : undefined;
  }
}

/** What was left out, in words, one warning per reason. */
export function skippedWarnings(s: SkippedEvents): string[] {
  const w: string[] = [];
  if (s.badTime) w.push(`${s.badTime} event(s) with a non-finite or negative time (NaN, Infinity, a negative duration) were left out of the analysis.`);
  if (s.tooLong)
    w.push(`${s.tooLong} event(s) lasting more than a day were left out of the analysis: no kernel or step lasts that long, the trace was damaged or edited.`);
  if (s.outsideSpan)
    w.push(`${s.outsideSpan} event(s) more than an hour away from the rest of the trace (a zeroed or corrupt timestamp) were left out of the analysis.`);
  if (s.beforeProfile)
    w.push(
      `${s.beforeProfile} GPU event(s) starting more than ${MAX_GPU_LEAD_US / 1000} ms before the profile's first CPU event (a damaged timestamp) were left out of the analysis.`,
    );
  if (s.unknownPhase) w.push(`${s.unknownPhase} GPU event(s) with an unknown or missing "ph" (not "X") were left out of the analysis.`);
  return w;
}

/** Kernels whose start on the GPU came before their launch call on the CPU: impossible, so left out. */
export function beforeLaunchWarning(n: number): string {
  return `${n} kernel(s) that start before their launch call (a damaged timestamp or correlation id) were left out of the steps and the launch statistics.`;
}

/**
 * The collection without the kernels that start before their launch call (found by correlation id),
 * as the streaming way leaves them out, and how many those were. The collection itself is not changed.
 */
export function withoutKernelsBeforeLaunch(trace: CollectedTrace): { trace: CollectedTrace; dropped: number } {
  const k = trace.kernels;
  const r = trace.runtime;
  const launches = new LaunchIndex(r, (i) => r.kind[i] === RuntimeKind.KernelLaunch || r.kind[i] === RuntimeKind.GraphLaunch);
  const all = new Int32Array(k.count);
  let kept = 0;
  for (let i = 0; i < k.count; i++) {
    const row = launches.find(k.correlation[i]);
    if (!(row >= 0 && k.ts[i] < r.ts[row])) all[kept++] = i;
  }
  const keep = all.subarray(0, kept);
  const dropped = k.count - kept;
  if (!dropped) return { trace, dropped };
  const pick = <T extends Float64Array | Int32Array | Uint8Array>(col: T, make: (n: number) => T): T => {
    const out = make(keep.length);
    keep.forEach((from, to) => (out[to] = col[from]));
    return out;
  };
  const kernels = {
    count: keep.length,
    ts: pick(k.ts, (n) => new Float64Array(n)),
    dur: pick(k.dur, (n) => new Float64Array(n)),
    name: pick(k.name, (n) => new Int32Array(n)),
    correlation: pick(k.correlation, (n) => new Int32Array(n)),
    stream: pick(k.stream, (n) => new Int32Array(n)),
    memory: pick(k.memory, (n) => new Uint8Array(n)),
    names: k.names,
  };
  return { trace: { ...trace, kernels }, dropped };
}
