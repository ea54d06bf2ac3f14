import * as assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import * as vscode from 'vscode';
import { defaultFindingsDocument } from '../../../src/core/findings/campaignName';
import type { RunSummary } from '../../../src/shared/results';
import { layerKernelTable, layerTable, nsysData, slowLayerSentence } from '../../../webview-ui/src/views/nsysModules';
import { listening, processAsSeen, startUserServer, UserServer } from '../../support/userServer';
import { allTabs, closeAllEditors, waitFor, workspaceFolder } from '../helpers';

// Run Profiler Phase with Nsight Systems, from VS Code, against the user's server: the simulator
// mimicking vLLM 0.16, started from a shell as a user starts it, with layer 1 made slow in its report.
//
// No Nsight Systems runs here (no GPU, no nsys): test/support/fake-nsys/nsys is a STAND-IN, set as the
// target's nsys, that runs the server as nsys does and has the simulator write the SQLite report of its
// profiled steps at exit (simulator/sim_nsys.py). Everything else is the product's: the question, the
// consent, the restart under it, the agent reading the report, the results and the findings.
//
// The workbench's own quick picks and modal are answered by replacing vscode.window's functions for the
// length of a command (as macroCustomWorkload.test.ts does): what is under test is what the extension
// asks and what it does with the answer, not the workbench's widgets (the UI tests click those).

function findRepoRoot(from: string): string {
  for (let dir = from; dir !== dirname(dir); dir = dirname(dir)) if (existsSync(join(dir, 'simulator', 'vllm_sim.py'))) return dir;
  throw new Error(`no repository (a folder with simulator/vllm_sim.py) above ${from}`);
}
const repoRoot = findRepoRoot(__dirname);
const FAKE_NSYS = join(repoRoot, 'test', 'support', 'fake-nsys', 'nsys');
const TARGET = 'sim-nsys';
const NSYS_CHOICE = 'Nsight Systems (layers and modules inside CUDA graphs)';

interface Asked {
  picks: string[];
  warnings: { message: string; detail?: string; buttons: string[] }[];
  errors: { message: string; buttons: string[] }[];
}

type Window = {
  showQuickPick: typeof vscode.window.showQuickPick;
  showWarningMessage: typeof vscode.window.showWarningMessage;
  showErrorMessage: typeof vscode.window.showErrorMessage;
};

/** Runs Run Profiler Phase answering its quick picks by label and its modal consent with `consent` (undefined: declined). */
async function profileFromPalette(answers: { workload: string; profiler: string; consent?: string }): Promise<{ asked: Asked; run?: RunSummary }> {
  const asked: Asked = { picks: [], warnings: [], errors: [] };
  const window = vscode.window as unknown as Window;
  const saved = { showQuickPick: window.showQuickPick, showWarningMessage: window.showWarningMessage, showErrorMessage: window.showErrorMessage };
  window.showQuickPick = (async (items: readonly vscode.QuickPickItem[] | Thenable<readonly vscode.QuickPickItem[]>, options?: vscode.QuickPickOptions) => {
    asked.picks.push(options?.title ?? '');
    const list = await items;
    const want = /which profiler/.test(options?.title ?? '') ? answers.profiler : answers.workload;
    return list.find((i) => i.label === want);
  }) as unknown as typeof vscode.window.showQuickPick;
  window.showWarningMessage = (async (message: string, ...rest: unknown[]) => {
    const options = typeof rest[0] === 'object' && rest[0] !== null ? (rest[0] as vscode.MessageOptions) : undefined;
    const buttons = rest.filter((r): r is string => typeof r === 'string');
    asked.warnings.push({ message, detail: options?.detail, buttons });
    return options?.modal && answers.consent && buttons.includes(answers.consent) ? answers.consent : undefined;
  }) as unknown as typeof vscode.window.showWarningMessage;
  window.showErrorMessage = (async (message: string, ...rest: unknown[]) => {
    asked.errors.push({ message, buttons: rest.filter((r): r is string => typeof r === 'string') });
    return undefined;
  }) as unknown as typeof vscode.window.showErrorMessage;
  try {
    return { asked, run: await vscode.commands.executeCommand<RunSummary | undefined>('inferenceBench.runProfile', TARGET) };
  } finally {
    Object.assign(window, saved);
  }
}

describe('Run Profiler Phase with Nsight Systems', function () {
  this.timeout(180_000);
  let user: UserServer | undefined;
  const runsRoot = () => join(workspaceFolder(), '.inference-bench', 'runs');
  let runsBefore = new Set<string>();

  before(async () => {
    runsBefore = new Set(existsSync(runsRoot()) ? readdirSync(runsRoot()) : []);
    // Every step alike whatever its batch, three layers, layer 1's kernels 1.6 times longer in the report.
    user = await startUserServer(
      ['--mimic', 'vllm-0.16', '--layers', '3', '--slow-layer', '1:1.6', '--step-per-seq-ms', '0', '--prefill-per-token-ms', '0'],
      repoRoot,
    );
  });

  after(async () => {
    // The runs this suite made go, so that later suites find the workspace as it was.
    if (existsSync(runsRoot())) for (const d of readdirSync(runsRoot())) if (!runsBefore.has(d)) rmSync(join(runsRoot(), d), { recursive: true, force: true });
    await vscode.workspace.getConfiguration('inferenceBench').update('targets', undefined, vscode.ConfigurationTarget.Workspace);
    user?.kill();
    await closeAllEditors();
  });

  const setTarget = (nsys: string) =>
    vscode.workspace
      .getConfiguration('inferenceBench')
      .update('targets', [{ name: TARGET, kind: 'local', serverUrl: user!.url, python: 'python3', nsys }], vscode.ConfigurationTarget.Workspace);

  it("says how to get nsys where the target's is not there, and leaves the server alone", async () => {
    await setTarget('/no/such/nsys');
    const before = listening(user!.port)!;
    const { asked, run } = await profileFromPalette({ workload: 'Decode batch of 4', profiler: NSYS_CHOICE, consent: 'Restart the Server' });
    assert.equal(run, undefined, 'no run is made without nsys');
    assert.deepEqual(asked.warnings, [], 'nothing was asked to change');
    const error = asked.errors.find((e) => /Nsight Systems cannot profile/.test(e.message));
    assert.ok(error, `no message about nsys: ${JSON.stringify(asked.errors)}`);
    assert.match(error.message, /The nsys set for this target \(\/no\/such\/nsys\) is not an executable file here/);
    assert.match(error.message, /apt-get install nsight-systems-cli/);
    assert.deepEqual(error.buttons, ['Set the nsys Path…', 'Use the Torch Profiler']);
    assert.equal(listening(user!.port)!.pid, before.pid, 'the server was touched');
  });

  it('asks which profiler, shows the exact nsys command before the restart, breaks the step down by layer and module, and puts the original back', async () => {
    await setTarget(FAKE_NSYS);
    const original = processAsSeen(user!.original.pid);
    const { asked, run } = await profileFromPalette({ workload: 'Decode batch of 4', profiler: NSYS_CHOICE, consent: 'Restart the Server' });

    // The questions: the workload, then the profiler (the setting is left unset), then one consent.
    assert.deepEqual(asked.picks, [`Run Profiler Phase on ${TARGET}`, `Run Profiler Phase on ${TARGET}: which profiler`]);
    const consents = asked.warnings.filter((w) => w.buttons.includes('Restart the Server'));
    assert.equal(consents.length, 1, JSON.stringify(asked.warnings));
    const consent = `${consents[0].message}\n${consents[0].detail ?? ''}`;
    assert.ok(consent.includes(`${FAKE_NSYS} profile --trace=cuda,nvtx --cuda-graph-trace=node --sample=none`), consent);
    assert.match(consent, /--enable-layerwise-nvtx-tracing/);
    assert.ok(consent.includes(String(user!.original.pid)), `the consent does not name the server's pid ${user!.original.pid}:\n${consent}`);

    assert.ok(run, 'the command returned no run');
    assert.equal(run.status, 'completed', run.reason);
    assert.equal(run.simulated, true, 'a run against the simulator says so');
    assert.match(run.headline ?? '', /of a decode step .*layer 1's/);

    // What the results view draws (the summary the host sends it, as saved beside the run): a row per
    // layer, the slow layer named, its kernels a click away.
    const shown = JSON.parse(readFileSync(join(runsRoot(), run.id, 'view.json'), 'utf8')) as RunSummary;
    const view = nsysData(shown);
    assert.ok(view, 'the run carries no layer and module breakdown for the results view');
    const rank = view.ranks[0];
    const rows = layerTable(rank).rows;
    assert.deepEqual(
      rows.map((r) => r.layer),
      ['layer 0', 'layer 1', 'layer 2', 'outside layers'],
    );
    assert.match(String(rows[1].note), /^slowest (attention|moe|all-reduce|norm), 33% over the mean/);
    assert.equal(rows[0].note, '');
    assert.match(slowLayerSentence(rank) ?? '', /^Layer 1 is the slow one: its \S+ takes [\d.]+ ms per step, 33% over the mean of its 3 layers/);
    // Layer 1 runs 1.6 times layer 0 in each of its modules.
    assert.ok(Math.abs((rows[1].ms as number) / (rows[0].ms as number) - 1.6) < 0.01, `layer 1 ${rows[1].ms} ms, layer 0 ${rows[0].ms} ms`);
    const kernels = layerKernelTable(rank.layers[1]).rows;
    assert.ok(kernels.length >= 4, `${kernels.length} kernels listed for layer 1`);
    assert.ok(
      kernels.every((k) => /^model\.layers\.1\./.test(String(k.path)) && (k.count as number) > 0),
      JSON.stringify(kernels.slice(0, 3)),
    );
    assert.ok(shown.profile!.categories!.length > 3, 'the kernel categories stay beside the modules');
    assert.ok(
      allTabs().some((t) => t.input instanceof vscode.TabInputWebview && /results/i.test(t.label)),
      `the results view is not open: ${allTabs().map((t) => t.label)}`,
    );

    // The findings document: the sentence, the module table, the layer table.
    const findings = join(workspaceFolder(), defaultFindingsDocument(workspaceFolder()));
    const text = await waitFor(
      'the Nsight Systems section in the findings document',
      () => {
        const doc = vscode.workspace.textDocuments.find((d) => d.uri.fsPath === findings);
        const t = doc?.getText() ?? (existsSync(findings) ? readFileSync(findings, 'utf8') : '');
        return t.includes(`by layer and module — ${TARGET}`) ? t : undefined;
      },
      30_000,
    );
    const section = text.slice(text.indexOf(`by layer and module — ${TARGET}`));
    assert.match(section, /\*\*The .+ take \d+(\.\d)?% of a decode step \([\d.]+ ms of [\d.]+ ms, \d+ steps\); layer 1's \S+ [\d.]+%, 33\.3% over the mean/);
    assert.match(section, /\| module +\| ms per step \| % of step \| kernels per step \|/);
    assert.match(section, /\| layer \| ms per step \| % of step \| modules \(ms per step\) +\|/);
    assert.match(section, /Simulator/);

    // The original is back: its command line and folder, under no nsys.
    const now = await waitFor('the original server to serve again', () => listening(user!.port), 30_000);
    const back = processAsSeen(now.pid);
    assert.deepEqual(back.cmdline, original.cmdline);
    assert.equal(back.cwd, original.cwd);
    assert.ok(!back.cmdline.some((a) => a.includes('nsys')), back.cmdline.join(' '));
  });
});
