import * as assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as vscode from 'vscode';
import { Target } from '../../../src/core/config/target';
import { LocalTransport } from '../../../src/remote/localTransport';
import type { RunController } from '../../../src/vscode/runs/runController';
import { ServerWatch } from '../../../src/vscode/connections/serverWatch';
import { TargetsTreeProvider } from '../../../src/vscode/views/targetsTree';
import { TargetStates } from '../../../src/vscode/views/targetState';
import { waitFor } from '../helpers';

// The server watch in a real extension host, looking through a real (local) connection at a port where
// nothing listens: once because the tool stopped the server for micro (its change record says so), once
// because it died. The runs and the connection's state are stand-ins: only the state row is read.
describe('the sidebar while the tool has the server stopped', function () {
  this.timeout(60_000);
  const log = vscode.window.createOutputChannel('Inference Bench server watch test', { log: true });
  after(() => log.dispose());

  async function stateRowWhile(change: { state: string; purpose: string } | undefined): Promise<vscode.TreeItem> {
    const workspace = mkdtempSync(join(tmpdir(), 'ib-held-ext-'));
    const target: Target = { name: 'box-held', kind: 'local', serverUrl: 'http://127.0.0.1:9', python: 'python3' };
    if (change) {
      const dir = join(workspace, '.inference-bench', 'server', '2026-12-03_10-00-00-box-held');
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'change.json'), JSON.stringify({ target: target.name, url: target.serverUrl, history: [], ...change }));
    }
    const states = new TargetStates();
    const channel = Promise.resolve({ transport: new LocalTransport(), agent: { python: 'python3', path: '', hash: '' } });
    const watch = new ServerWatch(
      { openChannelOf: () => channel },
      states,
      () => [target],
      log,
      () => workspace,
    );
    const controller = {
      refreshRuns: async () => [],
      isRunning: () => false,
      onDidChangeRuns: new vscode.EventEmitter<void>().event,
      onDidChangeRun: new vscode.EventEmitter<never>().event,
    } as unknown as RunController;
    const connections = { hostState: () => ({ state: 'connected' as const }), onDidChangeState: new vscode.EventEmitter<never>().event };
    const tree = new TargetsTreeProvider(controller, states, connections as never);
    try {
      await waitFor('the watch to look at the server', () => states.get(target.name) !== undefined, 20_000);
      return tree.getTreeItem({ kind: 'state', target });
    } finally {
      watch.dispose();
      tree.dispose();
      states.dispose();
    }
  }

  it('says "server stopped for micro" with a pause icon, not "server not answering" with a warning', async () => {
    const row = await stateRowWhile({ state: 'stopped', purpose: 'micro' });
    assert.equal(row.label, 'connected · server stopped for micro');
    assert.equal((row.iconPath as vscode.ThemeIcon).id, 'debug-pause');
    assert.doesNotMatch(String(row.tooltip), /does not answer/);
  });

  it('still says "server not answering" for a server that stopped on its own', async () => {
    const row = await stateRowWhile(undefined);
    assert.equal(row.label, 'connected · server not answering');
    assert.equal((row.iconPath as vscode.ThemeIcon).id, 'warning');
  });
});
