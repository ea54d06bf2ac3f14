import * as assert from 'node:assert/strict';
import type { MacroRequestPoint } from '../../../src/shared/results';
import { perSecond, requestSegments, timelineRequests } from '../../../src/shared/requestTimeline';
import { timelineData, timelineTable } from '../../../webview-ui/src/views/timeline';

// Three requests worked out by hand (seconds from the run's first send):
//   A: sent 0.0, held 200 ms by the load generator first, first token at 0.5, done at 2.5, 11 tokens
//   B: sent 0.5, first token at 1.0, done at 1.5, 3 tokens
//   C: sent 1.5, failed at 2.5 with no token
const points: MacroRequestPoint[] = [
  { level: 0, start_s: 1.5, ttft_ms: null, e2el_ms: 1000, ok: false, output_tokens: 0 },
  { level: 0, start_s: 0.5, ttft_ms: 500, e2el_ms: 1000, ok: true, output_tokens: 3 },
  { level: 0, start_s: 0.0, ttft_ms: 500, e2el_ms: 2500, ok: true, output_tokens: 11, queued_ms: 200 },
];

const close = (actual: ArrayLike<number>, expected: number[]) => {
  assert.equal(actual.length, expected.length, `${Array.from(actual)} vs ${expected}`);
  expected.forEach((e, i) => assert.ok(Math.abs(actual[i] - e) < 1e-9, `bin ${i}: ${actual[i]} vs ${e} (${Array.from(actual)})`));
};

describe("the timeline of a macro run's requests", () => {
  it('splits each request into queued, waiting for its first token and decoding; a failed one is one failed part', () => {
    const t = timelineRequests(points);
    // In send order: A, B, C.
    assert.deepEqual(requestSegments(t, 0), [
      { kind: 'queued', from: -0.2, to: 0 },
      { kind: 'waiting', from: 0, to: 0.5 },
      { kind: 'decoding', from: 0.5, to: 2.5 },
    ]);
    assert.deepEqual(requestSegments(t, 1), [
      { kind: 'waiting', from: 0.5, to: 1 },
      { kind: 'decoding', from: 1, to: 1.5 },
    ]);
    assert.deepEqual(requestSegments(t, 2), [{ kind: 'failed', from: 1.5, to: 2.5 }]);
    assert.equal(t.t0, -0.2);
    assert.equal(t.t1, 2.5);
  });

  it('packs requests on lanes that never hold two at once: B takes a second lane, C the one B freed', () => {
    const t = timelineRequests(points);
    assert.deepEqual(Array.from(t.lane), [0, 1, 1]);
    assert.equal(t.lanes, 2);
  });

  it('draws concurrency 1 on one lane when each request is sent as the previous one ends, its times rounded by the client', () => {
    // 0.1 + 0.2 is 0.30000000000000004 in floating point: the third request is sent "before" the second ends.
    // The fourth is sent 1 µs before the third's end (each time rounded to the microsecond); the fifth was
    // planned 0.05 ms before the fourth's end by the load generator's own clock reading.
    const c1: MacroRequestPoint[] = [
      { level: 0, start_s: 0, ttft_ms: 20, e2el_ms: 100, ok: true, output_tokens: 5 },
      { level: 0, start_s: 0.1, ttft_ms: 20, e2el_ms: 200, ok: true, output_tokens: 9 },
      { level: 0, start_s: 0.3, ttft_ms: 20, e2el_ms: 123.457, ok: true, output_tokens: 6 },
      { level: 0, start_s: 0.423456, ttft_ms: 20, e2el_ms: 100, ok: true, output_tokens: 5 },
      { level: 0, start_s: 0.5235, ttft_ms: 20, e2el_ms: 100, ok: true, output_tokens: 5, queued_ms: 0.05 },
    ];
    const t = timelineRequests(c1);
    assert.deepEqual(Array.from(t.lane), [0, 0, 0, 0, 0]);
    assert.equal(t.lanes, 1);
  });

  it('still opens a second lane for a request sent well before the previous one ended', () => {
    const t = timelineRequests([
      { level: 0, start_s: 0, ttft_ms: 20, e2el_ms: 100, ok: true, output_tokens: 5 },
      { level: 0, start_s: 0.09, ttft_ms: 20, e2el_ms: 100, ok: true, output_tokens: 5 },
    ]);
    assert.deepEqual(Array.from(t.lane), [0, 1]);
  });

  it('counts requests in flight per second as the request-seconds inside each second', () => {
    // Second 0: A 1 s, B 0.5 s = 1.5; second 1: A 1, B 0.5, C 0.5 = 2; second 2: A 0.5, C 0.5 = 1.
    const s = perSecond(timelineRequests(points));
    close(s.t, [0, 1, 2]);
    close(s.inFlight, [1.5, 2, 1]);
  });

  it('counts output tokens per second: the first at the first token, the rest spread over decoding, none for a failed request', () => {
    // A: 1 at 0.5, then 10 over 0.5..2.5 (5 per s): 1 + 2.5, 5, 2.5. B: 1 at 1.0, then 2 over 1.0..1.5: second 1 gets 3.
    const s = perSecond(timelineRequests(points));
    close(s.tokensPerS, [3.5, 8, 2.5]);
  });

  it("estimates a request's tokens from its TPOT when a run recorded no count", () => {
    const old: MacroRequestPoint[] = [{ level: 0, start_s: 0, ttft_ms: 100, e2el_ms: 1100, tpot_ms: 50, ok: true }];
    // 1 + 1000 ms / 50 ms = 21 tokens: 1 at 0.1 s, 20 over 0.1..1.1 (18 in second 0, 2 in second 1).
    close(perSecond(timelineRequests(old)).tokensPerS, [19, 2]);
  });

  it('shapes a 10,000-request level into arrays of 10,000 entries, none dropped', () => {
    const many: MacroRequestPoint[] = Array.from({ length: 10_000 }, (_, i) => ({
      level: 0,
      start_s: i / 100,
      ttft_ms: 50,
      e2el_ms: 1000,
      ok: i % 97 !== 0,
      output_tokens: 20,
    }));
    const t = timelineRequests(many);
    assert.equal(t.count, 10_000);
    assert.equal(
      t.ok.reduce((n, v) => n + v, 0),
      10_000 - Math.ceil(10_000 / 97),
    );
    // One request sent every 10 ms, each in flight 1 s: about 100 in flight at once.
    assert.ok(t.lanes >= 100 && t.lanes <= 101, `${t.lanes} lanes`);
    const s = perSecond(t);
    assert.ok(Math.abs(s.inFlight[50] - 100) < 1e-6, `${s.inFlight[50]} in flight mid-run`);
  });

  it("names each level where it starts, puts its steady window on the run's axis and sets the server's samples beside the client's seconds", () => {
    const level = (index: number, c: number, extra: Record<string, unknown>) =>
      ({
        level: index,
        max_concurrency: c,
        request_rate: null,
        completed: 0,
        failed: 0,
        duration: 0,
        total_input_tokens: 0,
        total_output_tokens: 0,
        request_throughput: 0,
        output_throughput: 0,
        total_token_throughput: 0,
        ...extra,
      }) as never;
    const d = timelineData({
      id: 'r',
      phase: 'macro',
      target: 't',
      startedAt: '2026-12-02T00:00:00Z',
      status: 'completed',
      macro: {
        levels: [
          level(0, 1, { server_state: { samples: [{ t: 0.4, running: 1, waiting: 0, kv_cache_usage: 0.25 }] } }),
          level(1, 4, { steady: { start_s: 0.5, end_s: 1.5 }, server_state: { samples: [{ t: 3.6, running: 4, waiting: 2, kv_cache_usage: 0.5 }] } }),
        ],
        requests: [
          { level: 0, start_s: 0, ttft_ms: 100, e2el_ms: 1000, ok: true, output_tokens: 10 },
          { level: 1, start_s: 3, ttft_ms: 100, e2el_ms: 2000, ok: true, output_tokens: 10 },
        ],
      },
    })!;
    assert.deepEqual(
      d.levels.map((l) => [l.label, l.start, l.end, l.steady]),
      [
        ['c=1', 0, 1, undefined],
        ['c=4', 3, 5, [3.5, 4.5]],
      ],
    );
    const rows = timelineTable(d).rows;
    assert.deepEqual(
      rows.map((r) => [r.t, r.running, r.waiting, r.kv]),
      [
        [0, 1, 0, 25],
        [1, null, null, null],
        [2, null, null, null],
        [3, 4, 2, 50],
        [4, null, null, null],
      ],
    );
  });

  it("says why the server's series are missing: the reason the run recorded (no /metrics), or that it kept none", () => {
    const run = (levels: Record<string, unknown>[]) =>
      timelineData({
        id: 'r',
        phase: 'macro',
        target: 't',
        startedAt: '2026-12-02T00:00:00Z',
        status: 'completed',
        macro: {
          levels: levels as never,
          requests: [{ level: 0, start_s: 0, ttft_ms: 100, e2el_ms: 1000, ok: true, output_tokens: 10 }],
        },
      })!;
    const sglang = run([
      {
        level: 0,
        max_concurrency: 1,
        server_metrics: {
          available: false,
          metrics_status: 404,
          note: "/metrics answered 404: SGLang serves it only when started with --enable-metrics (vLLM always does), so the token counts could not be cross-checked against the server's",
        },
      },
    ]);
    assert.match(
      sglang.serverMissing!,
      /^No server series \(running, waiting, KV cache\): \/metrics answered 404: SGLang serves it only when started with --enable-metrics/,
    );
    assert.match(run([{ level: 0, max_concurrency: 1 }]).serverMissing!, /kept no reading of the server's \/metrics/);
    const sampled = run([{ level: 0, max_concurrency: 1, server_state: { samples: [{ t: 0.5, running: 1 }] } }]);
    assert.equal(sampled.serverMissing, undefined, 'nothing to explain when the series are there');
  });
});
