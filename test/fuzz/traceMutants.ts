// Hostile variants of the real traces in test/fixtures/traces, for the analyzer's fuzz test and
// bench/trace-fuzz.ts: impossible times, kernels before their launch or far outside the trace,
// begin/end, async and instant phases and unknown ones, control characters in names, events in
// another order, cut, corrupt, NUL-padded or sparse files. Seeded, so a failing mutant can be made
// again from its seed and number. A mutant says what its analysis must give where that is known:
// the figures of another file (a shuffle, a pair, padding change nothing), a warning (GPU work
// with no duration), or a refusal (a file whose data stop in NULs).
import { readFileSync } from 'node:fs';
import { gunzipSync, gzipSync } from 'node:zlib';
import { RankBreakdown, TraceBreakdown } from '../../src/core/trace/types';

type TraceEvent = Record<string, unknown> & { ph?: unknown; cat?: unknown; name?: unknown; ts?: unknown; dur?: unknown; args?: Record<string, unknown> };

/** One fixture, parsed once: events kept as their JSON text, so a mutant re-serializes only what it changes. */
export interface TraceBase {
  file: string;
  head: Record<string, unknown>;
  events: TraceEvent[];
  texts: string[];
  /** Indices of GPU work (kernels, copies), launch calls and annotations: what mutations aim at. */
  gpu: number[];
  cpu: number[];
  /** The trace's time span in microseconds: every complete event's start and end. */
  spanUs: { start: number; end: number };
}

const GPU_CATS = new Set(['kernel', 'gpu_memcpy', 'gpu_memset']);
const CPU_CATS = new Set(['cuda_runtime', 'cuda_driver', 'user_annotation', 'gpu_user_annotation']);

/**
 * Parses a fixture. `gpuEvents` keeps only the stretch of time that holds the trace's first that many
 * GPU events (and the CPU events and metadata of that stretch), so that the unit test's mutants are
 * small enough to analyse hundreds.
 */
export function loadTraceBase(file: string, gpuEvents = Infinity): TraceBase {
  const doc = JSON.parse(gunzipSync(readFileSync(file)).toString('utf8')) as Record<string, unknown> & { traceEvents: TraceEvent[] };
  const { traceEvents, ...head } = doc;
  const starts = traceEvents.filter((e) => GPU_CATS.has(e.cat as string) && typeof e.ts === 'number').map((e) => e.ts as number);
  starts.sort((a, b) => a - b);
  let kept = traceEvents;
  if (starts.length > gpuEvents) {
    const [first, last] = [starts[0], starts[gpuEvents]];
    kept = traceEvents.filter((e) => typeof e.ts !== 'number' || (e.ts >= first - 1000 && e.ts < last));
  }
  const base: TraceBase = {
    file,
    head,
    events: kept,
    texts: kept.map((e) => JSON.stringify(e)),
    gpu: [],
    cpu: [],
    spanUs: { start: Infinity, end: -Infinity },
  };
  kept.forEach((e, i) => {
    if (GPU_CATS.has(e.cat as string)) base.gpu.push(i);
    else if (CPU_CATS.has(e.cat as string)) base.cpu.push(i);
    if (e.ph === 'X' && typeof e.ts === 'number' && typeof e.dur === 'number' && e.cat !== 'Trace') {
      base.spanUs.start = Math.min(base.spanUs.start, e.ts);
      base.spanUs.end = Math.max(base.spanUs.end, e.ts + e.dur);
    }
  });
  return base;
}

/** A small seeded generator (mulberry32): the same seed gives the same mutants on every machine. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface Mutant {
  /** What was done, for a failure message. */
  what: string;
  bytes: Buffer;
  /**
   * A file whose analysis this mutant's must equal, figure for figure: the unmutated trace where
   * every change is one that changes nothing (a pair for a complete event, NULs after the
   * document), the mutant in file order where its events were shuffled.
   */
  sameAs?: Buffer;
  /** GPU work was written with no duration (an instant): a warning must say so. */
  mustWarn?: RegExp;
  /** The file must be refused (TraceFormatError), not analysed: its data stop in NULs. */
  mustRefuse?: boolean;
}

type EventMutation = (e: TraceEvent, pick: <T>(xs: readonly T[]) => T) => TraceEvent | TraceEvent[] | string;

/** Mutations that write the same event another way: the analysis must not change. */
const NEUTRAL = new Set(['ph B/E pair', 'ph b/e pair (async, by id)']);
/** Mutations that leave GPU work without a duration: the analysis must warn. */
const INSTANT = 'ph i (instant)';

// A literal written into the JSON where JSON.stringify cannot write it (Python's json.dump writes NaN
// and Infinity as bare tokens; 1e999 overflows to Infinity).
const RAW = (key: string, literal: string) => (e: TraceEvent) => JSON.stringify({ ...e, [key]: '@@RAW@@' }).replace('"@@RAW@@"', literal);

const EVENT_MUTATIONS: Record<string, EventMutation> = {
  'dur 1e308': (e) => ({ ...e, dur: 1e308 }),
  'dur Infinity': RAW('dur', '1e999'),
  'dur NaN': RAW('dur', 'NaN'),
  'dur negative': (e) => ({ ...e, dur: -1e6 }),
  'dur a year': (e) => ({ ...e, dur: 3.15e13 }),
  'ts 0': (e) => ({ ...e, ts: 0 }),
  'ts negative': (e) => ({ ...e, ts: -5e12 }),
  'ts 1e308': (e) => ({ ...e, ts: 1e308 }),
  'ts a second early': (e) => ({ ...e, ts: (e.ts as number) - 1e6 }),
  'ts a day late': (e) => ({ ...e, ts: (e.ts as number) + 8.64e10 }),
  'ts as a string': (e) => ({ ...e, ts: String(e.ts) }),
  'ph B/E pair': (e) => [
    { ...e, ph: 'B', dur: undefined },
    { ...e, ph: 'E', ts: (e.ts as number) + ((e.dur as number) || 0), dur: undefined },
  ],
  'ph b/e pair (async, by id)': (e) => [
    { ...e, ph: 'b', id: `0x${Math.round((e.ts as number) % 1e6).toString(16)}`, dur: undefined },
    {
      ph: 'e',
      cat: e.cat,
      name: e.name,
      pid: e.pid,
      tid: e.tid,
      id: `0x${Math.round((e.ts as number) % 1e6).toString(16)}`,
      ts: (e.ts as number) + ((e.dur as number) || 0),
    },
  ],
  [INSTANT]: (e) => ({ ...e, ph: 'i', s: 't', dur: undefined }),
  'ph unknown': (e, pick) => ({ ...e, ph: pick(['Q', 'x', '', 'XX']) }),
  'ph missing': (e) => ({ ...e, ph: undefined }),
  'name with ESC, BEL, NUL': (e) => ({ ...e, name: `\u001b]0;owned\u0007\u001b[31m${String(e.name)}\u0000\u009b2J` }),
  'name 100 kB': (e) => ({ ...e, name: `${String(e.name)}${'<a'.repeat(50_000)}` }),
  'name not a string': (e) => ({ ...e, name: 42 }),
  'correlation changed': (e, pick) => ({ ...e, args: { ...e.args, correlation: pick([-1, 0, 2 ** 31 + 5, 1e300, 'x']) } }),
  'cat changed': (e, pick) => ({ ...e, cat: pick(['kernel', 'cuda_runtime', 'user_annotation', 'gpu_user_annotation', 'Kernel', 'nonsense']) }),
  duplicated: (e) => [e, e],
  removed: () => [],
};

const FILE_MUTATIONS = ['cut short', 'gzip corrupt', 'gzip cut', 'UTF-8 BOM', 'NULs after the document', 'cut, then NULs', 'cut, then a sparse hole'] as const;

const GPU = new Set(['kernel', 'gpu_memcpy', 'gpu_memset']);

function shuffle<T>(xs: T[], random: () => number): T[] {
  const out = [...xs];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

/** The unmutated fixture as the JSON a mutant is made from (compact, every event). */
export function baseBytes(base: TraceBase): Buffer {
  return Buffer.from(`${JSON.stringify(base.head).slice(0, -1)},"traceEvents":[${base.texts.join(',')}]}`);
}

/**
 * The `n`th mutant of a fixture for a seed: one to three events changed (or none), then at times its
 * events shuffled, then at times the file's bytes.
 */
export function mutant(base: TraceBase, seed: number, n: number): Mutant {
  // The fixture's name goes into the seed too, so that each fixture gets its own sequence of mutations.
  let h = seed * 100_003 + n;
  for (const c of base.file.split(/[\\/]/).pop() ?? '') h = Math.imul(h ^ c.charCodeAt(0), 16777619);
  const random = seededRandom(h);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)];
  const names = Object.keys(EVENT_MUTATIONS);
  const changed = new Map<number, string>();
  const kinds = new Map<number, string>();
  const what: string[] = [];
  // A fifth of the mutants only shuffle: the order alone is what they test.
  const edits = random() < 0.2 ? 0 : 1 + Math.floor(random() * 3);
  for (let k = 0; k < edits; k++) {
    const pool = random() < 0.75 || !base.cpu.length ? base.gpu : base.cpu;
    if (!pool.length) break;
    const at = pick(pool);
    const name = pick(names);
    const out = EVENT_MUTATIONS[name](base.events[at], pick);
    const text = typeof out === 'string' ? out : Array.isArray(out) ? out.map((x) => JSON.stringify(x)).join(',') : JSON.stringify(out);
    changed.set(at, text);
    kinds.set(at, name);
    what.push(`${name} on event ${at} (${String(base.events[at].cat)})`);
  }
  let texts = changed.size ? base.texts.map((t, i) => changed.get(i) ?? t).filter((t) => t !== '') : base.texts;
  const doc = (events: string[]) => Buffer.from(`${JSON.stringify(base.head).slice(0, -1)},"traceEvents":[${events.join(',')}]}`);
  let json = doc(texts);
  // Every change writes the same events another way: the figures are the unmutated trace's.
  let sameAs = [...kinds.values()].every((k) => NEUTRAL.has(k)) ? baseBytes(base) : undefined;
  const instants = [...kinds].filter(([at, k]) => k === INSTANT && GPU.has(base.events[at].cat as string)).length;
  let mustWarn = instants ? /written as instant events/ : undefined;
  if (edits === 0 || random() < 0.2) {
    // Events in another order: the figures are those of the same events in file order. A pair's two
    // halves stay in order (an end before its begin is no pair at all).
    what.push('events shuffled');
    sameAs ??= json;
    texts = shuffle(texts, random);
    json = doc(texts);
  }
  let gzip = random() < 0.2;
  let mustRefuse = false;
  if (random() < 0.2) {
    const file = pick(FILE_MUTATIONS);
    what.push(file);
    if (file === 'cut short') {
      json = json.subarray(0, Math.floor(random() * json.length));
      sameAs = undefined;
      mustWarn = undefined;
    } else if (file === 'UTF-8 BOM') json = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), json]);
    else if (file === 'NULs after the document') json = Buffer.concat([json, Buffer.alloc(1 + Math.floor(random() * (1 << 20)))]);
    else if (file === 'cut, then NULs' || file === 'cut, then a sparse hole') {
      // Cut inside traceEvents (past the header), then NULs: a file its writer had not finished.
      const start = json.indexOf('"traceEvents":[') + 20;
      json = Buffer.concat([
        json.subarray(0, start + Math.floor(random() * (json.length - start - 2))),
        Buffer.alloc(file === 'cut, then NULs' ? 4096 : 8 << 20),
      ]);
      sameAs = undefined;
      mustWarn = undefined;
      mustRefuse = true;
    } else {
      const z = gzipSync(json, { level: 1 });
      if (file === 'gzip cut') return { what: what.join('; '), bytes: z.subarray(0, Math.floor(random() * z.length)) };
      const at = Math.floor(random() * z.length);
      z[at] ^= 0xff;
      return { what: what.join('; '), bytes: z };
    }
    gzip = false;
  }
  return { what: what.join('; '), bytes: gzip ? gzipSync(json, { level: 1 }) : json, sameAs, mustWarn, mustRefuse };
}

const FILE_FACTS = new Set(['file', 'files', 'analysis', 'jsonBytes', 'fileBytes', 'compressed', 'events']);

/**
 * Where two analyses of the same events differ in what a user reads, or undefined: everything but
 * the file's facts (names, sizes, compression, how many JSON events: a pair is two) and the way it
 * was read (streaming or in memory). Numbers agree within a millionth, or 5e-4 (half a
 * microsecond where the unit is ms, below what any table prints): a pair's end written as start +
 * duration at 1.7e12 us is off by up to 2.4e-4 us, and sums taken in another order differ in their
 * last bits.
 */
export function figureDifference(got: TraceBreakdown, expected: TraceBreakdown): string | undefined {
  const walk = (a: unknown, b: unknown, path: string): string | undefined => {
    if (typeof a === 'number' && typeof b === 'number') {
      return a === b || Math.abs(a - b) <= 1e-6 * Math.max(Math.abs(a), Math.abs(b)) + 5e-4 ? undefined : `${path}: ${a} against ${b}`;
    }
    if (Array.isArray(a) && Array.isArray(b)) {
      if (a.length !== b.length) return `${path}: ${a.length} entries against ${b.length}`;
      for (let i = 0; i < a.length; i++) {
        const d = walk(a[i], b[i], `${path}[${i}]`);
        if (d) return d;
      }
      return undefined;
    }
    if (a && b && typeof a === 'object' && typeof b === 'object') {
      const keys = new Set([...Object.keys(a), ...Object.keys(b)].filter((k) => !FILE_FACTS.has(k)));
      for (const k of keys) {
        const d = walk((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], path ? `${path}.${k}` : k);
        if (d) return d;
      }
      return undefined;
    }
    return a === b ? undefined : `${path}: ${JSON.stringify(a)?.slice(0, 200)} against ${JSON.stringify(b)?.slice(0, 200)}`;
  };
  return walk(got, expected, '');
}

// C0 and C1 control characters and DEL: what a terminal acts on.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/**
 * What is impossible in an analysis of a mutant of `base`: a number that is not finite, a share
 * outside 0..100, a step or span longer than the trace, a kernel started before its launch call, a
 * control character in a name or message. Empty when the result is possible.
 */
export function impossibleFigures(b: TraceBreakdown, base: TraceBase): string[] {
  const problems: string[] = [];
  const spanMs = (base.spanUs.end - base.spanUs.start) / 1000;
  const walk = (v: unknown, path: string): void => {
    if (typeof v === 'number') {
      if (!Number.isFinite(v)) problems.push(`${path} is ${v}`);
      else if (/(sharePct|Pct)$/.test(path) && !path.endsWith('spreadPct') && (v < -1e-9 || v > 100 + 1e-6)) problems.push(`${path} is ${v}%`);
    } else if (typeof v === 'string') {
      if (CONTROL.test(v)) problems.push(`${path} holds a control character: ${JSON.stringify(v.slice(0, 80))}`);
    } else if (Array.isArray(v)) v.forEach((x, i) => walk(x, `${path}[${i}]`));
    else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) walk(x, path ? `${path}.${k}` : k);
  };
  walk(b, '');
  if (/Infinity|NaN/.test(b.headline)) problems.push(`headline: ${b.headline}`);
  const within = (ms: number | undefined, what: string) => {
    if (ms !== undefined && ms > spanMs * 1.0001 + 1e-6) problems.push(`${what} ${ms} ms is longer than the trace (${spanMs.toFixed(3)} ms)`);
  };
  const rankChecks = (r: RankBreakdown, at: string) => {
    within(r.totals.gpuSpanMs, `${at}.totals.gpuSpanMs`);
    for (const g of ['decode', 'prefill', 'mixed'] as const) {
      within(r[g]?.stepMs?.max, `${at}.${g}.stepMs.max`);
      if (r[g]?.stepMs && r[g]!.stepMs!.min < 0) problems.push(`${at}.${g}.stepMs.min is negative`);
    }
    const l2s = r.launch?.launchToStartUs;
    if (l2s && l2s.min < 0) problems.push(`${at}.launch.launchToStartUs.min is ${l2s.min} us: a kernel started before its launch call`);
  };
  b.ranks.forEach((r, i) => rankChecks(r, `ranks[${i}]`));
  within(b.overall.stepMs?.max, 'overall.stepMs.max');
  return problems;
}
