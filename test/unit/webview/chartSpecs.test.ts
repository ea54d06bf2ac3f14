import * as assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { MacroLevelSummary, RunSummary } from '../../../src/shared/results';
import { tableToCsv } from '../../../webview-ui/src/csv';
import type { LineChartSpec, StackedBarSpec } from '../../../webview-ui/src/specs';
import { macroCharts, statsFor } from '../../../webview-ui/src/views/macro';
import { microCharts } from '../../../webview-ui/src/views/micro';
import { microChartData, MicroPoint } from '../../../src/core/micro/tables';
import { categoryOrder, kernelTable, profileCharts, shortKernelName, topKernels } from '../../../webview-ui/src/views/profile';

const runDir = join(__dirname, '..', '..', 'fixtures', 'runs', 'workspace', '.inference-bench', 'runs', '2026-11-30_14-02-11-482-macro');
const levels = (JSON.parse(readFileSync(join(runDir, 'result.json'), 'utf8')) as { levels: MacroLevelSummary[] }).levels;
const macroRun: RunSummary = { id: 'a', phase: 'macro', target: 'sim', startedAt: '2026-11-30T14:02:11.482Z', status: 'completed', macro: { levels } };

describe('the results view charts', () => {
  it('draws output throughput at every concurrency of the stored sweep, on a log axis', () => {
    const [throughput] = macroCharts(macroRun) as LineChartSpec[];
    const output = throughput.series.find((s) => s.label === 'output tok/s')!;
    assert.deepEqual(
      output.points.map((p) => p.x),
      levels.map((l) => l.max_concurrency),
    );
    assert.deepEqual(
      output.points.map((p) => p.y),
      levels.map((l) => l.output_throughput),
    );
    assert.equal(throughput.xLog, true);
    assert.equal(throughput.table.rows.length, levels.length);
  });

  it('titles a run that has no level yet as a concurrency sweep, and a request-rate run by its rates', () => {
    const [empty] = macroCharts({ ...macroRun, status: 'running', macro: { levels: [] } }) as LineChartSpec[];
    assert.equal(empty.title, 'Throughput vs concurrency');
    const rates = levels.slice(0, 3).map((l, i) => ({ ...l, max_concurrency: null, request_rate: i + 1 }));
    const [byRate] = macroCharts({ ...macroRun, macro: { levels: rates } }) as LineChartSpec[];
    assert.equal(byRate.title, 'Throughput vs request rate');
    assert.deepEqual(
      byRate.series[0].points.map((p) => p.x),
      [1, 2, 3],
    );
  });

  it("draws the server's queue and cache over the run on the requests' time axis, every level's samples in order", () => {
    const withState = levels.slice(0, 2).map((l, i) => ({
      ...l,
      server_state: {
        interval_s: 1,
        failed_reads: 0,
        samples: [
          { t: 10 * i + 0.0, running: 0, waiting: 0, kv_cache_usage: 0 },
          { t: 10 * i + 1.0, running: 4, waiting: 4 * i, kv_cache_usage: 0.5, prefix_cache_hit_rate: 0.25 },
        ],
      },
    }));
    const charts = macroCharts({ ...macroRun, macro: { levels: withState } }) as LineChartSpec[];
    const queue = charts.find((c) => c.id === 'a-server-queue')!;
    assert.deepEqual(queue.series.find((x) => x.label === 'waiting')!.points, [
      { x: 0, y: 0 },
      { x: 1, y: 0 },
      { x: 10, y: 0 },
      { x: 11, y: 4 },
    ]);
    const cache = charts.find((c) => c.id === 'a-server-cache')!;
    assert.deepEqual(cache.series.find((x) => x.label === 'KV cache used %')!.points.at(-1), { x: 11, y: 50 });
    assert.equal(cache.table.rows.length, 4);
    assert.equal(cache.series.find((x) => x.label === 'prefix-cache hit %')!.points.length, 2, 'only the samples that had a rate');
    assert.ok(!macroCharts(macroRun).some((c) => c.id.includes('server')), 'a run without samples draws no server chart');
  });

  it('finds the percentiles a run has for TTFT, TPOT and ITL and orders them mean, median, p99', () => {
    assert.deepEqual(statsFor(levels, 'ttft'), ['mean', 'median', 'p99']);
    const ids = macroCharts(macroRun).map((c) => c.id);
    for (const metric of ['ttft', 'tpot', 'itl']) assert.ok(ids.includes(`a-${metric}`), `no ${metric} chart`);
    const tpot = macroCharts(macroRun).find((c) => c.id === 'a-tpot') as LineChartSpec;
    assert.deepEqual(tpot.series.find((s) => s.label === 'p99')!.points[0], { x: 1, y: levels[0].p99_tpot_ms });
  });

  it('overlays a second run dashed and in other colours, labelled A and B, with both in the table', () => {
    const other: RunSummary = {
      ...macroRun,
      id: 'b',
      macro: { levels: levels.slice(0, 3).map((l) => ({ ...l, output_throughput: l.output_throughput / 2 })) },
    };
    const [throughput] = macroCharts(macroRun, other) as LineChartSpec[];
    const b = throughput.series.find((s) => s.label === 'B: output tok/s')!;
    assert.equal(b.dashed, true);
    assert.equal(b.points.length, 3);
    assert.equal(throughput.series.find((s) => s.label === 'A: output tok/s')!.dashed, false);
    // A and B differ in colour too, in every chart (a dash alone is lost on a thin line).
    for (const chart of macroCharts(macroRun, other) as LineChartSpec[]) {
      const colours = (tag: string) => new Set(chart.series.filter((s) => s.label.startsWith(`${tag}: `) && !s.marker).map((s) => s.colorIndex));
      const shared = [...colours('A')].filter((c) => colours('B').has(c));
      assert.deepEqual(shared, [], `${chart.title}: runs A and B share colours ${shared.join(', ')}`);
    }
    assert.equal(throughput.table.rows.length, levels.length + 3);
    assert.deepEqual(new Set(throughput.table.rows.map((r) => r.run)), new Set(['A', 'B']));
  });

  it('plots every successful request of a run over time, and lists the failed ones only in the table', () => {
    const requests = Array.from({ length: 10_000 }, (_, i) => ({
      level: 0,
      start_s: i / 100,
      ttft_ms: 40 + (i % 7),
      e2el_ms: 4000 + (i % 13),
      ok: i % 1000 !== 0,
    }));
    const run: RunSummary = { ...macroRun, macro: { levels, requests } };
    const chart = macroCharts(run).find((c) => c.id === 'a-requests') as LineChartSpec;
    assert.equal(chart.series[0].points.length, 9_990);
    assert.equal(chart.table.rows.length, 10_000);
  });

  it('draws GEMM bandwidth per shape against the GPU peak, and all-reduce busbw vs size', () => {
    const run: RunSummary = {
      id: 'm',
      phase: 'micro',
      target: 'h200',
      startedAt: '2026-12-01T00:00:00Z',
      status: 'completed',
      micro: {
        points: [],
        gemm: [1, 2, 4, 8].flatMap((m) => [
          { shape: 'gate_up 512x7168', m, n: 512, k: 7168, time_us: 10 + m, tbps: 2 + m / 10 },
          { shape: 'down 7168x256', m, n: 7168, k: 256, time_us: 8 + m, tbps: 1.5 + m / 10 },
        ]),
        allreduce: [1024, 65536, 1048576].map((size_bytes, i) => ({ size_bytes, time_us: 8 * (i + 1), busbw_gbps: 10 * (i + 1) })),
        peak: { gpu: 'H200', memory_tbps: 4.8 },
      },
    };
    const charts = microCharts(run) as LineChartSpec[];
    const bw = charts.find((c) => c.id === 'm-gemm-bw')!;
    assert.deepEqual(
      bw.series.filter((s) => !s.reference).map((s) => s.label),
      ['gate_up 512x7168', 'down 7168x256'],
    );
    const peak = bw.series.find((s) => s.reference)!;
    assert.deepEqual(
      peak.points.map((p) => p.y),
      [4.8, 4.8],
    );
    assert.match(peak.label, /H200 peak 4.8 TB\/s/);
    const busbw = charts.find((c) => c.id === 'm-allreduce-busbw')!;
    assert.deepEqual(busbw.series[0].points, [
      { x: 1024, y: 10 },
      { x: 65536, y: 20 },
      { x: 1048576, y: 30 },
    ]);
    assert.equal(busbw.xLog, true);
  });

  it("draws a cluster run's all-to-all across the hosts at each decode size, graph times where there are", () => {
    const points: MicroPoint[] = [64, 512].flatMap((kib) =>
      (['eager', 'graph'] as const).flatMap((mode) =>
        (['inter-node', 'intra-node'] as const).map((scope) => ({
          kind: 'alltoall' as const,
          scope,
          mode,
          bytes: kib * 1024,
          us: (mode === 'graph' ? 10 : 30) * (scope === 'inter-node' ? 2 : 1) + kib / 64,
          busbw_gbps: 1,
          world_size: scope === 'inter-node' ? 16 : 8,
        })),
      ),
    );
    const run: RunSummary = { id: 'c', phase: 'micro', target: 'pair', startedAt: '', status: 'completed', micro: { points, ...microChartData(points) } };
    const chart = (microCharts(run) as LineChartSpec[]).find((c) => c.id === 'c-alltoall-time')!;
    assert.deepEqual(chart.series[0].points, [
      { x: 65536, y: 21 },
      { x: 524288, y: 28 },
    ]);
    assert.deepEqual(
      chart.table.rows.map((r) => r.world_size),
      [16, 16],
    );
  });

  it('stacks a decode step by category for each rank, largest category first and idle last', () => {
    const by = (allReduce: number) => ({ 'all-reduce': allReduce, idle: 900, 'quantized GEMM': 3000, attention: 1200 });
    const run: RunSummary = {
      id: 'p',
      phase: 'profile',
      target: 'h200',
      startedAt: '2026-12-01T00:00:00Z',
      status: 'completed',
      profile: {
        categories: ['idle', 'attention', 'quantized GEMM', 'all-reduce'],
        ranks: [
          { rank: 1, step_us: 9100, by_category: by(4000) },
          { rank: 0, step_us: 9000, by_category: by(3900) },
        ],
        kernels: [
          { name: 'cross_device_reduce_1stage', category: 'all-reduce', count: 122, total_us: 3900, mean_us: 32, min_us: 20, max_us: 60 },
          { name: 'gptq_marlin_gemm', category: 'quantized GEMM', count: 244, total_us: 3000, mean_us: 12.3, min_us: 8, max_us: 20 },
        ],
      },
    };
    assert.deepEqual(categoryOrder([run.profile as never]), ['all-reduce', 'quantized GEMM', 'attention', 'idle']);
    const [step] = profileCharts(run) as StackedBarSpec[];
    assert.deepEqual(step.labels, ['rank 0', 'rank 1']);
    assert.deepEqual(step.stacks[0], { label: 'all-reduce', values: [3900, 4000], colorIndex: 0 });
    const top = topKernels(run)!;
    assert.equal(top.rows[0].name, 'cross_device_reduce_1stage');
    assert.ok(Math.abs((top.rows[0].share_pct as number) - (3900 / 9050) * 100) < 1e-9);
    // The time and the share come right after the name: in a narrow view they were past the right edge.
    assert.deepEqual(
      top.columns.slice(0, 3).map((c) => c.label),
      ['kernel', 'µs / step', '% of step'],
    );
  });

  it('names templated C++ kernels by their function and what they wrap, and tells apart kernels that fold to one name', () => {
    assert.equal(
      shortKernelName('void cutlass::device_kernel<flash::FlashAttnFwdSm90<cute::tuple<int> > >(flash::Params)'),
      'cutlass::device_kernel<flash::FlashAttnFwdSm90…>',
    );
    assert.equal(
      shortKernelName('void gemv2T_kernel_val<int, int, __nv_bfloat16, float, 128, cublasGemvParamsEx<int> >(float)'),
      'gemv2T_kernel_val<cublasGemvParamsEx…>',
    );
    assert.equal(shortKernelName('ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)'), 'ncclDevKernel_AllReduce_Sum_bf16_RING_LL');
    assert.equal(shortKernelName('cross_device_reduce_1stage'), 'cross_device_reduce_1stage');
    const k = (name: string) => ({ name, category: 'elementwise', count: 1, total_us: 1, mean_us: 1, min_us: 1, max_us: 1 });
    const table = kernelTable([k('void f<A<int> >(int)'), k('void f<A<float> >(int)'), k('g')], 't');
    assert.deepEqual(
      table.rows.map((r) => r.name),
      ['f<A…> #1', 'f<A…> #2', 'g'],
    );
    assert.equal(table.rows[1].full_name, 'void f<A<float> >(int)');
  });

  it('leaves categories with no time on any rank out of the stacked bar', () => {
    const run: RunSummary = {
      id: 'z',
      phase: 'profile',
      target: 't',
      startedAt: '2026-12-01T00:00:00Z',
      status: 'completed',
      profile: {
        categories: ['gemm', 'nccl all-gather', 'idle'],
        ranks: [{ rank: 0, step_us: 10, by_category: { gemm: 8, 'nccl all-gather': 0, idle: 2 } }],
        kernels: [],
      },
    };
    const [step] = profileCharts(run) as StackedBarSpec[];
    assert.deepEqual(
      step.stacks.map((s) => s.label),
      ['gemm', 'idle'],
    );
  });

  it('exports a table as CSV with full-precision numbers and quoted text', () => {
    const csv = tableToCsv({
      id: 't',
      title: 't',
      columns: [
        { key: 'name', label: 'kernel, name', align: 'left' },
        { key: 'us', label: 'µs', digits: 1 },
      ],
      rows: [
        { name: 'a"b', us: 1.23456 },
        { name: 'c', us: null },
      ],
    });
    assert.equal(csv, '"kernel, name",µs\r\n"a""b",1.23456\r\nc,\r\n');
  });
});
