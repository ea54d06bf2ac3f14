import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';
import { parseTarget } from '../../../src/core/config/target';
import { RunSummary } from '../../../src/shared/results';
import type { RunController } from '../../../src/vscode/runs/runController';
import { TargetsTreeProvider, TreeNode } from '../../../src/vscode/views/targetsTree';
import { TargetStates } from '../../../src/vscode/views/targetState';

// The sidebar's tree in a real extension host: a cluster target shows as one target with its hosts
// under it, each with the GPUs its own probe found, and the cluster's runs include each host's probe.
describe('a cluster target in the sidebar', () => {
  const cluster = parseTarget({ name: 'pair', nodes: ['alpha', 'beta'], serverUrl: 'http://127.0.0.1:8000' });
  const runs: RunSummary[] = [
    { id: 'r1', phase: 'probe', target: 'pair/beta', startedAt: '2026-12-01T10:00:00.000Z', status: 'completed', headline: '1× NVIDIA H200' },
    { id: 'r2', phase: 'micro', target: 'pair', startedAt: '2026-12-01T10:05:00.000Z', status: 'completed' },
    { id: 'r3', phase: 'probe', target: 'elsewhere', startedAt: '2026-12-01T10:06:00.000Z', status: 'completed' },
  ];
  const changes = new vscode.EventEmitter<void>();
  const controller = {
    refreshRuns: async () => runs,
    isRunning: () => false,
    onDidChangeRuns: changes.event,
    onDidChangeRun: changes.event,
  } as unknown as RunController;
  const connections = {
    hostState: (t: { host?: string }) => ({ state: t.host === 'alpha' ? ('connected' as const) : ('disconnected' as const), detail: '' }),
    onDidChangeState: changes.event,
  };
  const states = new TargetStates();
  const tree = new TargetsTreeProvider(controller, states, connections as never);
  after(() => {
    tree.dispose();
    states.dispose();
    changes.dispose();
  });

  it('lists the hosts under the target, the head first, each with its own GPUs', async () => {
    states.set('pair', {
      gpus: [0, 1].map((index) => ({ index, name: 'NVIDIA H200', memoryUsedMiB: 1000, memoryTotalMiB: 143771 })),
      probedAt: '2026-12-01T10:00:00Z',
    });
    states.set('pair/beta', { gpus: [{ index: 0, name: 'NVIDIA H200', memoryUsedMiB: 120000, memoryTotalMiB: 143771 }], probedAt: '2026-12-01T10:00:00Z' });
    const top: TreeNode = { kind: 'target', target: cluster };
    assert.equal(tree.getTreeItem(top).description, '2 hosts: alpha, beta · 127.0.0.1:8000');
    const children = await tree.getChildren(top);
    assert.deepEqual(
      children.map((c) => c.kind),
      ['state', 'node', 'node', 'run', 'run'],
    );
    const [alpha, beta] = children.filter((c) => c.kind === 'node');
    const alphaItem = tree.getTreeItem(alpha);
    assert.equal(alphaItem.label, 'alpha');
    assert.equal(alphaItem.description, 'head · connected · 2× NVIDIA H200');
    const betaItem = tree.getTreeItem(beta);
    assert.equal(betaItem.label, 'beta');
    assert.equal(betaItem.description, 'node 1 · 1× NVIDIA H200, 1 busy');
    assert.equal(betaItem.collapsibleState, vscode.TreeItemCollapsibleState.Collapsed);
    const betaGpus = await tree.getChildren(beta);
    assert.deepEqual(
      betaGpus.map((g) => tree.getTreeItem(g).label),
      ['GPU 0'],
    );
    assert.equal((await tree.getChildren(alpha)).length, 2);
    // The host's probe and the cluster's micro run; another target's run stays out.
    assert.deepEqual(
      children.filter((c) => c.kind === 'run').map((c) => (c as { run: RunSummary }).run.id),
      ['r1', 'r2'],
    );
  });
});
