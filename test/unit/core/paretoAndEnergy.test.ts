import * as assert from 'node:assert/strict';
import { dispatchDelayLines, dispatchDelayTable, gpuTelemetryLines, gpuTelemetryTable, paretoTables } from '../../../src/core/macro/gpuAndDelay';
import { campaignReportHtml, reportRuns } from '../../../src/core/findings/report';
import { dominates, gpusOfCommand, paretoFront, paretoPoint, ParetoPoint } from '../../../src/shared/pareto';
import { MacroLevelSummary, RunSummary } from '../../../src/shared/results';

function level(c: number, outputThroughput: number, extra: Partial<MacroLevelSummary> = {}): MacroLevelSummary {
  return {
    max_concurrency: c,
    request_rate: null,
    completed: 10,
    failed: 0,
    duration: 10,
    total_input_tokens: 100,
    total_output_tokens: outputThroughput * 10,
    request_throughput: 1,
    output_throughput: outputThroughput,
    total_token_throughput: outputThroughput,
    ...extra,
  };
}

const point = (series: string, load: string, perUser: number, perGpu: number, perWatt?: number): ParetoPoint => ({
  series,
  load,
  perUser,
  perGpu,
  perWatt,
  gpus: 8,
  gpusFrom: 'command',
  users: 1,
});

describe('Pareto front of tokens/s per user against per GPU', () => {
  it('keeps the points no other beats on both axes and marks the rest dominated', () => {
    const points = [
      point('tp8', 'c=1', 100, 10),
      point('tp8', 'c=8', 60, 50),
      point('tp8', 'c=32', 20, 120),
      point('tp4', 'c=8', 55, 45), // beaten by tp8 c=8 on both axes
      point('tp4', 'c=32', 20, 130), // beats tp8 c=32: as fast per user, more per GPU
    ];
    const f = paretoFront(points);
    assert.deepEqual(
      f.front.map((p) => `${p.series} ${p.load}`),
      ['tp4 c=32', 'tp8 c=8', 'tp8 c=1'],
    );
    assert.deepEqual(
      f.points.filter((p) => p.dominated).map((p) => `${p.series} ${p.load}`),
      ['tp8 c=32', 'tp4 c=8'],
    );
  });

  it('a point equal on both axes dominates nothing, and a better one on one axis only does', () => {
    assert.equal(dominates({ x: 1, y: 1 }, { x: 1, y: 1 }), false);
    assert.equal(dominates({ x: 1, y: 2 }, { x: 1, y: 1 }), true);
    assert.equal(dominates({ x: 2, y: 0.5 }, { x: 1, y: 1 }), false);
  });

  it('per watt takes only the points whose power was sampled', () => {
    const f = paretoFront([point('a', 'c=1', 10, 10, 0.5), point('a', 'c=8', 5, 40, 2), point('b', 'c=8', 5, 50)], 'perWatt');
    assert.equal(f.points.length, 2);
    assert.deepEqual(
      f.front.map((p) => p.load),
      ['c=8', 'c=1'],
    );
  });

  it('a level becomes a point as vllm bench sweep plot_pareto makes it: per user over the concurrency, per GPU over the GPUs', () => {
    const p = paretoPoint('tp8', level(8, 400), gpusOfCommand(['vllm', 'serve', 'm', '--tensor-parallel-size', '8']))!;
    assert.equal(p.perUser, 50);
    assert.equal(p.perGpu, 50);
    assert.equal(p.gpusFrom, 'command');
    // Sampled GPUs win over the command line, and the sampled power gives the per-watt figure.
    const sampled = paretoPoint('x', level(4, 400, { gpu_telemetry: { gpus: 2, output_tokens_per_s_per_watt: 0.8, joules_per_output_token: 1.25 } }), 8)!;
    assert.deepEqual([sampled.perGpu, sampled.perWatt, sampled.gpusFrom], [200, 0.8, 'sampled']);
    // A request-rate level's users are its measured peak in flight.
    const rate = paretoPoint('x', level(0, 300, { max_concurrency: null, request_rate: 4, max_concurrent_requests: 6 }))!;
    assert.equal(rate.perUser, 50);
    assert.equal(paretoPoint('x', level(8, 300, { cut: { reason: 'cancelled', done: 3 }, partial: true })), undefined, 'a level cut short is no point');
  });

  it("reads vLLM's and SGLang's parallel flags for the GPU count", () => {
    assert.equal(gpusOfCommand('python -m sglang.launch_server --tp 4 --dp-size 2'), 8);
    assert.equal(gpusOfCommand(['vllm', 'serve', 'm', '-tp=2', '--pipeline-parallel-size', '2']), 4);
    assert.equal(gpusOfCommand('vllm serve m'), undefined);
  });

  it('the findings table lists the front best per user first, says how many were dominated, and adds per watt where known', () => {
    const tables = paretoTables([point('a', 'c=1', 100, 10, 0.1), point('a', 'c=8', 60, 50, 0.4), point('a', 'c=16', 50, 40, 0.5)], 'x', 'over the levels');
    assert.equal(tables.length, 2);
    assert.deepEqual(
      tables[0].rows.map((r) => r.load),
      ['c=1', 'c=8'],
    );
    assert.match(tables[0].note!, /1 dominated point/);
    assert.deepEqual(
      tables[1].rows.map((r) => r.load),
      ['c=1', 'c=8', 'c=16'],
      'per watt c=16 is on the front',
    );
  });
});

describe('the GPUs and the dispatch delay in the findings', () => {
  const telemetry = {
    gpus: 2,
    samples: 20,
    mean_power_w: 1000,
    joules_per_output_token: 2.5,
    output_tokens_per_s_per_watt: 0.4,
    throttled: [{ reason: 'sw_power_cap', kind: 'power' }],
    per_gpu: [
      { gpu: 0, min_sm_clock_mhz: 1500, max_temp_c: 70, mean_util_percent: 90 },
      { gpu: 1, min_sm_clock_mhz: 1400, max_temp_c: 75, mean_util_percent: 80 },
    ],
  };

  it('names J per token, tokens/s per watt and the throttling per level', () => {
    const t = gpuTelemetryTable([level(1, 100), level(8, 400, { gpu_telemetry: telemetry })])!;
    assert.equal(t.rows.length, 1);
    assert.deepEqual(
      [t.rows[0].joules_per_token, t.rows[0].tokens_per_joule, t.rows[0].min_sm_clock, t.rows[0].max_temp, t.rows[0].util],
      [2.5, 0.4, 1400, 75, 85],
    );
    assert.equal(t.rows[0].throttled, 'power (sw_power_cap)');
    const lines = gpuTelemetryLines([level(8, 400, { gpu_telemetry: telemetry })]);
    assert.match(lines[0], /GPU throttling \(power\) at c=8/);
    assert.match(lines[1], /c=8 2\.500 J\/token/);
  });

  it('says there was no GPU rather than failing', () => {
    assert.equal(gpuTelemetryTable([level(1, 100)]), undefined);
    assert.deepEqual(gpuTelemetryLines([level(1, 100)], 'none sampled (no nvidia-smi on the host)'), [
      'GPU telemetry: none sampled (no nvidia-smi on the host).',
    ]);
  });

  it('names the client as the limit where its dispatch delay grew, and sets TTFT from the intended time beside TTFT from the send', () => {
    const behind = {
      basis: 'arrival',
      dispatch_delay_ms: { p50: 225, p99: 416, max: 420 },
      ttft_ms: { p99: 516 },
      e2el_ms: { p99: 900 },
      dispatch_delay_trend: { first_quarter_ms: 75, last_quarter_ms: 375 },
      client_limited: true,
    };
    const levels = [level(1, 100, { request_rate: 50, from_intended: behind, p99_ttft_ms: 100 })];
    const t = dispatchDelayTable(levels)!;
    assert.deepEqual([t.rows[0].delay_p50, t.rows[0].ttft_p99, t.rows[0].ttft_p99_intended], [225, 100, 516]);
    assert.match(String(t.rows[0].limit), /the limit: delay grew 75\.0 → 375\.0 ms/);
    assert.match(t.note!, /arrival in the schedule/);
    assert.match(dispatchDelayLines(levels)[0], /the client, not the server, is the limit/);
  });
});

describe('the Pareto front in the HTML report', () => {
  const run = (id: string, name: string, levels: MacroLevelSummary[]): RunSummary => ({
    id,
    phase: 'macro',
    target: 'gpu1',
    startedAt: id,
    status: 'completed',
    macro: { levels },
    configuration: { id: id.slice(0, 12), name, comparison: 'cmp-1', argv: ['vllm', 'serve', 'm', '-tp', '8'] },
  });

  it('draws one picture across the configurations of a comparison, the dominated points apart, every name escaped', () => {
    const runs = reportRuns(
      [
        run('2026-12-01_10-00-00-000-macro', 'tp8 <b>', [level(1, 80), level(8, 400)]),
        run('2026-12-01_11-00-00-000-macro', 'ep8', [level(1, 70), level(8, 300)]),
      ],
      '',
    );
    const html = campaignReportHtml('# c', runs, { title: 't.md', madeAt: new Date('2026-12-02T00:00:00Z') });
    assert.match(html, /<h3>Configurations compared <code>cmp-1<\/code><\/h3>/);
    const across = html.slice(html.indexOf('Configurations compared'));
    assert.equal((across.match(/class="front"/g) ?? []).length, 2, 'tp8 c=1 and tp8 c=8 are the front');
    assert.equal((across.match(/class="dominated"/g) ?? []).length, 2, 'ep8 at both loads is dominated');
    assert.ok(html.includes('tp8 &lt;b&gt;') && !html.includes('tp8 <b>'));
  });
});
