import * as assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { analyzeTraceFiles } from '../../../src/core/trace/analyze';
import { NsysModuleAnalyzer, NsysRecord } from '../../../src/core/trace/nsysModules';
import { viewableRun } from '../../../src/core/trace/profileView';
import type { RunSummary } from '../../../src/shared/results';
import { layerBars, layerKernelTable, layerTable, moduleOrder, nsysData, OUTSIDE_LAYERS, slowLayerSentence } from '../../../webview-ui/src/views/nsysModules';

// A decode step of known kernels, as the agent's reader writes its records (profile/nsys_report.py): three
// layers of an attention kernel and an all-reduce, layer 1's attention twice as long, then sampling
// and a token copy with no module range. Each figure below follows from these numbers.
const US = 1000; // ns
function records(steps: number): NsysRecord[] {
  const out: NsysRecord[] = [
    {
      type: 'nsys-header',
      version: 1,
      file: 'report.sqlite',
      stepSource: 'nvtx-range',
      stepRange: '^decode_step',
      nvtx: true,
      graphNodes: true,
      devices: [{ id: 0, name: 'NVIDIA H200' }],
    },
  ];
  let t = 0;
  const kernel = (step: number, name: string, module: string | null, us: number) => {
    out.push({ type: 'kernel', start: t, end: t + us * US, name, device: 0, stream: 7, pid: 42, graphed: true, step, module });
    t += us * US;
  };
  for (let s = 0; s < steps; s++) {
    for (let layer = 0; layer < 3; layer++) {
      kernel(s, 'flash_fwd_kernel', `model.layers.${layer}.self_attn.attn`, layer === 1 ? 200 : 100);
      kernel(s, 'cross_device_reduce_1stage', `model.layers.${layer}.self_attn.o_proj.all_reduce`, 50);
    }
    kernel(s, 'sampling_kernel', 'sampler', 30);
    kernel(s, 'void at::native::copy_kernel<float>(int)', null, 20);
  }
  out.push({
    type: 'nsys-summary',
    kernels: out.length - 1,
    graphed: out.length - 1,
    attributed: 7 * steps,
    unattributed: steps,
    outsideSteps: 0,
    noLaunchRecord: 0,
    noCaptureNode: 0,
    steps,
  });
  return out;
}

function analyzed() {
  const a = new NsysModuleAnalyzer();
  for (const r of records(4)) a.onRecord(r);
  return a.finish();
}

// A real H200 trace (test/fixtures/traces/servers/README.md) stands for the kernel categories the same run carries.
const traceDir = join(__dirname, '..', '..', 'fixtures', 'traces', 'servers', 'vllm-0.26-piecewise-tp2');
const traceFiles = readdirSync(traceDir)
  .filter((f) => f.includes('rank'))
  .map((f) => join(traceDir, f));

async function viewedRun(): Promise<RunSummary> {
  const trace = await analyzeTraceFiles(traceFiles);
  const run: RunSummary = {
    id: 'r1',
    phase: 'profile',
    target: 'gpu',
    startedAt: '2026-12-03T00:00:00Z',
    status: 'completed',
    profile: { ...trace, nsys: analyzed() } as unknown as RunSummary['profile'],
  };
  return viewableRun(run);
}

describe("an Nsight Systems profile's layer and module view", () => {
  it("keeps each layer's kernels per step with their module and path", () => {
    const layer1 = analyzed().ranks[0].layers.find((l) => l.layer === 1)!;
    assert.deepEqual(
      layer1.kernels!.map((k) => [k.name, k.module, k.path, +k.msPerStep.toFixed(3), k.countPerStep]),
      [
        ['flash_fwd_kernel', 'attention', 'model.layers.1.self_attn.attn', 0.2, 1],
        ['cross_device_reduce_1stage', 'all-reduce', 'model.layers.1.self_attn.o_proj.all_reduce', 0.05, 1],
      ],
    );
  });

  it('reaches the results view beside the kernel categories, in the shape the view draws', async () => {
    const run = await viewedRun();
    const view = nsysData(run)!;
    assert.ok(view, 'the view finds no layer and module breakdown');
    assert.ok(run.profile!.categories!.length > 3, 'the kernel categories are kept beside it');
    assert.match(view.headline, /The attention blocks take/);
    assert.equal(view.ranks[0].layers.length, 3);
    assert.equal(view.ranks[0].layers[1].kernels.length, 2);
    // The summary a view saves (view.json) reads back the same.
    assert.deepEqual(nsysData(viewableRun(JSON.parse(JSON.stringify(run)) as RunSummary)), view);
  });

  it('stacks each layer by module type, the modules outside the layers on a row of their own, no range last', async () => {
    const rank = nsysData(await viewedRun())!.ranks[0];
    assert.deepEqual(moduleOrder(rank), ['attention', 'all-reduce', 'sampling', '(no NVTX range)']);
    const bars = layerBars(rank);
    assert.deepEqual(bars.labels, ['layer 0', 'layer 1 ▲ slow', 'layer 2', OUTSIDE_LAYERS]);
    const values = Object.fromEntries(bars.stacks.map((s) => [s.module, s.values.map((v) => +v.toFixed(3))]));
    assert.deepEqual(values, {
      attention: [0.1, 0.2, 0.1, 0],
      'all-reduce': [0.05, 0.05, 0.05, 0],
      sampling: [0, 0, 0, 0.03],
      '(no NVTX range)': [0, 0, 0, 0.02],
    });
  });

  it('names the slow layer in words and in the table, so that it reads without the colours', async () => {
    const rank = nsysData(await viewedRun())!.ranks[0];
    // Attention: 0.1, 0.2, 0.1 ms; the mean 0.133, the slowest 50% over it.
    assert.equal(
      slowLayerSentence(rank),
      'Layer 1 is the slow one: its attention takes 0.200 ms per step, 50% over the mean of its 3 layers (0.133 ms; fastest layer 0, 0.100 ms).',
    );
    const table = layerTable(rank);
    const row = table.rows.find((r) => r.layer === 'layer 1')!;
    assert.equal(row.note, 'slowest attention, 50% over the mean');
    assert.equal(+(row.ms as number).toFixed(3), 0.25);
    assert.equal(table.rows.find((r) => r.layer === 'layer 0')!.note, '');
    assert.deepEqual(
      table.columns.map((c) => c.label),
      ['layer', 'ms per step', '% of step', 'attention', 'all-reduce', 'sampling', '(no NVTX range)', 'skew'],
    );
  });

  it("lists a clicked layer's kernels: name, module, ms and count per step", async () => {
    const rank = nsysData(await viewedRun())!.ranks[0];
    const t = layerKernelTable(rank.layers[1]);
    assert.match(t.title, /^Layer 1: its kernels per decode step \(0\.250 ms, 2\.0 kernels\)/);
    assert.deepEqual(
      t.rows.map((r) => [r.name, r.module, +(r.ms as number).toFixed(3), r.count]),
      [
        ['flash_fwd_kernel', 'attention', 0.2, 1],
        ['cross_device_reduce_1stage', 'all-reduce', 0.05, 1],
      ],
    );
  });

  it('draws nothing for a torch profile', async () => {
    const trace = await analyzeTraceFiles(traceFiles);
    const run = viewableRun({
      id: 'r2',
      phase: 'profile',
      target: 'gpu',
      startedAt: '2026-12-03T00:00:00Z',
      status: 'completed',
      profile: trace as unknown as RunSummary['profile'],
    });
    assert.equal(nsysData(run), undefined);
  });
});
