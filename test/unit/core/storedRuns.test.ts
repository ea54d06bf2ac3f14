import * as assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RunFolder } from '../../../src/core/runs/runFolder';
import { analyzeTraceFiles } from '../../../src/core/trace/analyze';
import { saveRunView, summaryOf } from '../../../src/core/runs/storedRuns';
import type { LineChartSpec, StackedBarSpec } from '../../../webview-ui/src/specs';
import { microCharts } from '../../../webview-ui/src/views/micro';
import { profileCharts } from '../../../webview-ui/src/views/profile';

const trace = join(__dirname, '..', '..', 'fixtures', 'traces', 'llama_cudagraph_decode.pt.trace.json.gz');

describe('stored runs as the views draw them', () => {
  let workspace: string;
  beforeEach(() => (workspace = mkdtempSync(join(tmpdir(), 'infbench-stored-'))));
  afterEach(() => rmSync(workspace, { recursive: true, force: true }));

  it('draws a micro run made by the CLI from its result.json (GEMM and all-reduce points)', () => {
    const run = RunFolder.create(workspace, 'micro', 'cli-box', {});
    run.writeResult({
      device: 'NVIDIA H200',
      points: [
        { kind: 'gemm', shape: 'moe.gate_up', m: 1, n: 512, k: 7168, us: 6.1, tbps: 1.2, kernel: 'marlin' },
        { kind: 'gemm', shape: 'moe.gate_up', m: 8, n: 512, k: 7168, us: 6.4, tbps: 1.3, kernel: 'marlin' },
        { kind: 'allreduce', bytes: 14336, us: 9.5, busbw_gbps: 2.6, algbw_gbps: 1.5, world_size: 8, mode: 'graph' },
        { kind: 'peak', what: 'copy', tbps: 4.1 },
      ],
    });
    run.finish('completed');
    const charts = microCharts(summaryOf(RunFolder.open(run.dir))) as LineChartSpec[];
    const time = charts.find((c) => c.id.endsWith('gemm-time'))!;
    assert.deepEqual(time.series[0].points, [{ x: 1, y: 6.1 }, { x: 8, y: 6.4 }]);
    const bw = charts.find((c) => c.id.endsWith('gemm-bw'))!;
    assert.match(bw.series.find((s) => s.reference)!.label, /NVIDIA H200 peak 4.1 TB\/s/);
    assert.deepEqual(charts.find((c) => c.id.endsWith('allreduce-busbw'))!.series[0].points, [{ x: 14336, y: 2.6 }]);
  });

  it('turns a real trace breakdown into per-rank stacks that add up to the decode step', async function () {
    this.timeout(60_000);
    const breakdown = await analyzeTraceFiles([trace]);
    const run = RunFolder.create(workspace, 'profile', 'trace files', {});
    run.writeResult(breakdown);
    run.finish('completed');
    const summary = summaryOf(RunFolder.open(run.dir));
    assert.equal(summary.headline, breakdown.headline);
    const [step] = profileCharts(summary) as StackedBarSpec[];
    const total = step.stacks.reduce((s, c) => s + c.values[0], 0);
    const stepUs = breakdown.ranks[0].decode.categories.reduce((s, c) => s + c.msPerStep, 0) * 1000;
    assert.ok(Math.abs(total - stepUs) < 1e-6 * stepUs, `stacks add up to ${total} µs, the step is ${stepUs} µs`);
    // Kernel time per step can only be a part of the step.
    const kernels = summary.profile!.kernels!;
    assert.ok(kernels.length > 0);
    assert.ok(kernels.every((k) => k.total_us > 0 && k.total_us <= stepUs && k.min_us <= k.mean_us && k.mean_us <= k.max_us));
  });

  it('prefers the view saved while the run went, with the final status from meta.json', () => {
    const run = RunFolder.create(workspace, 'macro', 'box', {});
    saveRunView(workspace, { id: run.info.id, phase: 'macro', target: 'box', startedAt: run.info.startedAt, status: 'running', headline: 'decode 57 tok/s at c=1', macro: { levels: [] } });
    run.finish('interrupted', 'The connection dropped mid-run.');
    const summary = summaryOf(RunFolder.open(run.dir));
    assert.equal(summary.status, 'interrupted');
    assert.equal(summary.reason, 'The connection dropped mid-run.');
    assert.equal(summary.headline, 'decode 57 tok/s at c=1');
  });
});
