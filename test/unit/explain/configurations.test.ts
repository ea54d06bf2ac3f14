import * as assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { budgetFindingsForWorkspace, budgetViewForWorkspace, explainRuns, ExplainError, selectRuns } from '../../../src/core/explain/campaign';
import { PhaseName, RunFolder } from '../../../src/core/runs/runFolder';
import { configurationOf, unknownConfiguration } from '../../../src/core/runs/serverConfiguration';
import { configuredRecipe, parseConfiguration } from '../../../src/core/server/configurations';
import { compareRunFolders } from '../../../src/core/compare/compareRuns';
import { comparisonText } from '../../../src/cli/commands/compare';
import { ServerRecipe } from '../../../src/remote/agentProtocol';
import { RunConfiguration } from '../../../src/shared/results';

// The server a user runs, as `server status` adopts it (its whole environment, a secret redacted).
const served: ServerRecipe = {
  url: 'http://127.0.0.1:8000',
  argv: ['vllm', 'serve', 'llama', '--max-num-seqs', '10', '--port', '8000', '--api-key', 'REDACTED'],
  cwd: '/srv',
  env: { CUDA_VISIBLE_DEVICES: '0', PATH: '/usr/bin', SSH_CONNECTION: '10.0.0.5 51234 10.0.0.9 22', OPENAI_API_KEY: 'REDACTED' },
  user: 'ml',
  manager: { kind: 'process' } as ServerRecipe['manager'],
  kind: 'vllm' as ServerRecipe['kind'],
  version: '0.16.0',
  identity: { pid: 4242, start_ticks: 99 } as ServerRecipe['identity'],
};
const production = configurationOf(served, 'production');
// The same server restarted with the profiler on (profile --restart-with-profiler), from another SSH session.
const withProfiler = configurationOf(
  {
    ...served,
    argv: [...served.argv, '--profiler-config', '{"profiler":"torch","torch_profiler_dir":"/tmp/t"}'],
    env: { ...served.env, SSH_CONNECTION: '10.0.0.7 40000 10.0.0.9 22' },
  },
  'production',
);
// Compare Server Configurations with a fast and a slow flag set: each a macro run of its own.
const fastRecipe = configuredRecipe(served, parseConfiguration('fast: --max-num-seqs 5'));
const slowRecipe = configuredRecipe(served, parseConfiguration('slow: --max-num-seqs 20 --enforce-eager'));
const fast = configurationOf(fastRecipe, 'fast', { comparison: 'cmp', index: 0 });
const slow = configurationOf(slowRecipe, 'slow', { comparison: 'cmp', index: 1 });

const ws = () => mkdtempSync(join(tmpdir(), 'ib-config-'));
const macroResult = (tpot: number) => ({ levels: [{ max_concurrency: 1, request_rate: null, completed: 8, median_tpot_ms: tpot, mean_tpot_ms: tpot }] });
// A profiled decode step of 10.40 ms at batch 1.
const profileResult = {
  ranks: [{ rank: 0, step_us: 10_400, by_category: { gemm: 6_000, attention: 2_400, idle: 2_000 } }],
  categories: ['gemm', 'attention', 'idle'],
  kernels: [],
};

function run(workspace: string, phase: PhaseName, at: string, result: unknown, configuration: RunConfiguration): RunFolder {
  const r = RunFolder.create(workspace, phase, 'box', { url: 'http://127.0.0.1:8000', concurrency: 1 }, new Date(at));
  r.update({ configuration });
  r.writeResult(result);
  r.finish('completed');
  return r;
}

/** Production measured and profiled, then a configurations comparison whose slow run is the newest macro run. */
function afterComparison() {
  const w = ws();
  const prodMacro = run(w, 'macro', '2026-12-01T10:00:00Z', macroResult(10.9), production);
  const prodProfile = run(w, 'profile', '2026-12-01T10:30:00Z', profileResult, withProfiler);
  const fastMacro = run(w, 'macro', '2026-12-01T11:00:00Z', macroResult(8.2), fast);
  const slowMacro = run(w, 'macro', '2026-12-01T11:10:00Z', macroResult(20.3), slow);
  return { w, prodMacro, prodProfile, fastMacro, slowMacro };
}

describe('a decode-step budget of one server configuration', () => {
  it("never sets a comparison's slow configuration beside the production profile, and names the newer runs it left out", () => {
    const { w, prodMacro, prodProfile, fastMacro, slowMacro } = afterComparison();
    const b = explainRuns(selectRuns(w));
    // The profile restarted with the profiler is the configuration it profiles: the same id as production's.
    assert.equal(withProfiler.id, production.id);
    assert.equal(b.runs.profile, prodProfile.info.id);
    assert.equal(b.runs.macro, prodMacro.info.id, 'the production macro run, not the newer slow one');
    assert.equal(b.measured.tpot?.median_ms, 10.9);
    // 10.9 − 10.4: half a millisecond outside the GPU step, not the 9.9 ms (48.8 %) of slow's 20.30 ms.
    const gap = b.view.bars.find((x) => x.key === 'host_gap')!;
    assert.ok(Math.abs(gap.ms - 0.5) < 1e-9, String(gap.ms));
    assert.deepEqual(b.scope?.configuration, { id: production.id, name: 'production' });
    assert.deepEqual(b.leftOut, [
      `macro run ${slowMacro.info.id} measured server configuration 'slow' (${slow.id}), not 'production' (${production.id}): another server configuration`,
      `macro run ${fastMacro.info.id} measured server configuration 'fast' (${fast.id}), not 'production' (${production.id}): another server configuration`,
    ]);
    // What the findings document and the results view say.
    const findings = budgetFindingsForWorkspace(w, 'box')!;
    const text = findings.lines.join('\n');
    assert.match(text, new RegExp(`server configuration \\*\\*production\\*\\* \\(\`${production.id}\`\\)`));
    assert.match(text, new RegExp(`Not used: macro run ${slowMacro.info.id} measured server configuration 'slow'`));
    const view = budgetViewForWorkspace(w, 'box')!;
    assert.equal(view.leftOut?.length, 2);
    assert.equal(view.scope?.configuration?.name, 'production');
  });

  it('accounts the configuration the user names, with the runs of the others left out and the hole it has', () => {
    const { w, slowMacro, prodProfile } = afterComparison();
    const b = explainRuns(selectRuns(w, undefined, { configuration: 'slow' }));
    assert.equal(b.runs.macro, slowMacro.info.id);
    assert.equal(b.runs.profile, undefined, "production's profile is not slow's");
    assert.equal(
      b.view.bars.find((x) => x.key === 'host_gap'),
      undefined,
    );
    assert.ok(
      b.leftOut.includes(
        `profile run ${prodProfile.info.id} measured server configuration 'production' (${production.id}), not 'slow' (${slow.id}): another server configuration`,
      ),
    );
    assert.match(b.missing.find((m) => m.phase === 'profile')!.adds, new RegExp(`with the server in configuration 'slow' \\(${slow.id}\\)`));
    // By id too; an unknown name says which configurations there are.
    assert.equal(explainRuns(selectRuns(w, undefined, { configuration: slow.id.slice(0, 6) })).runs.macro, slowMacro.info.id);
    assert.throws(
      () => selectRuns(w, undefined, { configuration: 'medium' }),
      (e: Error) =>
        e instanceof ExplainError && /measured configuration "medium"/.test(e.message) && /'slow' \(/.test(e.message) && /'production' \(/.test(e.message),
    );
  });

  it('refuses --runs that set two configurations side by side, naming both', () => {
    const { w, slowMacro, prodProfile } = afterComparison();
    assert.throws(
      () => selectRuns(w, [slowMacro.info.id, prodProfile.info.id]),
      (e: Error) =>
        e instanceof ExplainError && /--runs mixes server configurations/.test(e.message) && /'slow'/.test(e.message) && /'production'/.test(e.message),
    );
  });

  it('pairs a run of an unknown configuration only with others unknown, and says so when it does', () => {
    const w = ws();
    const hidden = unknownConfiguration('the process serving http://127.0.0.1:8000 is not visible from where the agent runs');
    const known = run(w, 'macro', '2026-12-01T10:00:00Z', macroResult(10.9), production);
    const profile = run(w, 'profile', '2026-12-01T10:30:00Z', profileResult, hidden);
    const b = explainRuns(selectRuns(w));
    assert.equal(b.runs.profile, profile.info.id);
    assert.equal(b.runs.macro, undefined, 'a known configuration is not set beside one that is not known');
    assert.match(b.leftOut.join('\n'), new RegExp(`macro run ${known.info.id} measured .*not known to be the same server configuration`));
    const unknownMacro = run(w, 'macro', '2026-12-01T11:00:00Z', macroResult(11), hidden);
    const paired = explainRuns(selectRuns(w));
    assert.equal(paired.runs.macro, unknownMacro.info.id);
    assert.match(paired.caveats.join('\n'), /Paired with care: the server configuration of these runs is not known \(the process serving/);
  });

  it('compares two configurations of one phase, saying first that every difference includes the change of flags', () => {
    const { prodMacro, slowMacro } = afterComparison();
    const c = compareRunFolders(prodMacro, slowMacro);
    assert.equal(
      c.configurations,
      `These runs measured two server configurations: A 'production' (${production.id}), B 'slow' (${slow.id}) (B sets --max-num-seqs 20 (was 10), adds --enforce-eager). Every difference below includes that change, not only noise or the workload.`,
    );
    assert.equal(c.summary[0], c.configurations);
    assert.match(c.a.label, new RegExp(`configuration production \\(${production.id}\\)`));
    const text = comparisonText(c, false);
    assert.match(text, /^⚠ These runs measured two server configurations/m);
    assert.doesNotMatch(text, /▲ These runs/);
    // Two runs of one configuration: nothing to say.
    const again = run(mkdtempSync(join(tmpdir(), 'ib-config-')), 'macro', '2026-12-01T12:00:00Z', macroResult(10.8), production);
    assert.equal(compareRunFolders(prodMacro, again).configurations, undefined);
  });
});
