// Hostile variants of the real traces in test/fixtures/traces, for the analyzer's fuzz test and
// bench/trace-fuzz.ts: impossible times, kernels before their launch or far outside the trace,
// begin/end pairs and unknown phases, control characters in names, cut or corrupt files. Seeded,
// so a failing mutant can be made again from its seed and number.
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
}

type EventMutation = (e: TraceEvent, pick: <T>(xs: readonly T[]) => T) => TraceEvent | TraceEvent[] | string;

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

const FILE_MUTATIONS = ['cut short', 'gzip corrupt', 'gzip cut', 'UTF-8 BOM'] as const;

/** The `n`th mutant of a fixture for a seed: one to three events changed, or the file's bytes. */
export function mutant(base: TraceBase, seed: number, n: number): Mutant {
  // The fixture's name goes into the seed too, so that each fixture gets its own sequence of mutations.
  let h = seed * 100_003 + n;
  for (const c of base.file.split(/[\\/]/).pop() ?? '') h = Math.imul(h ^ c.charCodeAt(0), 16777619);
  const random = seededRandom(h);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)];
  const names = Object.keys(EVENT_MUTATIONS);
  const changed = new Map<number, string>();
  const what: string[] = [];
  const edits = 1 + Math.floor(random() * 3);
  for (let k = 0; k < edits; k++) {
    const pool = random() < 0.75 || !base.cpu.length ? base.gpu : base.cpu;
    if (!pool.length) break;
    const at = pick(pool);
    const name = pick(names);
    const out = EVENT_MUTATIONS[name](base.events[at], pick);
    const text = typeof out === 'string' ? out : Array.isArray(out) ? out.map((x) => JSON.stringify(x)).join(',') : JSON.stringify(out);
    changed.set(at, text);
    what.push(`${name} on event ${at} (${String(base.events[at].cat)})`);
  }
  const texts = changed.size ? base.texts.map((t, i) => changed.get(i) ?? t).filter((t) => t !== '') : base.texts;
  let json = Buffer.from(`${JSON.stringify(base.head).slice(0, -1)},"traceEvents":[${texts.join(',')}]}`);
  let gzip = random() < 0.2;
  if (random() < 0.15) {
    const file = pick(FILE_MUTATIONS);
    what.push(file);
    if (file === 'cut short') json = json.subarray(0, Math.floor(random() * json.length));
    else if (file === 'UTF-8 BOM') json = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), json]);
    else {
      const z = gzipSync(json, { level: 1 });
      if (file === 'gzip cut') return { what: what.join('; '), bytes: z.subarray(0, Math.floor(random() * z.length)) };
      const at = Math.floor(random() * z.length);
      z[at] ^= 0xff;
      return { what: what.join('; '), bytes: z };
    }
    gzip = false;
  }
  return { what: what.join('; '), bytes: gzip ? gzipSync(json, { level: 1 }) : json };
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
