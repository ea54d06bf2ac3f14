import * as path from 'node:path';
import * as vscode from 'vscode';
import { clusterNodes, describeTarget, isCluster, Target } from '../../core/config/target';
import { listedRuns, RunSummary } from '../../shared/results';
import { Disposable } from '../disposable';
import { RunController } from '../runs/runController';
import { runDir } from '../../core/runs/runFolder';
import { readSettings, workspaceRoot } from '../settings';
import { hostKey, type ConnectionManager } from '../connections/connectionManager';
import { GpuState } from '../../core/phases/probeState';
import { TargetStates } from './targetState';

export type TreeNode =
  | { kind: 'target'; target: Target }
  | { kind: 'state'; target: Target }
  /** One host of a cluster target; its GPUs under it. */
  | { kind: 'node'; target: Target; node: Target; index: number }
  | { kind: 'gpu'; target: Target; gpu: GpuState }
  | { kind: 'runsRoot'; target?: Target }
  | { kind: 'run'; run: RunSummary }
  | { kind: 'problem'; message: string };

/** The row's id: its tree item's id, and the key its object is kept by (problems have neither). */
function nodeId(node: Exclude<TreeNode, { kind: 'problem' }>): string {
  switch (node.kind) {
    case 'target':
    case 'state':
      return `${node.kind}:${node.target.name}`;
    case 'node':
      return `node:${node.target.name}:${node.index}`;
    case 'gpu':
      return `gpu:${node.target.name}:${node.gpu.index}`;
    case 'runsRoot':
      return 'runsRoot';
    case 'run':
      return `run:${node.run.id}`;
  }
}

const PHASE_LABEL: Record<string, string> = { macro: 'Macro', micro: 'Micro', profile: 'Profiler', probe: 'Probe' };

/** Every name a run's target can have: the targets' own, and each cluster host's (`<cluster>/<host>`). */
function targetNames(targets: Target[]): Set<string> {
  return new Set(targets.flatMap((t) => clusterNodes(t).map((n) => n.name)));
}

function gib(mib: number): string {
  return (mib / 1024).toFixed(1);
}

/**
 * The sidebar: each target with its state (connection, server, model, GPUs with memory from the
 * probe) and its runs, newest first, each with its headline figure; runs of targets no longer
 * configured under "Other runs".
 */
export class TargetsTreeProvider extends Disposable implements vscode.TreeDataProvider<TreeNode> {
  private readonly changed = this._register(new vscode.EventEmitter<TreeNode | TreeNode[] | undefined>());
  readonly onDidChangeTreeData = this.changed.event;
  /**
   * One object per row for as long as the row is shown. VS Code hands a context-menu command the
   * element it was given for that row, and forgets every element when the whole tree is refreshed
   * until it has asked for the rows again (src/vs/workbench/api/common/extHostTreeViews.ts): a
   * command chosen in that gap gets no argument and would ask "which target?". So a change
   * refreshes only the rows it concerns, given back as the same objects; the whole tree only when
   * the list of targets or runs changes.
   */
  private readonly shown = new Map<string, TreeNode>();

  constructor(
    private readonly runs: RunController,
    private readonly states: TargetStates,
    private readonly connections: Pick<ConnectionManager, 'hostState' | 'onDidChangeState'>,
  ) {
    super();
    // A host's connection: every target on it (a cluster's when any of its hosts), with its rows.
    this._register(
      connections.onDidChangeState((change) =>
        this.refreshTargets(readSettings().targets.filter((t) => clusterNodes(t).some((n) => hostKey(n) === change.host))),
      ),
    );
    this._register(
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration('inferenceBench')) this.refresh();
      }),
    );
    this._register(runs.onDidChangeRuns(() => this.refresh()));
    // A probe's findings (a cluster host's are named <cluster>/<host>): that target's rows.
    this._register(states.onDidChange((name) => this.refreshTargets(readSettings().targets.filter((t) => targetNames([t]).has(name)))));
    // A live run's headline changes as it goes; redraw its row at most twice a second, with the run as it is now.
    const live = new Map<string, RunSummary>();
    let timer: NodeJS.Timeout | undefined;
    this._register(
      runs.onDidChangeRun((run) => {
        live.set(run.id, run);
        timer ??= setTimeout(() => {
          timer = undefined;
          const ids = [...live.values()].map((run) => {
            const id = nodeId({ kind: 'run', run });
            const row = this.shown.get(id);
            if (row?.kind === 'run') row.run = run;
            return id;
          });
          live.clear();
          this.refreshRows(ids);
        }, 500);
      }),
    );
    this._register({ dispose: () => clearTimeout(timer) });
  }

  refresh(): void {
    this.shown.clear();
    this.changed.fire(undefined);
  }

  private refreshTargets(targets: Target[]): void {
    this.refreshRows(targets.map((target) => nodeId({ kind: 'target', target })));
  }

  /** These rows (with their children), or the whole tree if one of them is not shown yet (a run just started). */
  private refreshRows(ids: string[]): void {
    const rows = ids.map((id) => this.shown.get(id));
    if (!rows.length) return;
    if (rows.every((row) => row !== undefined)) this.changed.fire(rows as TreeNode[]);
    else this.refresh();
  }

  /** The row's object as shown before, with the fresh data, or this one if it is new. */
  private keep<T extends TreeNode>(fresh: T): T {
    if (fresh.kind === 'problem') return fresh; // no menu, and two may read the same
    const id = nodeId(fresh);
    const kept = this.shown.get(id);
    if (kept && kept.kind === fresh.kind) return Object.assign(kept, fresh) as T;
    this.shown.set(id, fresh);
    return fresh;
  }

  // Each redraw reads the runs folder again (runs made by the CLI show up), without blocking the host.
  async getChildren(node?: TreeNode): Promise<TreeNode[]> {
    return (await this.childrenOf(node)).map((child) => this.keep(child));
  }

  private async childrenOf(node?: TreeNode): Promise<TreeNode[]> {
    const runs = await this.runs.refreshRuns();
    if (!node) {
      const settings = readSettings();
      // With nothing configured the welcome view shows instead of an empty tree.
      if (!settings.targets.length && !settings.problems.length && !runs.length) return [];
      const names = targetNames(settings.targets);
      const orphans = runs.some((r) => !names.has(r.target));
      return [
        ...settings.problems.map((message): TreeNode => ({ kind: 'problem', message })),
        ...settings.targets.map((target): TreeNode => ({ kind: 'target', target })),
        ...(orphans ? [{ kind: 'runsRoot' } as TreeNode] : []),
      ];
    }
    switch (node.kind) {
      case 'target': {
        const state = this.states.get(node.target.name);
        // A cluster: its hosts under it, each with its own GPUs; its runs include each host's probes.
        const own = targetNames([node.target]);
        return [
          { kind: 'state', target: node.target },
          ...(isCluster(node.target)
            ? clusterNodes(node.target).map((n, index): TreeNode => ({ kind: 'node', target: node.target, node: n, index }))
            : (state?.gpus ?? []).map((gpu): TreeNode => ({ kind: 'gpu', target: node.target, gpu }))),
          ...listedRuns(runs.filter((r) => own.has(r.target))).map((run): TreeNode => ({ kind: 'run', run })),
        ];
      }
      case 'node':
        return (this.states.get(node.node.name)?.gpus ?? []).map((gpu): TreeNode => ({ kind: 'gpu', target: node.node, gpu }));
      case 'runsRoot': {
        const names = targetNames(readSettings().targets);
        return listedRuns(runs.filter((r) => !names.has(r.target))).map((run): TreeNode => ({ kind: 'run', run }));
      }
      default:
        return [];
    }
  }

  getTreeItem(node: TreeNode): vscode.TreeItem {
    const item = this.itemFor(node);
    // VS Code reads a string tooltip as the row's accessible name; screen readers should hear the label and description instead.
    const label = typeof item.label === 'string' ? item.label : item.label?.label;
    item.accessibilityInformation = { label: [label, typeof item.description === 'string' ? item.description : undefined].filter(Boolean).join(', ') };
    return item;
  }

  private itemFor(node: TreeNode): vscode.TreeItem {
    switch (node.kind) {
      case 'problem': {
        const item = new vscode.TreeItem(node.message);
        item.iconPath = new vscode.ThemeIcon('warning');
        item.tooltip = `${node.message}\nFix it in settings (inferenceBench.targets).`;
        return item;
      }
      case 'target': {
        const running = this.runs.isRunning(node.target.name);
        const connection = this.connections.hostState(node.target).state;
        const item = new vscode.TreeItem(node.target.name, vscode.TreeItemCollapsibleState.Expanded);
        item.id = nodeId(node);
        // Where it runs and the server's address, as Remote-SSH shows a host's: the host only when the
        // name does not say it already, and no scheme, so a narrow sidebar still shows the port.
        const where = describeTarget(node.target);
        item.description = [where !== node.target.name ? where : undefined, node.target.serverUrl.replace(/^https?:\/\//, '')].filter(Boolean).join(' · ');
        item.iconPath = new vscode.ThemeIcon(running ? 'sync~spin' : node.target.kind === 'local' ? 'vm' : 'remote');
        // target / target.connected / target.running: the menus offer Connect or Disconnect to match.
        item.contextValue = running ? 'target.running' : connection === 'connected' || connection === 'reconnecting' ? 'target.connected' : 'target';
        item.tooltip = `${describeTarget(node.target)}\nserver URL: ${node.target.serverUrl}\npython: ${node.target.python}${node.target.commandPrefix ? `\nprefix: ${node.target.commandPrefix.join(' ')}` : ''}`;
        return item;
      }
      case 'state': {
        const state = this.states.get(node.target.name);
        const { state: connection, detail } = this.connections.hostState(node.target);
        // The release without its local build tag (0.11.0, not 0.11.0+cu128), so it fits; the tooltip has it whole.
        const release = state?.serverVersion?.split('+')[0];
        // A server that stopped answering says so at once (the health check), whatever the last probe found.
        // A server the tool itself stopped or restarts says so ("server stopped for micro"): a plan, not a fault.
        const server = state?.serverHeld
          ? `server ${state.serverHeld}`
          : state?.serverDown
            ? 'server not answering'
            : state?.serverKind
              ? `${state.serverKind}${release ? ` ${release}` : ''}${state.simulated ? ' (simulator)' : ''}`
              : undefined;
        const connectionLabel = {
          connected: 'connected',
          failed: 'connection failed',
          connecting: 'connecting…',
          reconnecting: 'reconnecting…',
          disconnected: 'not connected',
        }[connection];
        // The server goes in the label and the model in the description, so a narrow sidebar still shows what runs there.
        const item = new vscode.TreeItem(server ? `${connectionLabel} · ${server}` : connectionLabel);
        item.id = nodeId(node);
        item.description =
          (state?.serverHeld ? 'by Inference Bench: put back when it is done' : undefined) ??
          state?.serverDown ??
          (state?.needsApiKey ? 'wants an API key: Set Server API Key...' : undefined) ??
          state?.model ??
          (state?.detail || (connection === 'failed' ? detail : connection === 'disconnected' ? (state?.probedAt ? 'idle' : 'click to probe') : ''));
        item.iconPath = new vscode.ThemeIcon(
          connection === 'connected'
            ? state?.serverHeld
              ? 'debug-pause'
              : state?.serverDown || state?.needsApiKey
                ? 'warning'
                : 'plug'
            : connection === 'failed'
              ? 'error'
              : connection === 'disconnected'
                ? 'debug-disconnect'
                : 'loading~spin',
        );
        item.tooltip =
          [
            connection === 'failed' ? `connection failed: ${detail}` : detail,
            state?.detail,
            state?.serverHeld && `the server is ${state.serverHeld} by Inference Bench; the original is put back when that is done (also on Cancel)`,
            state?.serverDown && `the server does not answer: ${state.serverDown}`,
            state?.needsApiKey && 'the server wants an API key: right-click the target, Set Server API Key...',
            server &&
              `server: ${state?.serverKind}${state?.serverVersion ? ` ${state.serverVersion}` : ''}${state?.simulated ? ' (simulator)' : ''} at ${node.target.serverUrl}`,
            state?.model && `model: ${state.model}`,
            state?.probedAt && `probed ${new Date(state.probedAt).toLocaleString()}`,
          ]
            .filter(Boolean)
            .join('\n') || undefined;
        item.command = { command: 'inferenceBench.probeTarget', title: 'Probe Target', arguments: [node.target.name] };
        return item;
      }
      case 'node': {
        const state = this.states.get(node.node.name);
        const { state: connection } = this.connections.hostState(node.node);
        const gpus = state?.gpus ?? [];
        const item = new vscode.TreeItem(
          node.node.host ?? node.node.name,
          gpus.length ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.None,
        );
        item.id = nodeId(node);
        const busy = gpus.filter((g) => g.memoryTotalMiB && (g.memoryUsedMiB ?? 0) / g.memoryTotalMiB > 0.5).length;
        item.description = [
          node.index === 0 ? 'head' : `node ${node.index}`,
          connection === 'connected' ? 'connected' : connection === 'failed' ? 'connection failed' : undefined,
          gpus.length ? `${gpus.length}× ${gpus[0].name}${busy ? `, ${busy} busy` : ''}` : state?.probedAt ? 'no GPU seen' : undefined,
        ]
          .filter(Boolean)
          .join(' · ');
        item.iconPath = new vscode.ThemeIcon('server');
        item.tooltip = `${describeTarget(node.node)}${node.index === 0 ? '\nthe head: the server URL is reached from here, and the rendezvous of the collectives runs here' : ''}${state?.probedAt ? `\nprobed ${new Date(state.probedAt).toLocaleString()}` : '\nProbe the target to see its GPUs'}`;
        return item;
      }
      case 'gpu': {
        const g = node.gpu;
        const item = new vscode.TreeItem(`GPU ${g.index}`);
        item.id = nodeId(node);
        const memory = g.memoryTotalMiB ? `${gib(g.memoryUsedMiB ?? 0)} / ${gib(g.memoryTotalMiB)} GiB` : 'memory unknown';
        item.description = `${g.name} · ${memory}`;
        item.iconPath = new vscode.ThemeIcon('circuit-board');
        item.tooltip = `${g.name}\nmemory used ${memory}`;
        return item;
      }
      case 'runsRoot': {
        const item = new vscode.TreeItem('Other runs', vscode.TreeItemCollapsibleState.Collapsed);
        item.id = nodeId(node);
        item.tooltip = 'Runs of targets that are no longer in settings';
        item.iconPath = new vscode.ThemeIcon('history');
        return item;
      }
      case 'run': {
        const run = node.run;
        const item = new vscode.TreeItem(`${PHASE_LABEL[run.phase] ?? run.phase}${run.headline ? `: ${run.headline}` : ''}`);
        item.id = nodeId(node);
        item.description = `${new Date(run.startedAt).toLocaleString()}${run.status === 'completed' ? '' : ` · ${run.status}`}${run.simulated ? ' · simulator' : ''}`;
        item.iconPath = new vscode.ThemeIcon(
          run.status === 'completed' ? 'pass' : run.status === 'running' ? 'sync~spin' : run.status === 'cancelled' ? 'circle-slash' : 'warning',
        );
        const root = workspaceRoot();
        item.tooltip = [run.headline, run.reason, root ? path.relative(root, runDir(root, run.id)) : run.id].filter(Boolean).join('\n');
        item.contextValue = `run.${run.phase}`;
        item.command = { command: 'inferenceBench.showResults', title: 'Show Results', arguments: [run.id] };
        return item;
      }
    }
  }
}
