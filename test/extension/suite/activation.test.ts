import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';
import { extension } from '../helpers';

interface Contributions {
  activationEvents?: string[];
  contributes: { commands: { command: string; title: string; category?: string }[] };
}

describe('activation', () => {
  it('stays inactive until one of its commands, views or panels is used', () => {
    const pkg = extension().packageJSON as Contributions;
    assert.ok(!pkg.activationEvents?.some((e) => e === '*' || e === 'onStartupFinished'), `eager activation events: ${pkg.activationEvents}`);
    assert.equal(extension().isActive, false, 'the extension was activated while nothing of it had been used');
  });

  it('activates on its first command and registers every contributed command', async () => {
    await vscode.commands.executeCommand('inferenceBench.refresh');
    assert.equal(extension().isActive, true);
    const registered = new Set(await vscode.commands.getCommands(true));
    const contributed = (extension().packageJSON as Contributions).contributes.commands;
    assert.ok(contributed.length >= 3, 'package.json contributes fewer than three commands');
    const missing = contributed.filter((c) => !registered.has(c.command)).map((c) => c.command);
    assert.deepEqual(missing, [], 'contributed commands without a handler');
    for (const c of contributed) assert.equal(c.category, 'Inference Bench', `${c.command} is not in the Inference Bench category`);
  });
});
