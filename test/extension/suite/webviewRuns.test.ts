import * as assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import * as vscode from 'vscode';
import { defaultFindingsDocument } from '../../../src/core/findings/campaignName';
import { RunningSimulator, startSimulator } from '../../../src/core/macro/simulator';
import type { RunSummary } from '../../../src/shared/results';
import { allTabs, closeAllEditors, sleep, waitFor, workspaceFolder } from '../helpers';

// The suite is bundled somewhere under the repository's out/: the repository is the first folder up with simulator/.
function findRepoRoot(from: string): string {
  for (let dir = from; dir !== dirname(dir); dir = dirname(dir)) if (existsSync(join(dir, 'simulator', 'vllm_sim.py'))) return dir;
  throw new Error(`no repository (a folder with simulator/vllm_sim.py) above ${from}`);
}
const repoRoot = findRepoRoot(__dirname);
const TARGET = 'sim-local';

/** Accepts the quick pick a running command shows after moving down `down` items. */
async function pickInQuickOpen(down: number): Promise<void> {
  // Options the command's second argument can also give; here the quick pick is what is under test.
  await sleep(600); // the extension host shows the quick pick; give the workbench a moment to draw it
  for (let i = 0; i < down; i++) await vscode.commands.executeCommand('workbench.action.quickOpenSelectNext');
  await vscode.commands.executeCommand('workbench.action.acceptSelectedQuickOpenItem');
}

function runFolder(id: string): string {
  return join(workspaceFolder(), '.inference-bench', 'runs', id);
}

describe('running phases from the palette (results view, sidebar, findings)', function () {
  this.timeout(120_000);
  let sim: RunningSimulator;

  before(async () => {
    // The simulator is found from the working directory; the extension host's is not the repository.
    const cwd = process.cwd();
    process.chdir(repoRoot);
    // A fast timing model (2 ms decode steps) so that a sweep takes seconds; the numbers are the simulator's.
    const starting = startSimulator({ stepBaseMs: 2, stepPerSeqMs: 0.02, prefillPerTokenMs: 0.001 });
    process.chdir(cwd);
    sim = await starting;
    await vscode.workspace
      .getConfiguration('inferenceBench')
      .update('targets', [{ name: TARGET, kind: 'local', serverUrl: sim.url, python: 'python3' }], vscode.ConfigurationTarget.Workspace);
  });

  after(async () => {
    await vscode.workspace.getConfiguration('inferenceBench').update('targets', undefined, vscode.ConfigurationTarget.Workspace);
    await sim?.stop();
    await closeAllEditors();
  });

  it('Run Macro Phase with the seed workload measures single stream then the sweep, and saves what the views draw', async () => {
    const running = vscode.commands.executeCommand<RunSummary | undefined>('inferenceBench.runMacro', TARGET);
    await pickInQuickOpen(0);
    const run = await running;
    assert.ok(run, 'the command returned no run');
    assert.equal(run.status, 'completed', run.reason);
    assert.equal(run.simulated, true, 'a run against the simulator must say so');
    assert.deepEqual(
      run.macro!.levels.map((l) => l.max_concurrency),
      [1, 8, 32, 64],
    );
    assert.match(run.headline ?? '', /tok\/s/);
    const completed = run.macro!.levels.reduce((n, l) => n + l.completed, 0);
    assert.ok(run.macro!.requests!.filter((r) => r.ok).length >= completed, 'fewer request points than completed requests');
    // What a reload draws: the saved view has the same levels.
    const saved = JSON.parse(readFileSync(join(runFolder(run.id), 'view.json'), 'utf8')) as RunSummary;
    assert.deepEqual(
      saved.macro!.levels.map((l) => l.output_throughput),
      run.macro!.levels.map((l) => l.output_throughput),
    );
    // The results panel came up for the run.
    assert.ok(
      allTabs().some((t) => t.input instanceof vscode.TabInputWebview && t.input.viewType.endsWith('inferenceBench.results')),
      'no results panel',
    );
    // The findings document gained the run's section.
    const findings = join(workspaceFolder(), defaultFindingsDocument(workspaceFolder()));
    const text = await waitFor('the macro section in the findings document', () => {
      const doc = vscode.workspace.textDocuments.find((d) => d.uri.fsPath === findings);
      const t = doc?.getText() ?? (existsSync(findings) ? readFileSync(findings, 'utf8') : '');
      return t.includes(run.id) ? t : undefined;
    });
    assert.match(text, new RegExp(`Serving benchmark — ${TARGET}`));
  });

  it('Stop cancels a sweep part-way and keeps the levels that finished', async () => {
    const root = join(workspaceFolder(), '.inference-bench', 'runs');
    const before = new Set(existsSync(root) ? readdirSync(root) : []);
    const running = vscode.commands.executeCommand<RunSummary | undefined>('inferenceBench.runMacro', TARGET, {
      concurrency: [1, 2, 4, 8, 16, 32, 64, 128, 256],
    });
    // Stop once the new run has finished its first level.
    const folder = await waitFor(
      'the first finished level of the new run',
      () => {
        const fresh = (existsSync(root) ? readdirSync(root) : []).find((d) => d.endsWith('-macro') && !before.has(d));
        const events = fresh ? join(root, fresh, 'events.jsonl') : undefined;
        return events && existsSync(events) && readFileSync(events, 'utf8').includes('"partial":false') ? join(root, fresh!) : undefined;
      },
      60_000,
    );
    await vscode.commands.executeCommand('inferenceBench.stop');
    const run = await running;
    assert.ok(run);
    assert.equal(run.status, 'cancelled');
    assert.ok(run.macro!.levels.length >= 1 && run.macro!.levels.length < 9, `levels kept: ${run.macro!.levels.length}`);
    const meta = JSON.parse(readFileSync(join(folder, 'meta.json'), 'utf8')) as { status: string };
    assert.equal(meta.status, 'cancelled');
  });

  it('Run All Phases probes, measures the server, runs micro (or says why it cannot) and profiles, in that order', async function () {
    this.timeout(240_000);
    // A second simulator with its profiler on, as a server started with --profiler-config would be.
    const cwd = process.cwd();
    process.chdir(repoRoot);
    const starting = startSimulator({ stepBaseMs: 2, stepPerSeqMs: 0.02, prefillPerTokenMs: 0.001, profilerDir: join(workspaceFolder(), '.sim-traces') });
    process.chdir(cwd);
    const profiled = await starting;
    try {
      const name = 'sim-profiled';
      await vscode.workspace
        .getConfiguration('inferenceBench')
        .update('targets', [{ name, kind: 'local', serverUrl: profiled.url, python: 'python3' }], vscode.ConfigurationTarget.Workspace);
      const root = join(workspaceFolder(), '.inference-bench', 'runs');
      const before = new Set(existsSync(root) ? readdirSync(root) : []);
      await closeAllEditors();
      // The macro workload Run All asks for first (a quick pick from the palette) and the plan's yes, given here as a keybinding would.
      await vscode.commands.executeCommand('inferenceBench.runAll', name, { macro: { concurrency: [1, 2], requests: 4 }, yes: true });
      // The probe names the findings document (model, GPU, bench N) before it is shown: no other document was opened for it.
      const findingsFile = join(workspaceFolder(), defaultFindingsDocument(workspaceFolder()));
      assert.match(basename(findingsFile), /^[a-z0-9]+bench\d+\.md$/);
      const documentTabs = allTabs().flatMap((t) => (t.input instanceof vscode.TabInputText ? [t.input.uri.fsPath] : []));
      assert.deepEqual(documentTabs, [findingsFile], 'the documents Run All Phases showed');
      // The run folders (Run All's plan record sits beside them, in run-all/).
      const made = readdirSync(root)
        .filter((d) => !before.has(d) && existsSync(join(root, d, 'meta.json')))
        .sort();
      const phases = made.map((d) => JSON.parse(readFileSync(join(root, d, 'meta.json'), 'utf8')) as { phase: string; status: string; reason?: string });
      assert.deepEqual(
        phases.map((p) => p.phase),
        ['probe', 'macro', 'micro', 'profile'],
        'the phases in order',
      );
      assert.deepEqual(
        phases.filter((p) => p.phase !== 'micro').map((p) => p.status),
        ['completed', 'completed', 'completed'],
      );
      const macroMeta = JSON.parse(readFileSync(join(root, made[1], 'meta.json'), 'utf8')) as { options: { concurrency?: number[]; requests?: number } };
      assert.deepEqual([macroMeta.options.concurrency, macroMeta.options.requests], [[1, 2], 4], 'the macro workload chosen, not the full sweep');
      // Micro runs on the CPU where the extension host's python3 has PyTorch; where it has none it
      // says so, and the profiler still runs after it.
      const micro = phases.find((p) => p.phase === 'micro')!;
      if (micro.status === 'completed') {
        const view = JSON.parse(readFileSync(join(root, made[2], 'view.json'), 'utf8')) as RunSummary;
        assert.ok(view.micro?.gemm?.length, 'a completed micro run with no GEMM points to draw');
      } else assert.ok(micro.reason, 'the micro phase gave no reason');
      const profile = JSON.parse(readFileSync(join(root, made[3], 'view.json'), 'utf8')) as RunSummary;
      assert.match(profile.headline ?? '', /all-reduce/);
    } finally {
      await profiled.stop();
    }
  });

  it('Analyze Trace File breaks a real H200 trace down into a profile run, with no server', async () => {
    const trace = join(repoRoot, 'test', 'fixtures', 'traces', 'llama_cudagraph_decode.pt.trace.json.gz');
    const run = await vscode.commands.executeCommand<RunSummary | undefined>('inferenceBench.analyzeTrace', [trace]);
    assert.ok(run, 'no run came back');
    assert.equal(run.status, 'completed', run.reason);
    const profile = run.profile!;
    assert.ok(profile.categories!.length >= 3, `categories: ${profile.categories}`);
    assert.equal(profile.ranks!.length, 1);
    const rank = profile.ranks![0];
    const sum = Object.values(rank.by_category).reduce((a, b) => a + b, 0);
    assert.ok(Math.abs(sum - rank.step_us) < 1e-6 * rank.step_us, `categories add up to ${sum} µs, the step is ${rank.step_us} µs`);
    assert.ok(profile.kernels!.length > 0);
    assert.ok(existsSync(join(runFolder(run.id), 'result.json')), 'the breakdown was not saved in the run folder');
  });
});
