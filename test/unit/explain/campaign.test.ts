import * as assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { budgetViewForWorkspace, explainRuns, ExplainError, selectRuns } from '../../../src/core/explain/campaign';
import { PhaseName, RunFolder } from '../../../src/core/runs/runFolder';
import { configurationOf } from '../../../src/core/runs/serverConfiguration';

const ws = () => mkdtempSync(join(tmpdir(), 'ib-explain-'));
// Every run records the server configuration it measured; these all measured the server as it runs.
const production = configurationOf({ argv: ['vllm', 'serve', 'llama', '--port', '8000'], env: { CUDA_VISIBLE_DEVICES: '0' } }, 'production');

function run(
  workspace: string,
  phase: PhaseName,
  at: string,
  result: unknown,
  status: 'completed' | 'failed' = 'completed',
  options: Record<string, unknown> = {},
): RunFolder {
  const r = RunFolder.create(workspace, phase, 'sim', options, new Date(at));
  r.update({ configuration: production });
  if (result !== undefined) r.writeResult(result);
  r.finish(status);
  return r;
}

const macroResult = (tpot: number) => ({ levels: [{ max_concurrency: 1, request_rate: null, completed: 8, median_tpot_ms: tpot, mean_tpot_ms: tpot }] });
const profileResult = {
  ranks: [{ rank: 0, step_us: 20_000, by_category: { 'all-reduce': 10_000, gemm: 6_000, idle: 4_000 } }],
  categories: ['all-reduce', 'gemm', 'idle'],
  kernels: [],
};

describe('choosing the runs a budget is built from', () => {
  it('takes the newest completed run of each phase, skipping failed ones and runs without a result', () => {
    const w = ws();
    run(w, 'macro', '2026-12-01T10:00:00Z', macroResult(21));
    const newest = run(w, 'macro', '2026-12-01T11:00:00Z', macroResult(22));
    run(w, 'macro', '2026-12-01T12:00:00Z', macroResult(99), 'failed');
    run(w, 'profile', '2026-12-01T12:30:00Z', undefined);
    const profile = run(w, 'profile', '2026-12-01T09:00:00Z', profileResult, 'completed', { concurrency: 1 });
    const chosen = selectRuns(w);
    assert.equal(chosen.macro?.info.id, newest.info.id);
    assert.equal(chosen.profile?.info.id, profile.info.id);
    assert.equal(chosen.micro, undefined);
    const b = explainRuns(chosen);
    assert.equal(b.measured.tpot?.median_ms, 22);
    assert.equal(b.measured.step?.ms, 20);
    assert.ok(Math.abs(b.gaps.find((g) => g.key === 'host_overhead')!.ms - 2) < 1e-9);
  });

  it('prefers our own macro run to a newer imported vllm bench serve result, and uses the import when it is all there is', () => {
    const w = ws();
    const imported = run(w, 'macro', '2026-12-01T12:00:00Z', macroResult(30), 'completed', { tool: 'vllm bench serve' });
    assert.equal(selectRuns(w).macro?.info.id, imported.info.id);
    const ours = run(w, 'macro', '2026-12-01T10:00:00Z', macroResult(21));
    assert.equal(selectRuns(w).macro?.info.id, ours.info.id);
  });

  it('sets the profile beside the newest macro run that ran its batch, not merely the newest macro run', () => {
    const w = ws();
    const sweep = run(w, 'macro', '2026-12-01T10:00:00Z', {
      levels: [
        { max_concurrency: 4, completed: 16, median_tpot_ms: 22.3 },
        { max_concurrency: 16, completed: 64, median_tpot_ms: 24.7 },
      ],
    });
    run(w, 'macro', '2026-12-01T11:00:00Z', macroResult(21.7));
    run(w, 'profile', '2026-12-01T12:00:00Z', { ...profileResult, capture: { workload: { concurrency: 4 } } });
    const chosen = selectRuns(w);
    assert.equal(chosen.macro?.info.id, sweep.info.id);
    const b = explainRuns(chosen);
    assert.equal(b.batch, 4);
    assert.equal(b.measured.tpot?.median_ms, 22.3);
    assert.equal(b.caveats.length, 0);
  });

  it('takes the runs named with --runs, one per phase, and says what is wrong with a bad list', () => {
    const w = ws();
    const old = run(w, 'macro', '2026-12-01T10:00:00Z', macroResult(21));
    const other = run(w, 'macro', '2026-12-01T11:00:00Z', macroResult(22));
    assert.equal(selectRuns(w, [old.info.id]).macro?.info.id, old.info.id);
    assert.throws(
      () => selectRuns(w, [old.info.id, other.info.id]),
      (e: Error) => e instanceof ExplainError && /names two macro runs/.test(e.message),
    );
    assert.throws(() => selectRuns(w, ['2025-nothing']), /No run "2025-nothing"/);
  });

  // Two targets in one workspace, as a user with a real server and the simulator has them: the real
  // server's macro run (TPOT 20 ms) must never be set beside the simulator's profile (22.3 ms step).
  const onTarget = (workspace: string, phase: PhaseName, at: string, result: unknown, target: string, url?: string, options: Record<string, unknown> = {}) => {
    const r = RunFolder.create(workspace, phase, target, { ...options, ...(url ? { url } : {}) }, new Date(at));
    r.update({ configuration: production });
    r.writeResult(result);
    r.finish('completed');
    return r;
  };

  it("never sets one target's macro run beside another target's profile, and names the missing phase for this target", () => {
    const w = ws();
    const real = onTarget(w, 'macro', '2026-12-01T10:00:00Z', { ...macroResult(20), server: { model: 'llama' } }, 'box', 'http://127.0.0.1:8000');
    const sim = onTarget(w, 'profile', '2026-12-01T11:00:00Z', { ...profileResult, model: 'kimi-sim', simulated: true }, 'sim', 'http://127.0.0.1:9000', {
      concurrency: 1,
    });

    const forBox = explainRuns(selectRuns(w, undefined, { target: 'box' }));
    assert.equal(forBox.runs.macro, real.info.id);
    assert.equal(forBox.runs.profile, undefined, "the simulator's profile belongs to another target");
    assert.deepEqual(forBox.scope, { target: 'box', url: 'http://127.0.0.1:8000', model: 'llama', configuration: { id: production.id, name: 'production' } });
    assert.equal(
      forBox.gaps.find((g) => g.key === 'host_overhead'),
      undefined,
      'no TPOT-vs-step gap across servers',
    );
    assert.doesNotMatch(forBox.readings.join('\n'), /profiler slowed/);
    const profileHole = forBox.missing.find((m) => m.phase === 'profile')!;
    assert.equal(profileHole.command, 'infbench profile --target box --url http://127.0.0.1:8000 --concurrency 1');
    assert.equal(profileHole.action, 'Inference Bench: Run Profiler Phase on box');
    assert.match(forBox.caveats.join('\n'), new RegExp(`Not used: profile run ${sim.info.id} measured target sim, not box`));

    // With no target named, the newest macro or profile run decides: here the simulator's profile.
    const newest = explainRuns(selectRuns(w));
    assert.equal(newest.scope?.target, 'sim');
    assert.equal(newest.runs.macro, undefined);
    assert.equal(newest.simulated, true);
    assert.deepEqual(
      newest.missing.map((m) => m.phase),
      ['macro', 'micro'],
    );
    assert.match(newest.view.missing[0].action, /Run Macro Phase on sim/);
  });

  it('keeps apart two servers of one target (another URL or another model) and refuses --runs that mix them', () => {
    const w = ws();
    const macro8000 = onTarget(w, 'macro', '2026-12-01T10:00:00Z', { ...macroResult(20), server: { model: 'llama' } }, 'box', 'http://127.0.0.1:8000');
    onTarget(w, 'macro', '2026-12-01T10:30:00Z', { ...macroResult(30), server: { model: 'qwen' } }, 'box', 'http://127.0.0.1:8000');
    const profile9000 = onTarget(w, 'profile', '2026-12-01T11:00:00Z', { ...profileResult, model: 'llama' }, 'box', 'http://127.0.0.1:9000', {
      concurrency: 1,
    });
    const b = explainRuns(selectRuns(w));
    assert.equal(b.scope?.url, 'http://127.0.0.1:9000');
    assert.equal(b.runs.macro, undefined, 'both macro runs measured the server on port 8000');
    assert.throws(
      () => selectRuns(w, [macro8000.info.id, profile9000.info.id]),
      (e: Error) =>
        e instanceof ExplainError &&
        /--runs mixes servers: profile run .* measured server http:\/\/127\.0\.0\.1:9000, not http:\/\/127\.0\.0\.1:8000/.test(e.message),
    );
    // Same URL, another model served there later: the older llama run is the one that matches.
    const llamaProfile = onTarget(w, 'profile', '2026-12-01T12:00:00Z', { ...profileResult, model: 'llama' }, 'box', 'http://127.0.0.1:8000', {
      concurrency: 1,
    });
    const same = explainRuns(selectRuns(w));
    assert.equal(same.runs.profile, llamaProfile.info.id);
    assert.equal(same.runs.macro, macro8000.info.id, 'the newer macro run measured qwen, not llama');
    assert.equal(same.measured.tpot?.median_ms, 20);
  });

  it('takes no TPOT from a level that was cut short', () => {
    const w = ws();
    onTarget(
      w,
      'macro',
      '2026-12-01T10:00:00Z',
      {
        levels: [
          { max_concurrency: 1, completed: 8, median_tpot_ms: 20 },
          { max_concurrency: 4, completed: 3, median_tpot_ms: 99, partial: true },
        ],
      },
      'box',
    );
    onTarget(w, 'profile', '2026-12-01T11:00:00Z', { ...profileResult, capture: { workload: { concurrency: 4 } } }, 'box');
    const b = explainRuns(selectRuns(w));
    assert.equal(b.measured.tpot?.concurrency, 1, 'the cut c=4 level does not stand for batch 4');
    assert.equal(b.measured.tpot?.median_ms, 20);
  });

  it('gives the results view a waterfall, or nothing when the workspace has no runs', () => {
    assert.equal(budgetViewForWorkspace(ws()), undefined);
    const w = ws();
    run(w, 'profile', '2026-12-01T09:00:00Z', profileResult, 'completed', { concurrency: 1 });
    const view = budgetViewForWorkspace(w)!;
    assert.deepEqual(
      view.bars.map((b) => b.key),
      ['step', 'allreduce', 'gemm', 'idle'],
    );
    assert.deepEqual(
      view.missing.map((m) => m.phase),
      ['macro', 'micro'],
    );
  });

  it('reports a profile result with no decode-step breakdown instead of inventing one', () => {
    const w = ws();
    run(w, 'profile', '2026-12-01T09:00:00Z', { traces: ['a.json.gz'] });
    assert.throws(() => explainRuns(selectRuns(w)), /has a result without a decode-step breakdown/);
  });
});
