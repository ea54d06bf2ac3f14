import { EventCat, EventView, isGpuWork, isTimed } from './jsonReader';

// The Chrome trace event format writes a span of time three ways: a complete event ("X", with
// `dur`), a begin/end pair on one thread ("B" then "E"), or an async pair matched by category and
// `id` ("b"/"e", the older "S"/"F"); an instant ("i", "I", async "n") has no duration at all.
// torch.profiler writes kernels as "X", but a trace converted or written by another tool may use
// the others. Pairs are joined here into one complete event, as the rest of the analysis reads
// them; GPU work written as an instant, or half a pair, holds no duration and is counted, so that a
// warning says how much GPU work the breakdown is missing, never nothing.

const PH_COMPLETE = 0x58; // X
const PH_BEGIN = 0x42; // B
const PH_END = 0x45; // E
const PH_ASYNC_BEGIN = 0x62; // b
const PH_ASYNC_END = 0x65; // e
const PH_ASYNC_START = 0x53; // S (deprecated async start)
const PH_ASYNC_FINISH = 0x46; // F (deprecated async finish)
const PH_INSTANT = 0x69; // i
const PH_INSTANT_OLD = 0x49; // I (deprecated instant)
const PH_ASYNC_INSTANT = 0x6e; // n

/** Begins waiting for their end at most; past it, further begins are counted as unpaired. */
const MAX_OPEN = 100_000;

// The category as a plain number, read once (order.ts says why).
const NONE = EventCat.None;

interface Open {
  cat: EventCat;
  name: Buffer | undefined;
  nameEscaped: boolean;
  ts: number;
  pid: number;
  tid: number;
  correlation: number;
}

export interface PhaseCounts {
  /** Pairs joined into complete events. */
  paired: number;
  /** GPU events written as instants: no duration. */
  gpuInstants: number;
  /** GPU begins that never ended and ends that had no begin. */
  gpuUnpaired: number;
}

/**
 * Joins begin/end and async pairs of the categories the analysis reads into complete events and
 * passes them on (with every complete event) to `next`; counts GPU work it cannot give a duration.
 */
export class PhasePairs {
  readonly counts: PhaseCounts = { paired: 0, gpuInstants: 0, gpuUnpaired: 0 };
  /** Open "B" events by thread, and open async events by category and id: stacks, innermost last. */
  private readonly open = new Map<string, Open[]>();
  private openCount = 0;
  private readonly joined = new EventView();

  constructor(private readonly next: (e: EventView) => void) {}

  readonly onEvent = (e: EventView): void => {
    const ph = e.ph;
    if (ph === PH_COMPLETE || !isTimed(e.cat)) {
      // An end event ("E") may leave out its category: it is matched by thread.
      if (ph !== PH_END || e.cat !== NONE) {
        this.next(e);
        return;
      }
    }
    if (ph === PH_BEGIN || ph === PH_ASYNC_BEGIN || ph === PH_ASYNC_START) this.begin(e, this.keyOf(e, ph === PH_BEGIN));
    else if (ph === PH_END || ph === PH_ASYNC_END || ph === PH_ASYNC_FINISH) this.end(e, this.keyOf(e, ph === PH_END));
    else if (ph === PH_INSTANT || ph === PH_INSTANT_OLD || ph === PH_ASYNC_INSTANT) {
      if (isGpuWork(e.cat)) this.counts.gpuInstants++;
    } else this.next(e);
  };

  private keyOf(e: EventView, byThread: boolean): string {
    return byThread ? `T${e.pid}/${e.tid}` : `A${e.cat}/${e.id}`;
  }

  private begin(e: EventView, key: string): void {
    if (this.openCount >= MAX_OPEN) {
      if (isGpuWork(e.cat)) this.counts.gpuUnpaired++;
      return;
    }
    const stack = this.open.get(key);
    const entry: Open = {
      cat: e.cat,
      name: e.nameStart >= 0 ? Buffer.from(e.buf.subarray(e.nameStart, e.nameEnd)) : undefined,
      nameEscaped: e.nameEscaped,
      ts: e.ts,
      pid: e.pid,
      tid: e.tid,
      correlation: e.correlation,
    };
    if (stack) stack.push(entry);
    else this.open.set(key, [entry]);
    this.openCount++;
  }

  private end(e: EventView, key: string): void {
    const stack = this.open.get(key);
    const b = stack?.pop();
    if (!b) {
      if (isGpuWork(e.cat)) this.counts.gpuUnpaired++;
      return;
    }
    if (!stack!.length) this.open.delete(key);
    this.openCount--;
    this.counts.paired++;
    const j = this.joined;
    // The begin's name, category, thread and correlation; the end's where the begin had none.
    const name = b.name ?? (e.nameStart >= 0 ? Buffer.from(e.buf.subarray(e.nameStart, e.nameEnd)) : undefined);
    j.reset(name ?? Buffer.alloc(0));
    j.ph = PH_COMPLETE;
    j.cat = b.cat;
    j.ts = b.ts;
    // A missing or broken time on either end gives a broken duration, which sanity.ts leaves out and counts.
    j.dur = e.ts - b.ts;
    j.pid = b.pid;
    j.tid = b.tid;
    j.correlation = b.correlation >= 0 ? b.correlation : e.correlation;
    if (name) {
      j.nameStart = 0;
      j.nameEnd = name.length;
      j.nameEscaped = b.name ? b.nameEscaped : e.nameEscaped;
    }
    this.next(j);
  }

  /** Begins still open at the end of the file: half pairs, counted (GPU ones) as unpaired. */
  finish(): PhaseCounts {
    for (const stack of this.open.values()) for (const b of stack) if (isGpuWork(b.cat)) this.counts.gpuUnpaired++;
    this.open.clear();
    this.openCount = 0;
    return this.counts;
  }
}

/** What could not be given a duration, in words: one warning per kind. */
export function phaseWarnings(c: PhaseCounts): string[] {
  const w: string[] = [];
  if (c.gpuInstants)
    w.push(
      `${c.gpuInstants} GPU event(s) written as instant events ("ph": "i", "I" or "n") have no duration and were left out: the breakdown is missing their GPU time. torch.profiler writes kernels as complete ("X") events; re-export the trace with torch.profiler.`,
    );
  if (c.gpuUnpaired)
    w.push(
      `${c.gpuUnpaired} GPU event(s) written as half of a begin/end pair ("B"/"E", "b"/"e") whose other half is missing were left out: the breakdown is missing their GPU time.`,
    );
  return w;
}
