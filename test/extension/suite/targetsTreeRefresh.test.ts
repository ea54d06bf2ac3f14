import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';
import { RunSummary } from '../../../src/shared/results';
import type { RunController } from '../../../src/vscode/runs/runController';
import type { ConnectionStateChange } from '../../../src/vscode/connections/connectionManager';
import { hostKey } from '../../../src/vscode/connections/connectionManager';
import { TargetsTreeProvider, TreeNode } from '../../../src/vscode/views/targetsTree';
import { TargetStates } from '../../../src/vscode/views/targetState';

// VS Code forgets the elements of a tree refreshed whole until it has asked for them again, and a
// context-menu command chosen in that gap runs without its target (it asked "Edit which target?").
// A connection coming or going, a probe's findings and a live run's headline refresh only their rows,
// and the rows keep their objects, so the element a menu was opened on is still the one VS Code knows.
describe('the sidebar refreshes only the rows a change concerns', () => {
  const targets = [
    { name: 'box-a', host: 'box-a', serverUrl: 'http://127.0.0.1:8000', python: 'python3' },
    { name: 'box-b', host: 'box-b', serverUrl: 'http://127.0.0.1:8001', python: 'python3' },
  ];
  const live: RunSummary = { id: 'run-1', phase: 'macro', target: 'box-b', startedAt: '2026-12-01T10:00:00.000Z', status: 'running' };
  const runChanged = new vscode.EventEmitter<RunSummary>();
  const listChanged = new vscode.EventEmitter<void>();
  const stateChanged = new vscode.EventEmitter<ConnectionStateChange>();
  let connected = new Set<string>();
  const controller = {
    refreshRuns: async () => [live],
    isRunning: () => false,
    onDidChangeRuns: listChanged.event,
    onDidChangeRun: runChanged.event,
  } as unknown as RunController;
  const connections = {
    hostState: (t: { host?: string }) => ({ state: connected.has(t.host ?? '') ? ('connected' as const) : ('disconnected' as const) }),
    onDidChangeState: stateChanged.event,
  };
  const states = new TargetStates();
  const tree = new TargetsTreeProvider(controller, states, connections as never);
  const fired: (TreeNode | TreeNode[] | undefined)[] = [];
  tree.onDidChangeTreeData((e) => fired.push(e));
  const config = () => vscode.workspace.getConfiguration('inferenceBench');

  before(async () => {
    // The settings' change refreshes the whole tree: wait for it, so that it lands before the rows are read.
    await changeAfter(() => config().update('targets', targets, vscode.ConfigurationTarget.Workspace));
  });
  after(async () => {
    await config().update('targets', undefined, vscode.ConfigurationTarget.Workspace);
    tree.dispose();
    states.dispose();
    [runChanged, listChanged, stateChanged].forEach((e) => e.dispose());
  });

  /** What the tree announces after `trigger` (the live run's redraw waits half a second). */
  async function changeAfter(trigger: () => unknown): Promise<TreeNode | TreeNode[] | undefined> {
    const seen = fired.length;
    await trigger();
    for (let i = 0; i < 100 && fired.length === seen; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(fired.length, seen + 1, 'the tree announced one change');
    return fired[seen];
  }

  it("a host's connection refreshes the target on that host, and the same row object comes back", async () => {
    const [a, b] = await tree.getChildren();
    assert.deepEqual(
      [a, b].map((n) => tree.getTreeItem(n).label),
      ['box-a', 'box-b'],
    );
    assert.equal(tree.getTreeItem(b).contextValue, 'target');
    const [stateRow] = await tree.getChildren(b);
    connected = new Set(['box-b']);
    const change = await changeAfter(() => stateChanged.fire({ host: hostKey({ kind: 'ssh', host: 'box-b' }), state: 'connected' }));
    assert.deepEqual(change, [b], 'box-b alone is refreshed (not the whole tree)');
    assert.equal(tree.getTreeItem(b).contextValue, 'target.connected', 'its menu offers Disconnect now');
    const [again] = await tree.getChildren();
    assert.equal(again, a, 'the first target keeps its row object');
    const [stateAgain] = await tree.getChildren(b);
    assert.equal(stateAgain, stateRow);
    assert.match(String(tree.getTreeItem(stateAgain).label), /^connected/);
  });

  it("a live run's headline refreshes its own row; a probe's findings their target's rows", async () => {
    const [, b] = await tree.getChildren();
    const children = await tree.getChildren(b);
    const runRow = children.find((c) => c.kind === 'run')!;
    // The controller hands a new summary each time; the row shows that one, not the one it was listed with.
    assert.deepEqual(await changeAfter(() => runChanged.fire({ ...live, headline: 'peak 339 tok/s at c=2' })), [runRow]);
    assert.equal(tree.getTreeItem(runRow).label, 'Macro: peak 339 tok/s at c=2');
    const [a] = await tree.getChildren();
    const probed = { gpus: [{ index: 0, name: 'NVIDIA H200', memoryUsedMiB: 1, memoryTotalMiB: 143771 }], probedAt: '2026-12-01T10:00:00Z' };
    assert.deepEqual(await changeAfter(() => states.set('box-a', probed)), [a]);
    assert.deepEqual(
      (await tree.getChildren(a)).map((n) => tree.getTreeItem(n).label),
      ['not connected', 'GPU 0'],
    );
  });

  it('a change to the list of runs or to the settings refreshes the whole tree', async () => {
    assert.equal(await changeAfter(() => listChanged.fire()), undefined);
  });
});
