import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';
import type { RunSummary } from '../../../src/shared/results';
import { closeAllEditors } from '../helpers';

// A server URL where nothing listens: the agent's own refusal (server_unreachable, its remedy the
// --url flag) is what a user who mistyped the URL gets.
const TARGET = 'nothing-listens';
const URL = 'http://127.0.0.1:9';

describe("a failed run's advice in VS Code's words", function () {
  this.timeout(60_000);

  before(async () => {
    await vscode.workspace
      .getConfiguration('inferenceBench')
      .update('targets', [{ name: TARGET, kind: 'local', serverUrl: URL, python: 'python3' }], vscode.ConfigurationTarget.Workspace);
  });

  after(async () => {
    await vscode.workspace.getConfiguration('inferenceBench').update('targets', undefined, vscode.ConfigurationTarget.Workspace);
    await closeAllEditors();
  });

  it("names the target's server URL setting and the Edit Target command, not the CLI's --url", async () => {
    const run = await vscode.commands.executeCommand<RunSummary | undefined>('inferenceBench.runMacro', TARGET, { concurrency: [1], requests: 1 });
    assert.equal(run?.status, 'failed', run?.reason);
    assert.equal(run?.failure?.code, 'server_unreachable');
    assert.match(
      run?.reason ?? '',
      new RegExp(
        `set the target's server URL \\(now ${URL.replace(/[.]/g, '\\.')}\\) to its URL as seen from this machine, with Inference Bench: Edit Target\\.\\.\\. on ${TARGET}$`,
      ),
    );
    assert.doesNotMatch(run?.reason ?? '', /--url|\{\d\}/);
  });
});
