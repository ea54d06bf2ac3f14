import * as assert from 'node:assert/strict';
import { chmodSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import * as vscode from 'vscode';
import { RunningSimulator, startSimulator } from '../../../src/core/macro/simulator';
import type { RunAllRecord } from '../../../src/core/campaign/runAllPlan';
import { runAllRecordPath } from '../../../src/core/campaign/runAllRecord';
import { closeAllEditors, waitFor, workspaceFolder } from '../helpers';

function findRepoRoot(from: string): string {
  for (let dir = from; dir !== dirname(dir); dir = dirname(dir)) if (existsSync(join(dir, 'simulator', 'vllm_sim.py'))) return dir;
  throw new Error(`no repository (a folder with simulator/vllm_sim.py) above ${from}`);
}
const repoRoot = findRepoRoot(__dirname);
const TARGET = 'sim-resume';

interface Meta {
  id: string;
  phase: string;
  status: string;
  reason?: string;
}

describe('Run All Phases resumes where it stopped', function () {
  this.timeout(240_000);
  let sim: RunningSimulator;
  const runsRoot = () => join(workspaceFolder(), '.inference-bench', 'runs');
  const newRuns = (before: Set<string>): Meta[] =>
    readdirSync(runsRoot())
      .filter((d) => !before.has(d) && existsSync(join(runsRoot(), d, 'meta.json')))
      .sort()
      .map((d) => JSON.parse(readFileSync(join(runsRoot(), d, 'meta.json'), 'utf8')) as Meta);
  const record = () => JSON.parse(readFileSync(runAllRecordPath(workspaceFolder(), TARGET), 'utf8')) as RunAllRecord;

  before(async () => {
    const cwd = process.cwd();
    process.chdir(repoRoot);
    // Its profiler on, as a server started with --profiler-config: the plan then needs no restart. One
    // rank of two layers keeps the traces (and the test) small; the breakdown is not what is tested here.
    const starting = startSimulator({
      stepBaseMs: 2,
      stepPerSeqMs: 0.02,
      prefillPerTokenMs: 0.001,
      layers: 2,
      worldSize: 1,
      profilerDir: join(workspaceFolder(), '.sim-traces-resume'),
    });
    process.chdir(cwd);
    sim = await starting;
    // The target's Python, standing in for a micro phase that takes long: its first micro run waits
    // (until Stop ends it, as a user stops a long run or closes the window), every other call is python3.
    const python = join(workspaceFolder(), 'slow-first-micro-python');
    writeFileSync(
      python,
      '#!/bin/sh\nfor a in "$@"; do if [ "$a" = micro ] && [ ! -e "$0.once" ]; then : > "$0.once"; exec sleep 600; fi; done\nexec python3 "$@"\n',
    );
    chmodSync(python, 0o755);
    await vscode.workspace
      .getConfiguration('inferenceBench')
      .update('targets', [{ name: TARGET, kind: 'local', serverUrl: sim.url, python }], vscode.ConfigurationTarget.Workspace);
  });

  after(async () => {
    await vscode.workspace.getConfiguration('inferenceBench').update('targets', undefined, vscode.ConfigurationTarget.Workspace);
    await sim?.stop();
    await closeAllEditors();
  });

  it('keeps the plan, and after a Run All stopped during micro goes on from micro without probing or measuring the server again', async () => {
    const before = new Set(existsSync(runsRoot()) ? readdirSync(runsRoot()) : []);
    const macro = { concurrency: [1, 2], requests: 4 };
    const first = vscode.commands.executeCommand('inferenceBench.runAll', TARGET, { macro, yes: true });
    // Stopped once micro is under way: macro is done by then.
    await waitFor('the micro step under way', () => existsSync(join(workspaceFolder(), 'slow-first-micro-python.once')), 120_000);
    await vscode.commands.executeCommand('inferenceBench.stop');
    await first;
    const stopped = record();
    assert.deepEqual(
      stopped.steps.map((s) => [s.kind, s.status]),
      [
        ['probe', 'done'],
        ['macro', 'done'],
        ['micro', 'cancelled'],
        ['profile', 'pending'],
      ],
      'the plan as the interrupted Run All left it',
    );
    // No GPU here and the profiler on: the plan says why it neither stops nor restarts the server.
    assert.deepEqual(
      stopped.omitted.map((o) => o.kind),
      ['stop', 'restart-profiler'],
    );
    assert.match(stopped.omitted[0].why, /no GPU/);
    assert.match(stopped.omitted[1].why, /profiler is already on/);
    assert.deepEqual(stopped.macro, macro, 'the macro workload is kept for the resume');
    const interrupted = newRuns(before);
    assert.deepEqual(
      interrupted.map((r) => r.phase),
      ['probe', 'macro', 'micro'],
    );

    const middle = new Set(readdirSync(runsRoot()));
    // The choice the modal offers ("Resume from Step 3 (micro)"), given as a caller can.
    await vscode.commands.executeCommand('inferenceBench.runAll', TARGET, { unfinished: 'resume' });
    const resumed = newRuns(middle);
    assert.deepEqual(
      resumed.map((r) => r.phase),
      ['micro', 'profile'],
      'the resume ran micro and profile only',
    );
    assert.equal(resumed[1].status, 'completed', resumed[1].reason);
    const finished = record();
    assert.equal(finished.state, 'finished');
    assert.equal(finished.steps[1].runId, interrupted[1].id, "the macro step keeps the first Run All's run");
    assert.equal(finished.steps[3].runId, resumed[1].id);
    assert.equal(finished.steps[3].status, 'done');
  });
});
