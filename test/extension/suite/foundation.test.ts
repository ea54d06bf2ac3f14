import * as assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as vscode from 'vscode';
import { allTabs, closeAllEditors, sleep, waitFor, workspaceFolder } from '../helpers';
import { defaultFindingsDocument } from '../../../src/core/findings/campaignName';

/**
 * Answers the real quick pick and input boxes of a running command through the workbench's own
 * quick-input commands, the way keyboard users do: `choose` moves down the list that many times,
 * then every later prompt is accepted with its proposed value.
 */
async function answerWithDefaults(running: Thenable<unknown>, choose: number): Promise<void> {
  let finished = false;
  const done = Promise.resolve(running).finally(() => (finished = true));
  await sleep(400); // the quick pick is shown by the extension host; give the workbench a moment to draw it
  for (let i = 0; i < choose; i++) await vscode.commands.executeCommand('workbench.action.quickOpenSelectNext');
  const deadline = Date.now() + 15_000;
  while (!finished && Date.now() < deadline) {
    await vscode.commands.executeCommand('workbench.action.acceptSelectedQuickOpenItem');
    await sleep(300);
  }
  if (!finished) {
    await vscode.commands.executeCommand('workbench.action.closeQuickOpen');
    throw new Error('Add Target still waits for input after every prompt was answered');
  }
  await done;
}

describe('the foundation commands', () => {
  after(async () => {
    const config = vscode.workspace.getConfiguration('inferenceBench');
    await config.update('targets', undefined, vscode.ConfigurationTarget.Workspace);
    await config.update('findingsDocument', undefined, vscode.ConfigurationTarget.Workspace);
    await closeAllEditors();
  });

  it('Add Target saves "This machine" with the proposed server URL and interpreter in the workspace settings', async () => {
    // The titles the prompts show, read as they open (the workbench draws them in the quick input's title bar).
    const titles: string[] = [];
    const window = vscode.window as { showInputBox: typeof vscode.window.showInputBox; showQuickPick: typeof vscode.window.showQuickPick };
    const { showInputBox, showQuickPick } = window;
    window.showInputBox = (options, token) => {
      titles.push(options?.title ?? '');
      return showInputBox.call(vscode.window, options, token);
    };
    window.showQuickPick = ((items: never, options: vscode.QuickPickOptions | undefined, token: never) => {
      titles.push(options?.title ?? '');
      return showQuickPick.call(vscode.window, items, options, token);
    }) as typeof vscode.window.showQuickPick;
    try {
      await answerWithDefaults(vscode.commands.executeCommand('inferenceBench.addTarget'), 1);
    } finally {
      window.showInputBox = showInputBox;
      window.showQuickPick = showQuickPick;
    }
    assert.deepEqual(titles, ['Add Target (1/4)', 'Add Target: server URL (2/4)', 'Add Target: Python (3/4)', 'Add Target: name (4/4)']);
    const saved = vscode.workspace.getConfiguration('inferenceBench').get<Record<string, unknown>[]>('targets');
    assert.deepEqual(saved, [{ name: 'local', kind: 'local', serverUrl: 'http://127.0.0.1:8000', python: 'python3' }]);
    // What a user would open: the workspace's settings file.
    const file = JSON.parse(readFileSync(join(workspaceFolder(), '.vscode', 'settings.json'), 'utf8')) as Record<string, unknown>;
    assert.deepEqual(file['inferenceBench.targets'], saved);
  });

  it("Open Findings Document creates the campaign's document in the workspace folder and opens it", async () => {
    // Named after the first probe's model and GPU (k25b6000bench1.md), findings.md before any probe.
    const file = join(workspaceFolder(), defaultFindingsDocument(workspaceFolder()));
    rmSync(file, { force: true });
    await vscode.commands.executeCommand('inferenceBench.openFindings');
    assert.ok(existsSync(file), `${file} was not created`);
    const editor = await waitFor('the findings document in the active editor', () => vscode.window.activeTextEditor);
    assert.equal(editor.document.uri.fsPath, file);
    assert.match(editor.document.getText(), /^# Findings/);
  });

  it('Open Findings Document opens the document the setting names, keeping what the user wrote in it', async () => {
    await closeAllEditors();
    await vscode.workspace.getConfiguration('inferenceBench').update('findingsDocument', 'campaign-notes.md', vscode.ConfigurationTarget.Workspace);
    const file = join(workspaceFolder(), 'campaign-notes.md');
    const mine = '# My campaign\n\nNotes I wrote by hand.\n';
    writeFileSync(file, mine);
    await vscode.commands.executeCommand('inferenceBench.openFindings');
    const editor = await waitFor('the findings document in the active editor', () => vscode.window.activeTextEditor);
    assert.equal(editor.document.uri.fsPath, file);
    assert.equal(editor.document.getText(), mine);
    assert.equal(readFileSync(file, 'utf8'), mine);
  });

  it('Show Results opens one results panel and reveals it again instead of opening a second', async () => {
    await closeAllEditors();
    const resultsTabs = () => allTabs().filter((t) => t.input instanceof vscode.TabInputWebview && t.input.viewType.endsWith('inferenceBench.results'));
    await vscode.commands.executeCommand('inferenceBench.showResults');
    const [tab] = await waitFor('the results panel', () => resultsTabs().length === 1 && resultsTabs());
    assert.equal(tab.label, 'Inference Bench Results');
    await vscode.commands.executeCommand('inferenceBench.showResults', '2026-11-30_14-02-11-482-macro');
    await sleep(300);
    assert.equal(resultsTabs().length, 1);
  });
});
