// An incremental reader of Chrome/Kineto trace JSON. It never holds the whole document: bytes arrive
// in chunks, each event object of `traceEvents` is parsed in place from the bytes and handed to a
// callback as a reusable view, and only the fields the analysis needs are decoded. Small top-level
// values (distributedInfo, deviceProperties, ...) are collected whole, in whatever order they come.

import { printable } from '../../shared/printable';

/** What kind of event (`cat`), as a small number so that the hot path compares no strings. */
export const enum EventCat {
  Other = 0,
  Kernel = 1,
  GpuMemcpy = 2,
  GpuMemset = 3,
  CudaRuntime = 4,
  CudaDriver = 5,
  UserAnnotation = 6,
  GpuUserAnnotation = 7,
  CpuOp = 8,
  None = 9,
  PythonFunction = 10,
}

/** Thrown for input that is not a trace, or not JSON; `offset` is the byte where reading stopped. */
export class TraceFormatError extends Error {
  constructor(
    message: string,
    readonly offset: number,
  ) {
    super(message);
    this.name = 'TraceFormatError';
  }
}

const NEED_MORE = -1;

const Q = 0x22; // "
const BS = 0x5c; // backslash
const LBRACE = 0x7b;
const RBRACE = 0x7d;
const LBRACK = 0x5b;
const RBRACK = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;
const BOM = [0xef, 0xbb, 0xbf];
/**
 * The Chrome trace format's phases that never hold GPU work: flows (two per kernel in a Kineto
 * trace), counters, samples, objects, metadata, marks, clock syncs, contexts. Complete ("X"),
 * begin/end ("B"/"E"), async ("b"/"e", "S"/"F") and instant ("i"/"I"/"n") events are read on, so
 * that GPU work written so is paired into durations or counted (phases.ts).
 */
const SKIPPED_PHASES: boolean[] = [];
for (const c of 'CstfPNODMVvRc()') SKIPPED_PHASES[c.charCodeAt(0)] = true;

function bytes(s: string): Uint8Array {
  return Buffer.from(s, 'latin1');
}
const CAT_NAMES: [Uint8Array, EventCat][] = [
  // CPU ops first: most of a trace's events are theirs.
  [bytes('cpu_op'), EventCat.CpuOp],
  [bytes('kernel'), EventCat.Kernel],
  [bytes('gpu_memcpy'), EventCat.GpuMemcpy],
  [bytes('gpu_memset'), EventCat.GpuMemset],
  [bytes('cuda_runtime'), EventCat.CudaRuntime],
  [bytes('cuda_driver'), EventCat.CudaDriver],
  [bytes('user_annotation'), EventCat.UserAnnotation],
  [bytes('gpu_user_annotation'), EventCat.GpuUserAnnotation],
  [bytes('python_function'), EventCat.PythonFunction],
  // Older Kineto (PyTorch 1.8-1.9) capitalised them; HTA's hta/analyzers/breakdown_analysis.py
  // still counts "Kernel", "Memcpy" and "Memset" as GPU work beside the lower-case ones.
  [bytes('Kernel'), EventCat.Kernel],
  [bytes('Memcpy'), EventCat.GpuMemcpy],
  [bytes('Memset'), EventCat.GpuMemset],
  [bytes('Runtime'), EventCat.CudaRuntime],
  [bytes('Operator'), EventCat.CpuOp],
];
/**
 * CAT_NAMES by length and first byte (`length << 8 | first`), in CAT_NAMES's order: a category is
 * told by one table read and, nearly always, one comparison.
 */
const CATS_BY_HEAD: [Uint8Array, EventCat][][] = [];
for (const entry of CAT_NAMES) (CATS_BY_HEAD[(entry[0].length << 8) | entry[0][0]] ??= []).push(entry);

/** The category of the string body [s, e). */
function catOf(buf: Buffer, s: number, e: number): EventCat {
  if (e <= s || e - s > 255) return EventCat.Other;
  const candidates = CATS_BY_HEAD[((e - s) << 8) | buf[s]];
  if (candidates === undefined) return EventCat.Other;
  for (let c = 0; c < candidates.length; c++) if (eq(buf, s, e, candidates[c][0])) return candidates[c][1];
  return EventCat.Other;
}
const K_CORRELATION = bytes('correlation');
/** Categories whose args carry the correlation id the analysis needs (kernels, copies, launch calls). */
const HAS_CORRELATION: boolean[] = [];
for (const cat of [EventCat.Kernel, EventCat.GpuMemcpy, EventCat.GpuMemset, EventCat.CudaRuntime, EventCat.CudaDriver]) HAS_CORRELATION[cat] = true;
// Tables, not comparisons with EventCat.X: under a loader that keeps `const enum`s as objects (tsx)
// each EventCat.X read is a module getter, and these are asked of every event.
const GPU_WORK: boolean[] = [];
for (const cat of [EventCat.Kernel, EventCat.GpuMemcpy, EventCat.GpuMemset]) GPU_WORK[cat] = true;
const TIMED: boolean[] = [...GPU_WORK];
for (const cat of [EventCat.CudaRuntime, EventCat.CudaDriver, EventCat.UserAnnotation, EventCat.GpuUserAnnotation, EventCat.PythonFunction]) TIMED[cat] = true;

/** Work on the GPU itself: kernels, copies and memsets. */
export function isGpuWork(cat: EventCat): boolean {
  return GPU_WORK[cat] === true;
}

/** The categories whose times the analysis reads: GPU work, launch calls, annotations and Python functions. */
export function isTimed(cat: EventCat): boolean {
  return TIMED[cat] === true;
}
const K_TRACE_EVENTS = 'traceEvents';

// The keys of an event the reader reads, as small numbers (KEY_OTHER: any other key).
const KEY_OTHER = 0;
const KEY_PH = 1;
const KEY_CAT = 2;
const KEY_NAME = 3;
const KEY_PID = 4;
const KEY_TID = 5;
const KEY_TS = 6;
const KEY_DUR = 7;
const KEY_ARGS = 8;
const KEY_ID = 9;
/** Not a key: where an event starts, for TORCH_NEXT's first guess. */
const KEY_START = 10;
const KEY_NAMES: [string, number][] = [
  ['ph', KEY_PH],
  ['cat', KEY_CAT],
  ['name', KEY_NAME],
  ['pid', KEY_PID],
  ['tid', KEY_TID],
  ['ts', KEY_TS],
  ['dur', KEY_DUR],
  ['args', KEY_ARGS],
  ['id', KEY_ID],
];
/**
 * Each key as written before its value, quotes and colon included (`"ph":`), as two little-endian
 * words, which a guess is matched against: its first four bytes, and the rest under a mask.
 */
const KEY_HEAD = new Int32Array(KEY_START + 1);
const KEY_TAIL = new Int32Array(KEY_START + 1);
const KEY_TAIL_MASK = new Int32Array(KEY_START + 1);
const KEY_LENGTH = new Int32Array(KEY_START + 1);
for (const [k, key] of KEY_NAMES) {
  const written = Buffer.alloc(8);
  const length = written.write(`"${k}":`, 'latin1');
  KEY_HEAD[key] = written.readInt32LE(0);
  KEY_TAIL[key] = written.readInt32LE(4);
  KEY_TAIL_MASK[key] = length === 8 ? -1 : (1 << (8 * (length - 4))) - 1;
  KEY_LENGTH[key] = length;
}
// `"cpu_op"` as two little-endian words.
const CPU_OP_HEAD = Buffer.from('"cpu', 'latin1').readInt32LE(0);
const CPU_OP_TAIL = Buffer.from('_op"', 'latin1').readInt32LE(0);
/** KEY_NAMES by length and first byte, as CATS_BY_HEAD. */
const KEYS_BY_HEAD: [Uint8Array, number][][] = [];
for (const [k, key] of KEY_NAMES) (KEYS_BY_HEAD[(k.length << 8) | k.charCodeAt(0)] ??= []).push([bytes(k), key]);
/**
 * The key torch's export_chrome_trace (and JSON.stringify of its events) writes after each:
 * "ph", "cat", "name", "pid", "tid", "ts", "dur", "args". The reader guesses it first.
 */
const TORCH_NEXT = new Uint8Array(KEY_START + 1);
TORCH_NEXT[KEY_START] = KEY_PH;
TORCH_NEXT[KEY_PH] = KEY_CAT;
TORCH_NEXT[KEY_CAT] = KEY_NAME;
TORCH_NEXT[KEY_NAME] = KEY_PID;
TORCH_NEXT[KEY_PID] = KEY_TID;
TORCH_NEXT[KEY_TID] = KEY_TS;
TORCH_NEXT[KEY_TS] = KEY_DUR;
TORCH_NEXT[KEY_DUR] = KEY_ARGS;

/** The key of the string body [s, e). */
function keyOf(buf: Buffer, s: number, e: number): number {
  if (e <= s || e - s > 4) return KEY_OTHER;
  const candidates = KEYS_BY_HEAD[((e - s) << 8) | buf[s]];
  if (candidates === undefined) return KEY_OTHER;
  for (let c = 0; c < candidates.length; c++) if (eq(buf, s, e, candidates[c][0])) return candidates[c][1];
  return KEY_OTHER;
}

function isWs(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

function eq(buf: Buffer, s: number, e: number, target: Uint8Array): boolean {
  if (e - s !== target.length) return false;
  for (let k = 0; k < target.length; k++) if (buf[s + k] !== target[k]) return false;
  return true;
}

/** Decodes a JSON string body (without quotes) that holds escapes; raw control characters are kept. */
function unescapeJson(raw: string): string {
  // eslint-disable-next-line no-control-regex
  const safe = raw.replace(/[\u0000-\u001f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  try {
    return JSON.parse(`"${safe}"`) as string;
  } catch {
    return raw; // a broken escape: keep the bytes as they are rather than lose the event
  }
}

/**
 * Ids of raw name bytes, dense from 0 in the order first met: a trace repeats a few thousand kernel
 * names (often hundreds of bytes of C++ template) millions of times, and decoding each into a
 * string to look it up costs more than comparing its bytes with the copy kept of the first.
 */
class RawNameIds {
  /**
   * Open addressing: id + 1 of the name whose hash led here, 0 where free; never more than half
   * full. Typed arrays, not a Map of hash to ids: one lookup per kernel and launch call.
   */
  private slots = new Int32Array(1024);
  private shift = 32 - 10;
  private hashes = new Int32Array(512);
  private readonly raws: Buffer[] = [];
  private buf: Buffer | undefined;
  private words: DataView = new DataView(new ArrayBuffer(0));

  idOf(buf: Buffer, s: number, end: number): number {
    if (buf !== this.buf) {
      this.buf = buf;
      this.words = new DataView(buf.buffer, buf.byteOffset, buf.length);
    }
    const words = this.words;
    // The ends of a name tell names apart best: templates share long prefixes. Four bytes at a time.
    let h = Math.imul(end - s, 0x9e3779b1);
    let i = Math.max(s, end - 32);
    for (; i + 4 <= end; i += 4) h = Math.imul(h ^ words.getInt32(i, true), 16777619);
    for (; i < end; i++) h = Math.imul(h ^ buf[i], 16777619);
    if (end - s >= 8) h = Math.imul(Math.imul(h ^ words.getInt32(s, true), 16777619) ^ words.getInt32(s + 4, true), 16777619);
    const mask = this.slots.length - 1;
    for (let at = Math.imul(h, 0x9e3779b1) >>> this.shift; ; at = (at + 1) & mask) {
      const id = this.slots[at] - 1;
      if (id < 0) return this.add(buf, s, end, h, at);
      if (this.hashes[id] !== h) continue;
      const raw = this.raws[id];
      if (raw.length !== end - s) continue;
      // Short names (runtime calls) compared here; a call into Buffer.compare costs more than that.
      if (raw.length <= 48 ? eq(buf, s, end, raw) : buf.compare(raw, 0, raw.length, s, end) === 0) return id;
    }
  }

  private add(buf: Buffer, s: number, end: number, h: number, at: number): number {
    const id = this.raws.push(Buffer.from(buf.subarray(s, end))) - 1;
    if (id === this.hashes.length) {
      const grown = new Int32Array(2 * id);
      grown.set(this.hashes);
      this.hashes = grown;
    }
    this.hashes[id] = h;
    this.slots[at] = id + 1;
    if (2 * this.raws.length > this.slots.length) {
      this.slots = new Int32Array(2 * this.slots.length);
      this.shift--;
      const mask = this.slots.length - 1;
      for (let k = 0; k < this.raws.length; k++) {
        let to = Math.imul(this.hashes[k], 0x9e3779b1) >>> this.shift;
        while (this.slots[to] !== 0) to = (to + 1) & mask;
        this.slots[to] = k + 1;
      }
    }
    return id;
  }
}

/**
 * One event as the reader sees it. The same object is reused for every event: copy what you keep.
 * Numbers that are missing are NaN; `correlation` is -1 when absent.
 */
export class EventView {
  buf: Buffer = Buffer.alloc(0);
  cat: EventCat = EventCat.None;
  /** First character of `ph` ("X" complete, "M" metadata, "s"/"f" flows, ...), 0 if absent. The other fields are not read for the phases in SKIPPED_PHASES (unless `ph` comes after them). */
  ph = 0;
  ts = NaN;
  dur = NaN;
  /** Numeric pid/tid; NaN when the trace used a string (Kineto's "Spans" rows). */
  pid = NaN;
  tid = NaN;
  correlation = -1;
  nameStart = -1;
  nameEnd = -1;
  nameEscaped = false;
  /** The async event id (`id` of "b"/"e" events) as written, a number or a string; '' when absent. */
  id = '';
  /** rawNameId() of this event once asked, -2 before. */
  private rawId = -2;
  private readonly rawNames = new RawNameIds();

  reset(buf: Buffer): void {
    this.rawId = -2;
    this.buf = buf;
    this.cat = EventCat.None;
    this.ph = 0;
    this.ts = NaN;
    this.dur = NaN;
    this.pid = NaN;
    this.tid = NaN;
    this.correlation = -1;
    this.nameStart = -1;
    this.nameEnd = -1;
    this.nameEscaped = false;
    this.id = '';
  }

  /**
   * An id of the event's name as written, the same for every event of this reading whose name has
   * the same bytes (escapes not decoded; -1 without a name), found once per event however many ask.
   */
  rawNameId(): number {
    if (this.rawId === -2) this.rawId = this.nameStart < 0 ? -1 : this.rawNames.idOf(this.buf, this.nameStart, this.nameEnd);
    return this.rawId;
  }

  /** The event's `name`, decoded only when asked for, control characters made visible (printable.ts). */
  name(): string {
    if (this.nameStart < 0) return '';
    const raw = this.buf.toString('utf8', this.nameStart, this.nameEnd);
    return printable(this.nameEscaped ? unescapeJson(raw) : raw);
  }
}

export interface ReaderSummary {
  /** Top-level keys other than traceEvents, parsed (distributedInfo, deviceProperties, schemaVersion...). */
  metadata: Record<string, unknown>;
  events: number;
  /** Uncompressed JSON bytes read. */
  bytes: number;
  /** Set when the input ended before the document did: what was cut, in words. */
  truncated?: string;
}

type State = 'start' | 'key' | 'colon' | 'value' | 'afterValue' | 'events' | 'afterEvent' | 'done';

/** Feed it chunks with push(), then call end(). Calls `onEvent` once per complete event object. */
export class TraceJsonReader {
  private buf: Buffer = Buffer.alloc(0);
  private pos = 0;
  private base = 0; // bytes dropped before buf[0]
  private state: State = 'start';
  private bareArray = false;
  private currentKey = '';
  private sawTraceEvents = false;
  private readonly view = new EventView();
  private num = 0;
  private nextBackslash = -1;
  /** Indentation of the current event's line in a pretty-printed trace (torch's own layout), or -1 when compact. */
  private eventIndent = -1;
  /** The key guessed after each key (TORCH_NEXT); a table of KEY_OTHER reads every key as a string. */
  private readonly torchNext: Uint8Array = TORCH_NEXT;
  /** The buffer being read, for reading four bytes at once. */
  private words: DataView = new DataView(new ArrayBuffer(0));
  private events = 0;
  private readonly metadata: Record<string, unknown> = {};
  /** Values of top-level keys other than traceEvents are kept only up to this size. */
  private static readonly MAX_META_VALUE = 64 * 1024 * 1024;
  /**
   * No event of a trace is this large (Kineto's are under a few kB; a 100 kB kernel name is rare):
   * an event still open past it is a damaged file, refused before the buffer holding it grows with the file.
   */
  static readonly MAX_EVENT_BYTES = 16 * 1024 * 1024;

  constructor(private readonly onEvent: (event: EventView) => void) {}

  push(chunk: Buffer): void {
    if (this.state === 'done') return;
    if (this.pos < this.buf.length) {
      this.buf = this.pos === 0 ? Buffer.concat([this.buf, chunk]) : Buffer.concat([this.buf.subarray(this.pos), chunk]);
    } else {
      this.buf = chunk;
    }
    this.base += this.pos;
    this.pos = 0;
    this.nextBackslash = -1;
    this.run();
    const pending = this.buf.length - this.pos;
    if (pending > TraceJsonReader.MAX_META_VALUE && this.state !== 'events' && this.state !== 'afterEvent') {
      throw new TraceFormatError(
        `The top-level value "${this.currentKey}" is larger than 64 MB and is not traceEvents; this does not look like a Kineto trace.`,
        this.base + this.pos,
      );
    }
  }

  /**
   * For a caller that reads into a buffer of its own, to spare the copy push() makes of every chunk:
   * `buf[0, length)` is what the last call left unread (moved to the front by the caller) followed
   * by new bytes. Returns how many bytes at the front were used; the caller moves the rest to the
   * front before its next read. The reader keeps no reference to `buf` between calls.
   */
  pushRegion(buf: Buffer, length: number): number {
    if (this.state === 'done') return length;
    this.base += this.pos;
    this.buf = buf.subarray(0, length);
    this.pos = 0;
    this.nextBackslash = -1;
    this.run();
    const used = this.pos;
    if (length - used > TraceJsonReader.MAX_META_VALUE && this.state !== 'events' && this.state !== 'afterEvent') {
      throw new TraceFormatError(
        `The top-level value "${this.currentKey}" is larger than 64 MB and is not traceEvents; this does not look like a Kineto trace.`,
        this.base + this.pos,
      );
    }
    // What is left is the caller's to move: from here on this reader's view of it is the copy.
    this.buf = Buffer.from(this.buf.subarray(used));
    this.base += used;
    this.pos = 0;
    return used;
  }

  /** Call at the end of input. Throws for what is not a trace; a cut document gives `truncated`. */
  end(): ReaderSummary {
    const bytesRead = this.base + this.buf.length;
    let truncated: string | undefined;
    if (this.state === 'start') {
      throw new TraceFormatError(bytesRead === 0 ? 'The file is empty.' : 'The file holds only white space.', bytesRead);
    }
    if (this.state !== 'done') {
      const inEvents = this.state === 'events' || this.state === 'afterEvent';
      if (!this.sawTraceEvents && !inEvents) {
        throw new TraceFormatError(
          `The JSON document ends early (at byte ${bytesRead}) before any "traceEvents" array: this is not a complete trace.`,
          bytesRead,
        );
      }
      const partial = this.buf.length - this.pos;
      if (inEvents && partial > 0 && this.buf[this.buf.length - 1] === 0) this.failNulPadding(this.pos, this.buf.length);
      truncated = inEvents
        ? `The trace ends inside traceEvents after ${this.events} complete events (byte ${bytesRead})${partial > 0 ? `; a cut event of ${partial} bytes was dropped` : ''}.`
        : `The trace ends after traceEvents, inside the top-level value "${this.currentKey}" (byte ${bytesRead}); all events were read.`;
    } else if (!this.sawTraceEvents) {
      const keys = Object.keys(this.metadata).slice(0, 8).join(', ');
      throw new TraceFormatError(`This JSON has no "traceEvents" array (top-level keys: ${keys || 'none'}): it is not a Chrome/Kineto trace.`, bytesRead);
    }
    return { metadata: this.metadata, events: this.events, bytes: bytesRead, truncated };
  }

  private fail(what: string, at: number): never {
    const offset = this.base + at;
    const near = this.buf.toString('latin1', Math.max(0, at - 20), Math.min(this.buf.length, at + 20)).replace(/[^\x20-\x7e]/g, '.');
    throw new TraceFormatError(`Not valid trace JSON at byte ${offset}: ${what} (near "${near}").`, offset);
  }

  /**
   * Refuses a file whose bytes turn to NULs inside traceEvents (`end`: where the buffer's trailing
   * NULs end, searching back no further than `from`): a pre-allocated or sparse file whose writer
   * had not finished, or a copy taken while it was written. JSON holds no raw NUL; without this the
   * cut event would grow with the padding.
   */
  private failNulPadding(from: number, end: number): never {
    let at = end;
    while (at > from && this.buf[at - 1] === 0) at--;
    const offset = this.base + at;
    throw new TraceFormatError(
      `The trace's data stop at byte ${offset}, inside traceEvents after ${this.events} events: from there on the file holds NUL bytes (a pre-allocated or sparse file whose writer had not finished, or a copy taken while it was being written). Copy the trace again once the profiler has finished writing it.`,
      offset,
    );
  }

  private run(): void {
    const buf = this.buf;
    this.words = new DataView(buf.buffer, buf.byteOffset, buf.length);
    const n = buf.length;
    let i = this.pos;
    for (;;) {
      while (i < n && isWs(buf[i])) i++;
      if (i >= n) break;
      const c = buf[i];
      if (this.state === 'events') {
        if (c === LBRACE) {
          const end = this.parseEvent(buf, i, n);
          if (end === NEED_MORE) {
            // An event cut by the end of the buffer: unless the rest is NUL padding or too large to be one.
            if (buf[n - 1] === 0) this.failNulPadding(i, n);
            if (n - i > TraceJsonReader.MAX_EVENT_BYTES)
              this.fail(`an event longer than ${TraceJsonReader.MAX_EVENT_BYTES >> 20} MB (no profiler writes one; the file is damaged)`, i);
            break;
          }
          this.events++;
          this.onEvent(this.view);
          i = end;
          // The comma before the next event read here, not by another turn of the loop.
          while (i < n && isWs(buf[i])) i++;
          if (i < n && buf[i] === COMMA) i++;
          else this.state = 'afterEvent';
        } else if (c === RBRACK) {
          i++;
          this.state = this.bareArray ? 'done' : 'afterValue';
        } else if (c === 0) {
          this.failNulPadding(i, i);
        } else {
          this.fail('expected an event object', i);
        }
      } else if (this.state === 'afterEvent') {
        if (c === COMMA) {
          i++;
          this.state = 'events';
        } else if (c === RBRACK) {
          i++;
          this.state = this.bareArray ? 'done' : 'afterValue';
        } else if (c === 0) {
          this.failNulPadding(i, i);
        } else {
          this.fail('expected "," or "]" after an event', i);
        }
      } else if (this.state === 'start') {
        if (c === BOM[0] && this.base + i === 0) {
          // A byte order mark (Windows editors write one): UTF-8 says nothing more, so it is passed over.
          if (n - i < BOM.length) break;
          if (buf[i + 1] === BOM[1] && buf[i + 2] === BOM[2]) {
            i += BOM.length;
            continue;
          }
        }
        if (c === LBRACE) {
          this.state = 'key';
          i++;
        } else if (c === LBRACK) {
          // The JSON Array Format of Chrome traces: a bare list of events.
          this.bareArray = true;
          this.sawTraceEvents = true;
          this.state = 'events';
          i++;
        } else {
          this.fail('a trace starts with "{" or "["; this is not JSON (or is compressed with something other than gzip)', i);
        }
      } else if (this.state === 'key') {
        if (c === RBRACE) {
          i++;
          this.state = 'done';
          continue;
        }
        if (c !== Q) this.fail('expected a key', i);
        const end = this.stringEnd(buf, i + 1, n);
        if (end === NEED_MORE) break;
        this.currentKey = unescapeJson(buf.toString('utf8', i + 1, end));
        i = end + 1;
        this.state = 'colon';
      } else if (this.state === 'colon') {
        if (c !== COLON) this.fail('expected ":"', i);
        i++;
        this.state = 'value';
      } else if (this.state === 'value') {
        if (this.currentKey === K_TRACE_EVENTS) {
          if (c !== LBRACK) this.fail('"traceEvents" is not an array', i);
          this.sawTraceEvents = true;
          this.state = 'events';
          i++;
          continue;
        }
        const end = this.skipValue(buf, i, n);
        if (end === NEED_MORE) break;
        this.metadata[this.currentKey] = parseSmall(buf.toString('utf8', i, end));
        i = end;
        this.state = 'afterValue';
      } else if (this.state === 'afterValue') {
        if (c === COMMA) {
          i++;
          this.state = 'key';
        } else if (c === RBRACE) {
          i++;
          this.state = 'done';
        } else {
          this.fail('expected "," or "}" between top-level keys', i);
        }
      } else {
        // 'done': white space and NULs after the document are passed over (some writers append a
        // newline, a pre-allocated file NULs); anything else is a second document or a damaged copy.
        while (i < n && (buf[i] === 0 || isWs(buf[i]))) i++;
        if (i < n) {
          const offset = this.base + i;
          const near = buf.toString('latin1', i, Math.min(n, i + 40)).replace(/[^\x20-\x7e]/g, '.');
          throw new TraceFormatError(
            `The trace's JSON document is followed by more at byte ${offset} ("${near}"): two traces joined into one file, or a damaged copy. Analyse each trace from its own file.`,
            offset,
          );
        }
      }
    }
    this.pos = i;
  }

  /** Whether [s, e) holds a backslash. The next backslash's index is cached: one search per buffer, not per string. */
  private backslashBefore(buf: Buffer, s: number, e: number): boolean {
    if (this.nextBackslash < s) {
      const k = buf.indexOf(BS, s);
      this.nextBackslash = k < 0 ? Infinity : k;
    }
    return this.nextBackslash < e;
  }

  /** Index of the closing quote of a string whose body starts at i, or NEED_MORE. */
  private stringEnd(buf: Buffer, i: number, n: number): number {
    // Most strings of a trace are short (keys, "X", "cpu_op"): a loop in JS finds their end sooner
    // than a call into Buffer.indexOf, whose cost per call is that of a hundred bytes scanned here.
    const stop = Math.min(n, i + 64);
    for (let j = i; j < stop; j++) {
      const c = buf[j];
      if (c === Q) return j;
      if (c === BS) break;
    }
    for (;;) {
      const q = buf.indexOf(Q, i);
      if (q < 0 || q >= n) return NEED_MORE;
      // An escaped quote has an odd number of backslashes before it.
      let b = q - 1;
      while (b >= i && buf[b] === BS) b--;
      if ((q - 1 - b) % 2 === 0) return q;
      i = q + 1;
    }
  }

  /** End of the object or array whose opening bracket came before i (exclusive), or NEED_MORE. */
  private skipRest(buf: Buffer, i: number, n: number): number {
    let depth = 1;
    while (i < n) {
      const d = buf[i];
      if (d === Q) {
        const e = this.stringEnd(buf, i + 1, n);
        if (e === NEED_MORE) return NEED_MORE;
        i = e + 1;
        continue;
      }
      if (d === LBRACE || d === LBRACK) depth++;
      else if ((d === RBRACE || d === RBRACK) && --depth === 0) return i + 1;
      i++;
    }
    return NEED_MORE;
  }

  /** End of the JSON value starting at i (exclusive), or NEED_MORE. */
  private skipValue(buf: Buffer, i: number, n: number): number {
    const c = buf[i];
    if (c === Q) {
      const e = this.stringEnd(buf, i + 1, n);
      return e === NEED_MORE ? NEED_MORE : e + 1;
    }
    if (c === LBRACE || c === LBRACK) return this.skipRest(buf, i + 1, n);
    // number, true, false, null: up to the next delimiter
    let j = i;
    while (j < n) {
      const d = buf[j];
      if (d === COMMA || d === RBRACE || d === RBRACK || isWs(d)) return j;
      j++;
    }
    return NEED_MORE;
  }

  /** Parses a number at i into this.num; returns its end, or NEED_MORE. Exact for Kineto's "123.456". */
  private parseNumber(buf: Buffer, i: number, n: number): number {
    let j = i;
    let neg = false;
    if (buf[j] === 0x2d) {
      neg = true;
      j++;
    }
    let int = 0;
    let digits = 0;
    while (j < n) {
      const d = buf[j] - 0x30;
      if (d < 0 || d > 9) break;
      int = int * 10 + d;
      digits++;
      j++;
    }
    if (j >= n) return NEED_MORE;
    let scale = 1;
    if (buf[j] === 0x2e) {
      j++;
      while (j < n) {
        const d = buf[j] - 0x30;
        if (d < 0 || d > 9) break;
        int = int * 10 + d;
        scale *= 10;
        digits++;
        j++;
      }
      if (j >= n) return NEED_MORE;
    }
    const c = buf[j];
    if (c === 0x65 || c === 0x45 || digits === 0 || int > 9007199254740991) {
      // exponent, too many digits to be exact, or not a number at all: let the engine parse it
      const end = this.skipValue(buf, i, n);
      if (end === NEED_MORE) return NEED_MORE;
      this.num = Number(buf.toString('latin1', i, end));
      return end;
    }
    const v = scale === 1 ? int : int / scale;
    this.num = neg ? -v : v;
    return j;
  }

  /**
   * Parses one event object starting at the "{" at i; fills this.view. Returns its end or NEED_MORE.
   * Each key is first guessed to be the one torch writes next (TORCH_NEXT) and matched by its bytes
   * with the `":` after it, two words read; a key written otherwise is read as a string and looked
   * up. Both ways give the same key and the same place for its value, which one code reads.
   */
  private parseEvent(buf: Buffer, i: number, n: number): number {
    const v = this.view;
    v.reset(buf);
    this.eventIndent = buf[i + 1] === NL ? lineIndent(buf, i) : -1;
    i++;
    const next = this.torchNext;
    const words = this.words;
    let guess = next[KEY_START];
    for (;;) {
      while (i < n && isWs(buf[i])) i++;
      let key: number;
      if (
        guess !== KEY_OTHER &&
        i + 8 <= n &&
        words.getInt32(i, true) === KEY_HEAD[guess] &&
        (words.getInt32(i + 4, true) & KEY_TAIL_MASK[guess]) === KEY_TAIL[guess]
      ) {
        key = guess;
        i += KEY_LENGTH[guess];
      } else {
        if (i >= n) return NEED_MORE;
        const c = buf[i];
        if (c === RBRACE) return i + 1;
        if (c !== Q) this.fail('expected a key inside an event', i);
        const ks = i + 1;
        const ke = this.stringEnd(buf, ks, n);
        if (ke === NEED_MORE) return NEED_MORE;
        i = ke + 1;
        while (i < n && isWs(buf[i])) i++;
        if (i >= n) return NEED_MORE;
        if (buf[i] !== COLON) this.fail('expected ":" inside an event', i);
        i++;
        key = keyOf(buf, ks, ke);
      }
      while (i < n && isWs(buf[i])) i++;
      if (i >= n) return NEED_MORE;
      let end: number;
      switch (key) {
        case KEY_PH:
          if (buf[i] === Q) {
            // One character, as every phase is: its end found without a search.
            const se = i + 2 < n && buf[i + 2] === Q && buf[i + 1] !== BS && buf[i + 1] !== Q ? i + 2 : this.stringEnd(buf, i + 1, n);
            if (se === NEED_MORE) return NEED_MORE;
            v.ph = se > i + 1 ? buf[i + 1] : 0;
            // Flows (two per kernel in a Kineto trace), counters and metadata are counted, not read.
            // torch writes "ph" first. Other phases are read on, so that GPU work written so is not lost.
            if (SKIPPED_PHASES[v.ph]) return this.closeEvent(buf, se + 1, n);
            end = se + 1;
          } else {
            end = this.skipValue(buf, i, n);
          }
          break;
        case KEY_CAT:
          if (i + 8 <= n && words.getInt32(i, true) === CPU_OP_HEAD && words.getInt32(i + 4, true) === CPU_OP_TAIL) {
            // "cpu_op", half of a trace's events, told by two reads.
            v.cat = EventCat.CpuOp;
            return this.closeEvent(buf, i + 8, n);
          }
          if (buf[i] === Q) {
            const se = this.stringEnd(buf, i + 1, n);
            if (se === NEED_MORE) return NEED_MORE;
            v.cat = catOf(buf, i + 1, se);
            // CPU ops (most of a real trace's events) and other categories are only counted: skip
            // the rest of the object without reading its keys. torch writes "cat" second.
            if (v.cat === EventCat.CpuOp || v.cat === EventCat.Other) return this.closeEvent(buf, se + 1, n);
            end = se + 1;
          } else {
            end = this.skipValue(buf, i, n);
          }
          break;
        case KEY_NAME:
          if (buf[i] === Q) {
            const se = this.stringEnd(buf, i + 1, n);
            if (se === NEED_MORE) return NEED_MORE;
            v.nameStart = i + 1;
            v.nameEnd = se;
            v.nameEscaped = this.backslashBefore(buf, i + 1, se);
            end = se + 1;
          } else {
            end = this.skipValue(buf, i, n);
          }
          break;
        case KEY_PID:
          end = this.numberOrSkip(buf, i, n);
          v.pid = this.num;
          break;
        case KEY_TID:
          end = this.numberOrSkip(buf, i, n);
          v.tid = this.num;
          break;
        case KEY_TS:
          end = this.numberOrSkip(buf, i, n);
          v.ts = this.num;
          break;
        case KEY_DUR:
          end = this.numberOrSkip(buf, i, n);
          v.dur = this.num;
          break;
        case KEY_ARGS:
          // Only the correlation id of GPU work and launches is read; the rest is skipped.
          end = buf[i] === LBRACE && (v.cat === EventCat.None || HAS_CORRELATION[v.cat]) ? this.parseArgs(buf, i, n) : this.skipValue(buf, i, n);
          break;
        case KEY_ID:
          // Pairs async begin/end events (phases.ts); flows, which carry one too, were skipped at their "ph".
          end = this.skipValue(buf, i, n);
          if (end !== NEED_MORE) v.id = buf.toString('latin1', i, end);
          break;
        default:
          end = this.skipValue(buf, i, n);
      }
      if (end === NEED_MORE) return NEED_MORE;
      i = end;
      while (i < n && isWs(buf[i])) i++;
      if (i >= n) return NEED_MORE;
      const c = buf[i];
      if (c === COMMA) i++;
      else if (c === RBRACE) return i + 1;
      else this.fail('expected "," or "}" inside an event', i);
      guess = next[key];
    }
  }

  /** End of the current event, the rest of which from i is not read. */
  private closeEvent(buf: Buffer, i: number, n: number): number {
    return this.eventIndent >= 0 ? closeAtIndent(buf, i, n, this.eventIndent) : this.skipRest(buf, i, n);
  }

  /** A number, or (for string pids such as "Spans") NaN after skipping the value. */
  private numberOrSkip(buf: Buffer, i: number, n: number): number {
    const c = buf[i];
    if (c === 0x2d || (c >= 0x30 && c <= 0x39)) return this.parseNumber(buf, i, n);
    this.num = NaN;
    return this.skipValue(buf, i, n);
  }

  private parseArgs(buf: Buffer, i: number, n: number): number {
    const indent = buf[i + 1] === NL ? lineIndent(buf, i) : -1;
    const words = this.words;
    i++;
    for (;;) {
      // torch puts six spaces between some keys of "args": four at a time.
      while (i + 4 <= n && words.getInt32(i, true) === SPACES) i += 4;
      while (i < n && isWs(buf[i])) i++;
      if (i >= n) return NEED_MORE;
      let c = buf[i];
      if (c === RBRACE) return i + 1;
      if (c !== Q) this.fail('expected a key inside "args"', i);
      const ks = i + 1;
      const ke = this.stringEnd(buf, ks, n);
      if (ke === NEED_MORE) return NEED_MORE;
      i = ke + 1;
      while (i < n && isWs(buf[i])) i++;
      if (i >= n) return NEED_MORE;
      if (buf[i] !== COLON) this.fail('expected ":" inside "args"', i);
      i++;
      while (i < n && isWs(buf[i])) i++;
      if (i >= n) return NEED_MORE;
      let end: number;
      if (ke - ks === 11 && buf[ks] === 0x63 && eq(buf, ks, ke, K_CORRELATION)) {
        end = this.numberOrSkip(buf, i, n);
        if (end === NEED_MORE) return NEED_MORE;
        if (!Number.isNaN(this.num)) {
          this.view.correlation = this.num;
          // Nothing after the correlation id is read: skip to the end of "args".
          return indent >= 0 ? closeAtIndent(buf, end, n, indent) : this.skipRest(buf, end, n);
        }
      } else {
        end = this.skipValue(buf, i, n);
      }
      if (end === NEED_MORE) return NEED_MORE;
      i = end;
      while (i < n && isWs(buf[i])) i++;
      if (i >= n) return NEED_MORE;
      c = buf[i];
      if (c === COMMA) i++;
      else if (c === RBRACE) return i + 1;
      else this.fail('expected "," or "}" inside "args"', i);
    }
  }
}

const NL = 0x0a;
const SP = 0x20;
const SPACES = 0x20202020;

/**
 * Spaces that open the line holding `pos`, or -1 when it is not a pretty-printed line. A pretty
 * printer (torch's export_chrome_trace, json.dump(indent=...), JSON.stringify(v, null, n)) puts an
 * object's closing brace on a line of its own at the indentation of the line that opened it, and
 * everything inside deeper; JSON strings hold no raw newline. So that brace is the first newline,
 * that many spaces and "}" after the opening: found with one search instead of a scan of every byte.
 */
function lineIndent(buf: Buffer, pos: number): number {
  let b = pos;
  while (b > 0 && buf[b - 1] !== NL) {
    if (pos - b > 256) return -1;
    b--;
  }
  if (b === 0) return -1;
  let w = 0;
  while (buf[b + w] === SP) w++;
  return w <= 64 ? w : -1;
}

/**
 * End of the pretty-printed object whose opening line is indented `indent` spaces, searching from i
 * for the first newline, `indent` spaces and "}"; NEED_MORE if not in the buffer yet. It searches
 * for the "}" alone and looks back: a search for one byte is a memchr, while one for the newline
 * first (the pattern's first byte) stops at every line, five times slower on torch's layout.
 */
function closeAtIndent(buf: Buffer, i: number, n: number, indent: number): number {
  let from = i + indent + 1;
  for (;;) {
    const at = buf.indexOf(RBRACE, from);
    if (at < 0 || at >= n) return NEED_MORE;
    from = at + 1;
    if (buf[at - indent - 1] === NL) {
      let k = at - indent;
      while (k < at && buf[k] === SP) k++;
      if (k === at) return at + 1;
    }
    // A closing brace of something nested (torch's "args"): the object's own is usually the next
    // line, looked at here rather than by another search.
    if (buf[from] === NL) {
      let k = from + 1;
      const stop = k + indent;
      while (k < stop && k < n && buf[k] === SP) k++;
      if (k === stop && k < n && buf[k] === RBRACE) return k + 1;
    }
  }
}

/** Parses a small top-level value; control characters inside strings are escaped first. */
function parseSmall(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    try {
      // eslint-disable-next-line no-control-regex
      return JSON.parse(text.replace(/[\u0000-\u001f]/g, (c) => (c === '\n' || c === '\r' || c === '\t' ? c : ' ')));
    } catch {
      return text;
    }
  }
}
