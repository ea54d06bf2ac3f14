import * as assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { metaPath, RunFolder, runsRoot } from '../../../src/core/runs/runFolder';
import { analyzeTraceFiles } from '../../../src/core/trace/analyze';
import { readStoredRun, saveRunView, StoredRuns } from '../../../src/core/runs/storedRuns';
import { newestProbeStates } from '../../../src/core/phases/probeState';
import type { LineChartSpec, StackedBarSpec } from '../../../webview-ui/src/specs';
import { microCharts } from '../../../webview-ui/src/views/micro';
import { profileCharts } from '../../../webview-ui/src/views/profile';
import { timelineData } from '../../../webview-ui/src/views/timeline';
import { requestSegments } from '../../../src/shared/requestTimeline';

const trace = join(__dirname, '..', '..', 'fixtures', 'traces', 'llama_cudagraph_decode.pt.trace.json.gz');

describe('stored runs as the views draw them', () => {
  let workspace: string;
  beforeEach(() => (workspace = mkdtempSync(join(tmpdir(), 'infbench-stored-'))));
  afterEach(() => rmSync(workspace, { recursive: true, force: true }));

  it('draws a micro run made by the CLI from its result.json (GEMM and all-reduce points)', async () => {
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
    const charts = microCharts((await readStoredRun(run.dir))!) as LineChartSpec[];
    const time = charts.find((c) => c.id.endsWith('gemm-time'))!;
    assert.deepEqual(time.series[0].points, [
      { x: 1, y: 6.1 },
      { x: 8, y: 6.4 },
    ]);
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
    const summary = (await readStoredRun(run.dir))!;
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

  it('prefers the view saved while the run went, with the final status from meta.json', async () => {
    const run = RunFolder.create(workspace, 'macro', 'box', {});
    saveRunView(workspace, {
      id: run.info.id,
      phase: 'macro',
      target: 'box',
      startedAt: run.info.startedAt,
      status: 'running',
      headline: 'decode 57 tok/s at c=1',
      macro: { levels: [] },
    });
    run.finish('interrupted', 'The connection dropped mid-run.');
    const summary = (await readStoredRun(run.dir))!;
    assert.equal(summary.status, 'interrupted');
    assert.equal(summary.reason, 'The connection dropped mid-run.');
    assert.equal(summary.headline, 'decode 57 tok/s at c=1');
  });

  it("draws a macro run made by the CLI with its requests, from its event log, on the run's timeline", async () => {
    const run = RunFolder.create(workspace, 'macro', 'cli-box', {});
    const record = (id: number, runS: number, ok: boolean) => ({
      id,
      ok,
      reason: ok ? null : 'http_500',
      error: ok ? null : 'HTTP 500',
      prompt_tokens: 32,
      output_tokens: ok ? 16 : 0,
      ttft_ms: ok ? 40 : null,
      tpot_ms: ok ? 10 : null,
      e2el_ms: ok ? 190 : 5,
      itl_mean_ms: null,
      itl_max_ms: null,
      lag_ms: id === 2 ? 30 : 0,
      start_s: runS,
      run_s: runS,
    });
    run.appendEvent(JSON.stringify({ v: 1, t: 1, type: 'log', level: 'info', message: 'macro.request is in this line but it is a log' }));
    [record(1, 0, true), record(2, 0.5, true), record(3, 1, false)].forEach((r) =>
      run.appendEvent(JSON.stringify({ v: 1, t: 2, type: 'macro.request', level: 0, record: r })),
    );
    run.writeResult({ levels: [{ level: 0, max_concurrency: 2, request_rate: null, completed: 2, failed: 1 }] });
    run.finish('completed');
    const data = timelineData((await readStoredRun(run.dir))!)!;
    assert.equal(data.requests.count, 3);
    assert.deepEqual(Array.from(data.requests.ok), [1, 1, 0]);
    // The second request was held 30 ms by the load generator before its send at 0.5 s.
    assert.deepEqual(requestSegments(data.requests, 1)[0], { kind: 'queued', from: 0.47, to: 0.5 });
    assert.deepEqual(Array.from(data.requests.tokens), [16, 16, 0]);
  });
});

describe('stored runs listed for the sidebar', () => {
  let workspace: string;
  let stored: StoredRuns;
  beforeEach(() => {
    workspace = mkdtempSync(join(tmpdir(), 'infbench-list-'));
    stored = new StoredRuns(() => workspace);
  });
  afterEach(() => rmSync(workspace, { recursive: true, force: true }));

  const at = (s: number) => new Date(Date.UTC(2025, 0, 1, 12, 0, s));

  it('lists nothing, without failing, in a workspace that has no runs folder yet', async () => {
    assert.equal(await stored.refresh(), false);
    assert.deepEqual(stored.runs, []);
  });

  it('lists every run folder newest first, as the run folders themselves read, each summary as one folder reads', async () => {
    const micro = RunFolder.create(workspace, 'micro', 'box', {}, at(1));
    micro.writeResult({ headline: 'GEMM 1.2 TB/s', points: [] });
    micro.finish('completed');
    const macro = RunFolder.create(workspace, 'macro', 'box', {}, at(2));
    saveRunView(workspace, {
      id: macro.info.id,
      phase: 'macro',
      target: 'box',
      startedAt: macro.info.startedAt,
      status: 'running',
      headline: 'decode 57 tok/s at c=1',
      macro: { levels: [] },
    });
    RunFolder.create(workspace, 'probe', 'other', {}, at(3)).finish('failed', 'no GPUs');
    writeFileSync(join(runsRoot(workspace), 'notes.txt'), 'not a run');
    assert.equal(await stored.refresh(), true);
    assert.deepEqual(
      stored.runs.map((r) => r.id),
      RunFolder.list(workspace).map((r) => r.info.id),
    );
    for (const run of stored.runs) assert.deepEqual(run, await readStoredRun(join(runsRoot(workspace), run.id)));
    assert.equal(stored.runs[1].headline, 'decode 57 tok/s at c=1');
    assert.equal(stored.runs[2].headline, 'GEMM 1.2 TB/s');
  });

  it('skips a run folder whose meta.json is half-written, and lists it once it is whole', async () => {
    const whole = RunFolder.create(workspace, 'macro', 'box', {}, at(1));
    const cut = join(runsRoot(workspace), 'being-written-macro');
    mkdirSync(cut);
    writeFileSync(metaPath(cut), '{"id": "being-written-macro", "phase": "ma');
    await stored.refresh();
    assert.deepEqual(
      stored.runs.map((r) => r.id),
      [whole.info.id],
    );
    writeFileSync(
      metaPath(cut),
      JSON.stringify({ id: 'being-written-macro', phase: 'macro', target: 'box', startedAt: at(2).toISOString(), status: 'running', options: {} }),
    );
    assert.equal(await stored.refresh(), true);
    assert.deepEqual(
      stored.runs.map((r) => r.id),
      ['being-written-macro', whole.info.id],
    );
  });

  it('reads a folder again only when its files changed, and drops a folder that was removed', async () => {
    const first = RunFolder.create(workspace, 'macro', 'box', {}, at(1));
    const second = RunFolder.create(workspace, 'macro', 'box', {}, at(2));
    await stored.refresh();
    const [secondBefore, firstBefore] = stored.runs;
    assert.equal(await stored.refresh(), false, 'nothing changed on disk');
    assert.equal(stored.runs[0], secondBefore, 'an unchanged folder is not read again');
    second.writeResult({ headline: 'decode 60 tok/s at c=1', levels: [] });
    second.finish('completed');
    assert.equal(await stored.refresh(), true);
    assert.equal(stored.runs[0].status, 'completed');
    assert.equal(stored.runs[0].headline, 'decode 60 tok/s at c=1');
    assert.equal(stored.runs[1], firstBefore);
    rmSync(first.dir, { recursive: true });
    assert.equal(await stored.refresh(), true);
    assert.deepEqual(
      stored.runs.map((r) => r.id),
      [second.info.id],
    );
  });

  it('gives calls that come while a read goes one read after it, which sees what each of them would have', async () => {
    RunFolder.create(workspace, 'macro', 'box', {}, at(1));
    const running = stored.refresh();
    await Promise.resolve(); // the first read has started
    const queued = [stored.refresh(), stored.refresh()];
    assert.notEqual(queued[0], running);
    assert.equal(queued[0], queued[1]);
    const late = RunFolder.create(workspace, 'micro', 'box', {}, at(2));
    await running;
    await Promise.all(queued);
    assert.equal(stored.runs[0].id, late.info.id);
  });

  it('restores each target from its newest completed probe', async () => {
    const probe = (target: string, s: number, status: 'completed' | 'failed', model: string) => {
      const run = RunFolder.create(workspace, 'probe', target, {}, at(s));
      run.writeResult({
        server: { reachable: true, kind: 'vllm', version: '0.11.0', models: [{ id: model }] },
        gpus: { available: true, devices: [{ index: 0, name: 'NVIDIA H200', memory_used_mib: 1024, memory_total_mib: 143771 }] },
      });
      run.finish(status);
    };
    probe('box', 1, 'completed', 'old-model');
    probe('box', 2, 'completed', 'new-model');
    probe('box', 3, 'failed', 'failed-model');
    probe('other', 4, 'completed', 'other-model');
    await stored.refresh();
    const states = await newestProbeStates(
      workspace,
      stored.runs.filter((r) => r.phase === 'probe'),
    );
    assert.deepEqual([...states.keys()].sort(), ['box', 'other']);
    assert.equal(states.get('box')!.model, 'new-model');
    assert.equal(states.get('box')!.serverKind, 'vLLM');
    assert.deepEqual(states.get('other')!.gpus, [{ index: 0, name: 'NVIDIA H200', memoryUsedMiB: 1024, memoryTotalMiB: 143771 }]);
  });
});
