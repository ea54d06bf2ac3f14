import * as assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { analyzeTraceFiles } from '../../../src/core/trace/analyze';
import { viewableRun } from '../../../src/core/trace/profileView';
import type { RunSummary } from '../../../src/shared/results';
import { stepTables, stepTimelineData } from '../../../webview-ui/src/views/timeline';
import { kinetoTrace, StepSpec } from './kineto';

const dir = mkdtempSync(join(tmpdir(), 'ib-steps-'));

// 600 named decode steps, each a 100 us GEMM then a 50 us all-reduce, 200 us apart on the GPU.
const step: StepSpec = {
  annotation: 'execute_new_0_cached_4',
  gapAfter: 200,
  kernels: [
    { name: 'nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT', at: 0, dur: 100 },
    { name: 'void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(...)', at: 100, dur: 50 },
  ],
};

async function profileRun(): Promise<RunSummary> {
  const path = join(dir, 'steps.json');
  writeFileSync(path, kinetoTrace(Array.from({ length: 600 }, () => step)));
  const breakdown = await analyzeTraceFiles([path]);
  return viewableRun({ id: 'p', phase: 'profile', target: 't', startedAt: '2026-12-02T00:00:00Z', status: 'completed', profile: breakdown as never });
}

describe("a profile run's steps on their time axis", () => {
  it('keeps the first 500 steps, each where it ran with its categories adding up to the step and its kernels largest first', async () => {
    const timeline = (await profileRun()).profile!.stepTimeline!;
    assert.equal(timeline.rank, 0);
    assert.equal(timeline.steps.length, 500);
    timeline.steps.forEach((s, i) => {
      assert.equal(s.kind, 'decode');
      assert.equal(s.start_us, i * 350);
      assert.equal(s.dur_us, 150);
      assert.deepEqual(Object.fromEntries(Object.entries(s.by_category).filter(([, us]) => us > 0)), { gemm: 100, 'all-reduce': 50 });
    });
    assert.deepEqual(
      timeline.steps[0].kernels.map((k) => [k.category, k.count, k.total_us]),
      [
        ['gemm', 1, 100],
        ['all-reduce', 1, 50],
      ],
    );
  });

  it("stacks the categories a step spent time in, and a click lists that step's categories and kernels", async () => {
    const data = stepTimelineData(await profileRun())!;
    assert.deepEqual(data.categories, ['gemm', 'all-reduce']);
    const [categories, kernels] = stepTables(data.steps[3], 3, data.categories);
    assert.match(categories.title, /^Step 4 \(decode\): 0\.15 ms/);
    assert.deepEqual(
      categories.rows.map((r) => [r.category, r.ms, r.share]),
      [
        ['gemm', 0.1, (100 * 100) / 150],
        ['all-reduce', 0.05, (100 * 50) / 150],
      ],
    );
    assert.deepEqual(
      kernels.rows.map((r) => [r.name, r.count, r.us]),
      [
        ['nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT', 1, 100],
        ['vllm::cross_device_reduce_1stage<…>', 1, 50],
      ],
    );
  });
});
