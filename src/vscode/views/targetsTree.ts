import * as path from 'node:path';
import * as vscode from 'vscode';
import { describeTarget, Target } from '../../core/config/target';
import { RunFolder } from '../../core/runs/runFolder';
import { Disposable } from '../disposable';
import { readSettings, workspaceRoot } from '../settings';

export type TreeNode =
  | { kind: 'target'; target: Target }
  | { kind: 'runsRoot' }
  | { kind: 'run'; run: RunFolder }
  | { kind: 'problem'; message: string };

/** The sidebar: targets from settings, then the runs stored in the workspace. */
export class TargetsTreeProvider extends Disposable implements vscode.TreeDataProvider<TreeNode> {
  private readonly changed = this._register(new vscode.EventEmitter<TreeNode | undefined>());
  readonly onDidChangeTreeData = this.changed.event;

  constructor() {
    super();
    this._register(vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('inferenceBench')) this.refresh();
    }));
  }

  refresh(): void {
    this.changed.fire(undefined);
  }

  getChildren(node?: TreeNode): TreeNode[] {
    if (!node) {
      const settings = readSettings();
      // With nothing configured the welcome view shows instead of an empty tree.
      if (!settings.targets.length && !settings.problems.length && !this.runs().length) return [];
      return [
        ...settings.problems.map((message): TreeNode => ({ kind: 'problem', message })),
        ...settings.targets.map((target): TreeNode => ({ kind: 'target', target })),
        { kind: 'runsRoot' },
      ];
    }
    if (node.kind === 'runsRoot') return this.runs().map((run): TreeNode => ({ kind: 'run', run }));
    return [];
  }

  getTreeItem(node: TreeNode): vscode.TreeItem {
    switch (node.kind) {
      case 'problem': {
        const item = new vscode.TreeItem(node.message);
        item.iconPath = new vscode.ThemeIcon('warning');
        item.tooltip = `${node.message}\nFix it in settings (inferenceBench.targets).`;
        return item;
      }
      case 'target': {
        const item = new vscode.TreeItem(node.target.name);
        item.description = describeTarget(node.target);
        item.iconPath = new vscode.ThemeIcon(node.target.kind === 'local' ? 'vm' : 'remote');
        item.contextValue = 'target';
        item.tooltip = `${describeTarget(node.target)}\nserver: ${node.target.serverUrl}\npython: ${node.target.python}`;
        return item;
      }
      case 'runsRoot': {
        const item = new vscode.TreeItem('Runs', vscode.TreeItemCollapsibleState.Expanded);
        item.iconPath = new vscode.ThemeIcon('history');
        return item;
      }
      case 'run': {
        const info = node.run.info;
        const item = new vscode.TreeItem(`${info.phase} · ${info.target}`);
        item.description = `${new Date(info.startedAt).toLocaleString()} · ${info.status}${info.simulated ? ' · simulator' : ''}`;
        item.iconPath = new vscode.ThemeIcon(info.status === 'completed' ? 'pass' : info.status === 'running' ? 'sync~spin' : 'warning');
        item.tooltip = info.reason ?? path.basename(node.run.dir);
        item.contextValue = 'run';
        item.command = { command: 'inferenceBench.showResults', title: 'Show Results', arguments: [info.id] };
        return item;
      }
    }
  }

  private runs(): RunFolder[] {
    const root = workspaceRoot();
    return root ? RunFolder.list(root) : [];
  }
}
