import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';
import { allTabs, closeAllEditors, waitFor } from '../helpers';

// The fixture workspace holds one stored macro run, of target b6000-sim: the budget has its figures.
const MEASURED = 'b6000-sim';
const FIXTURE_RUN = '2026-11-30_14-02-11-482-macro';
const UNMEASURED = 'fresh-box';

const resultsTabs = () => allTabs().filter((t) => t.input instanceof vscode.TabInputWebview && t.input.viewType.endsWith('inferenceBench.results'));

describe('Show Decode-Step Budget', () => {
  before(async () => {
    await vscode.workspace.getConfiguration('inferenceBench').update(
      'targets',
      [
        { name: MEASURED, kind: 'local', serverUrl: 'http://127.0.0.1:8000', python: 'python3' },
        { name: UNMEASURED, kind: 'local', serverUrl: 'http://127.0.0.1:8001', python: 'python3' },
      ],
      vscode.ConfigurationTarget.Workspace,
    );
  });

  after(async () => {
    await vscode.workspace.getConfiguration('inferenceBench').update('targets', undefined, vscode.ConfigurationTarget.Workspace);
    await closeAllEditors();
  });

  it('is in the palette under Inference Bench', () => {
    const contributed = (
      vscode.extensions.all.find((e) => e.id === 'inference-bench.inference-bench')!.packageJSON as {
        contributes: { commands: { command: string; title: string; category: string }[] };
      }
    ).contributes.commands;
    const command = contributed.find((c) => c.command === 'inferenceBench.showBudget');
    assert.equal(`${command?.category}: ${command?.title}`, 'Inference Bench: Show Decode-Step Budget');
  });

  it("opens the results view at the target's newest measured run, whose budget the view shows", async () => {
    await closeAllEditors();
    const shown = await vscode.commands.executeCommand<string | undefined>('inferenceBench.showBudget', MEASURED);
    assert.equal(shown, FIXTURE_RUN);
    await waitFor('the results view', () => resultsTabs().length === 1);
  });

  it('for a target with no runs, opens nothing and says what to run', async () => {
    await closeAllEditors();
    const shown = await vscode.commands.executeCommand<string | undefined>('inferenceBench.showBudget', UNMEASURED);
    assert.equal(shown, undefined);
    assert.equal(resultsTabs().length, 0, "a results view with another target's budget was opened");
  });
});
