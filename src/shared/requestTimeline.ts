// A macro run's requests on one time axis, as the results view's timeline draws them: each request a
// bar in three parts (queued in the load generator, waiting for its first token, decoding), packed on
// lanes that never overlap, and the client's own per-second series (requests in flight, output
// tokens/s) to set beside the server's /metrics samples. Typed arrays, one entry per request, so that
// a 10,000-request level is shaped and drawn without an object per bar.
import { finite } from './finite';
import type { MacroRequestPoint } from './results';

export interface TimelineRequests {
  count: number;
  /** Index of the load level each request belongs to. */
  level: Int32Array;
  /** When the load generator meant to send it (send minus its scheduling lag), seconds from the run's first send. */
  queued: Float64Array;
  sent: Float64Array;
  /** When its first token came; NaN when none did (a failed request). */
  firstToken: Float64Array;
  end: Float64Array;
  ok: Uint8Array;
  /** Output tokens; NaN when unknown. */
  tokens: Float64Array;
  /** The lane (row) it is drawn on: a lane holds one request at a time. */
  lane: Uint32Array;
  lanes: number;
  /** The earliest queue time and the latest end, seconds. */
  t0: number;
  t1: number;
}

/** How far a request may seem to start before its lane's last request ended and still reuse the lane. */
export const LANE_SLACK_S = 0.001;

export type SegmentKind = 'queued' | 'waiting' | 'decoding' | 'failed';

export interface Segment {
  kind: SegmentKind;
  from: number;
  to: number;
}

/**
 * Output tokens of a request: as counted, else what its TPOT implies (1 + decode time / TPOT), for
 * runs recorded before the count was kept.
 */
function tokensOf(p: MacroRequestPoint): number {
  const counted = finite(p.output_tokens);
  if (counted !== undefined) return counted;
  const ttft = finite(p.ttft_ms);
  const e2el = finite(p.e2el_ms);
  const tpot = finite(p.tpot_ms);
  if (!p.ok || ttft === undefined || e2el === undefined || tpot === undefined || tpot <= 0) return NaN;
  return 1 + Math.round((e2el - ttft) / tpot);
}

/** The requests as typed arrays, in send order, each given the first lane free when it was queued. */
export function timelineRequests(points: readonly MacroRequestPoint[]): TimelineRequests {
  const kept = points.filter((p) => finite(p.start_s) !== undefined).sort((a, b) => a.start_s - b.start_s);
  const n = kept.length;
  const t: TimelineRequests = {
    count: n,
    level: new Int32Array(n),
    queued: new Float64Array(n),
    sent: new Float64Array(n),
    firstToken: new Float64Array(n),
    end: new Float64Array(n),
    ok: new Uint8Array(n),
    tokens: new Float64Array(n),
    lane: new Uint32Array(n),
    lanes: 0,
    t0: n ? Infinity : 0,
    t1: n ? -Infinity : 0,
  };
  const laneEnds: number[] = [];
  for (let i = 0; i < n; i++) {
    const p = kept[i];
    const sent = p.start_s;
    const queuedMs = finite(p.queued_ms);
    const ttft = finite(p.ttft_ms);
    const e2el = finite(p.e2el_ms);
    const end = sent + (e2el ?? ttft ?? 0) / 1000;
    t.level[i] = p.level;
    t.sent[i] = sent;
    t.queued[i] = sent - Math.max(0, queuedMs ?? 0) / 1000;
    t.firstToken[i] = p.ok && ttft !== undefined ? Math.min(end, sent + ttft / 1000) : NaN;
    t.end[i] = end;
    t.ok[i] = p.ok ? 1 : 0;
    t.tokens[i] = tokensOf(p);
    // Requests come in send order, so a lane's end only grows; the first lane free takes the request.
    // A lane is free once its request ended, give or take the client's own rounding (times kept to
    // the microsecond, or 0.1 ms by a steady-state level) and float sums: at concurrency 1 the next
    // request is sent as the last one ends and must not open a second lane.
    let lane = 0;
    while (lane < laneEnds.length && laneEnds[lane] > t.queued[i] + LANE_SLACK_S) lane++;
    laneEnds[lane] = end;
    t.lane[i] = lane;
    if (t.queued[i] < t.t0) t.t0 = t.queued[i];
    if (end > t.t1) t.t1 = end;
  }
  t.lanes = laneEnds.length;
  return t;
}

/** The parts of request `i`'s bar, empty ones left out: a failed request is one part from its send to its end. */
export function requestSegments(t: TimelineRequests, i: number): Segment[] {
  const out: Segment[] = [];
  if (t.sent[i] > t.queued[i]) out.push({ kind: 'queued', from: t.queued[i], to: t.sent[i] });
  if (!t.ok[i]) {
    out.push({ kind: 'failed', from: t.sent[i], to: t.end[i] });
    return out;
  }
  const first = Number.isNaN(t.firstToken[i]) ? t.end[i] : t.firstToken[i];
  if (first > t.sent[i]) out.push({ kind: 'waiting', from: t.sent[i], to: first });
  if (t.end[i] > first) out.push({ kind: 'decoding', from: first, to: t.end[i] });
  return out;
}

export interface PerSecond {
  /** Start of each one-second bin, seconds from the run's first send. */
  t: Float64Array;
  /** Requests in flight (sent, not yet finished), averaged over the second. */
  inFlight: Float64Array;
  /** Output tokens that arrived in the second: the first at the first token, the rest spread evenly over decoding. */
  tokensPerS: Float64Array;
}

/** Adds `amount` spread evenly over [from, to) into one-second bins starting at `origin`. */
function spread(bins: Float64Array, origin: number, from: number, to: number, amount: number): void {
  const width = to - from;
  if (!(width > 0)) return;
  const first = Math.max(0, Math.floor(from - origin));
  const last = Math.min(bins.length - 1, Math.ceil(to - origin) - 1);
  for (let b = first; b <= last; b++) {
    const overlap = Math.min(to, origin + b + 1) - Math.max(from, origin + b);
    if (overlap > 0) bins[b] += (amount * overlap) / width;
  }
}

/** The client's own series, one value per second from the floor of the first send to the last end. */
export function perSecond(t: TimelineRequests): PerSecond {
  if (!t.count) return { t: new Float64Array(0), inFlight: new Float64Array(0), tokensPerS: new Float64Array(0) };
  let origin = Infinity;
  for (let i = 0; i < t.count; i++) origin = Math.min(origin, t.sent[i]);
  origin = Math.floor(origin);
  const bins = Math.max(1, Math.ceil(t.t1 - origin));
  const inFlight = new Float64Array(bins);
  const tokensPerS = new Float64Array(bins);
  for (let i = 0; i < t.count; i++) {
    const from = t.sent[i];
    const to = t.end[i];
    // Each second's in-flight figure is the request-seconds inside it: a request in flight for the whole second counts 1.
    spread(inFlight, origin, from, to, to - from);
    const tokens = t.tokens[i];
    if (!t.ok[i] || !(tokens > 0)) continue;
    const first = Number.isNaN(t.firstToken[i]) ? to : t.firstToken[i];
    const firstBin = Math.min(bins - 1, Math.max(0, Math.floor(first - origin)));
    tokensPerS[firstBin] += 1;
    if (tokens > 1 && to > first) spread(tokensPerS, origin, first, to, tokens - 1);
    else if (tokens > 1) tokensPerS[firstBin] += tokens - 1;
  }
  const starts = new Float64Array(bins);
  for (let b = 0; b < bins; b++) starts[b] = origin + b;
  return { t: starts, inFlight, tokensPerS };
}
