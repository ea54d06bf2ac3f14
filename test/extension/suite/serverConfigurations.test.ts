import * as assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import * as vscode from 'vscode';
import { defaultFindingsDocument } from '../../../src/core/findings/campaignName';
import type { ConfigurationsCompared } from '../../../src/core/server/configurationsCompared';
import { listening, startUserServer, UserServer } from '../../support/userServer';
import { closeAllEditors, waitFor, workspaceFolder } from '../helpers';

function findRepoRoot(from: string): string {
  for (let dir = from; dir !== dirname(dir); dir = dirname(dir)) if (existsSync(join(dir, 'simulator', 'vllm_sim.py'))) return dir;
  throw new Error(`no repository (a folder with simulator/vllm_sim.py) above ${from}`);
}
const repoRoot = findRepoRoot(__dirname);
const TARGET = 'sim-configs';

describe('Compare Server Configurations', function () {
  this.timeout(180_000);
  let user: UserServer | undefined;
  // The workspace's runs before: the ones this test makes are removed after it, so that later tests
  // (Insert Result Here offers the newest run's tables first) find the workspace as it was.
  const runsRoot = () => join(workspaceFolder(), '.inference-bench', 'runs');
  let runsBefore = new Set<string>();
  before(() => {
    runsBefore = new Set(existsSync(runsRoot()) ? readdirSync(runsRoot()) : []);
  });

  after(async () => {
    if (existsSync(runsRoot())) for (const d of readdirSync(runsRoot())) if (!runsBefore.has(d)) rmSync(join(runsRoot(), d), { recursive: true, force: true });
    await vscode.workspace.getConfiguration('inferenceBench').update('targets', undefined, vscode.ConfigurationTarget.Workspace);
    user?.kill();
    await closeAllEditors();
  });

  it('measures the server as it runs and with another flag, puts the original back, and tables both in the findings document', async () => {
    // The user's server, started from a shell: decode steps of 3 ms, a flag of its command line.
    user = await startUserServer(['--mimic', 'vllm-0.16', '--startup-seconds', '1', '--step-base-ms', '3', '--step-per-seq-ms', '0.02'], repoRoot);
    const { url, port, original } = user;
    await vscode.workspace
      .getConfiguration('inferenceBench')
      .update('targets', [{ name: TARGET, kind: 'local', serverUrl: url, python: 'python3' }], vscode.ConfigurationTarget.Workspace);
    const compared = await vscode.commands.executeCommand<ConfigurationsCompared | undefined>('inferenceBench.compareConfigurations', TARGET, {
      configs: ['as-running:', 'slower: --step-base-ms 9'],
      macro: { concurrency: [1], requests: 4, inputLen: 16, outputLen: 24, warmup: 0 },
      yes: true,
    });
    assert.ok(compared, 'the command gave no comparison');
    const [asRunning, slower] = compared.configurations;
    assert.deepEqual([asRunning.status, slower.status], ['completed', 'completed'], JSON.stringify(compared.configurations.map((c) => c.error)));
    const tpot = (c: typeof asRunning) => c.levels![0].median_tpot_ms as number;
    // Three times the step: about three times the TPOT (the per-request part is small at c=1).
    const ratio = tpot(slower) / tpot(asRunning);
    assert.ok(ratio > 2.5 && ratio < 3.3, `TPOT ${tpot(asRunning).toFixed(2)} → ${tpot(slower).toFixed(2)} ms`);
    // The original command line serves the port again.
    const after = listening(port);
    assert.deepEqual(after?.argv, original.argv);
    // One table across the configurations in the findings document, against the first.
    const findings = join(workspaceFolder(), defaultFindingsDocument(workspaceFolder()));
    const text = await waitFor(
      'the comparison in the findings document',
      () => {
        const doc = vscode.workspace.textDocuments.find((d) => d.uri.fsPath === findings);
        const t = doc?.getText() ?? (existsSync(findings) ? readFileSync(findings, 'utf8') : '');
        return /## .*Server configurations compared — sim-configs/.test(t) ? t : undefined;
      },
      30_000,
    );
    assert.match(text, /TPOT vs as-running %/);
    assert.match(text, /\*\*slower\*\* \(configuration `[0-9a-f]{12}`\): `[^`\n]*--step-base-ms 9[ `]/);
    // Each configuration is its command line: the environment's values stay on the host, out of a document the team reads.
    assert.doesNotMatch(text, /\*\*(as-running|slower)\*\*[^\n]*\b[A-Za-z_][A-Za-z0-9_]*=/, 'the findings print the environment');
  });
});
