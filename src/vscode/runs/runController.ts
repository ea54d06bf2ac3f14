import { existsSync } from 'node:fs';
import * as vscode from 'vscode';
import { connectClusterNodes, FindingsUpdate, PhaseContext, ResultSink } from '../../core/campaign/phaseContext';
import { budgetFindingsForWorkspace } from '../../core/explain/campaign';
import { extensionWords } from './extensionWords';
import { Target } from '../../core/config/target';
import { levelProgressText, RunSummary } from '../../shared/results';
import { Disposable } from '../disposable';
import { findingsDocumentPath, readSettings, workspaceRoot } from '../settings';
import { RunsSource } from '../webview/runsSource';
import { Connection, Connector } from '../../core/campaign/connection';
import { PhaseRunner } from './phaseRunner';
import { viewableRun } from '../../core/trace/profileView';
import { runDir, RunStorageError } from '../../core/runs/runFolder';
import { saveRunView, StoredRuns } from '../../core/runs/storedRuns';
import { diedRunBlock, keepRunFindings } from '../../core/findings/runFindings';
import { RunStop } from '../../core/runs/runStop';
import { SshError } from '../../remote/ssh/errors';
import { showConnectionFailure } from '../connections/connectionFailure';

/** Where findings updates go; the findings editor provides it. */
export interface FindingsTarget {
  update(update: FindingsUpdate): unknown;
  /** Shows the document (creating it if absent) in the first column, without taking focus. */
  ensureOpen?(): Promise<unknown>;
}

interface ActiveRun {
  target: Target;
  phase: string;
  abort: AbortController;
  runId?: string;
  /** Every run this phase made: a configurations comparison makes one per configuration, each to be ended. */
  runIds: Set<string>;
}

// Saving the live summary to disk on every request of a busy macro run would be wasteful.
const SAVE_INTERVAL_MS = 1000;

/**
 * Owns the live runs: starts phases with a cancellable progress notification (Cancel aborts the
 * run's AbortSignal, which kills its remote process), keeps each run's latest RunSummary, and hands
 * results to the views (onDidChangeRun), the status bar and the findings document.
 */
export class RunController extends Disposable implements RunsSource {
  private readonly changed = this._register(new vscode.EventEmitter<RunSummary>());
  readonly onDidChangeRun = this.changed.event;
  private readonly listChanged = this._register(new vscode.EventEmitter<void>());
  /** A run started or finished: the sidebar redraws. */
  readonly onDidChangeRuns = this.listChanged.event;

  private readonly live = new Map<string, RunSummary>();
  /** Runs with no folder to live in (a trace analysed with no workspace open): kept for this session. */
  private readonly memory = new Map<string, RunSummary>();
  private readonly active = new Set<ActiveRun>();
  private readonly stored = new StoredRuns(workspaceRoot);
  private readonly statusBar = this._register(vscode.window.createStatusBarItem('inferenceBench.run', vscode.StatusBarAlignment.Left, 50));
  private readonly lastSaved = new Map<string, number>();
  findingsTarget: FindingsTarget | undefined;

  constructor(
    private readonly connect: Connector,
    private readonly log: vscode.LogOutputChannel,
    private readonly apiKeys?: { get(target: string): Thenable<string | undefined> },
  ) {
    super();
    // A window closed or reloaded mid-run: the runs stop in order (remote processes killed, folders
    // marked interrupted) as far as the time VS Code gives allows; the agents' heartbeat covers the rest.
    this._register({ dispose: () => this.stop(undefined, new RunStop('interrupted', 'Stopped because VS Code closed or reloaded the window')) });
    this.statusBar.name = 'Inference Bench run';
    this.statusBar.command = 'inferenceBench.showResults';
  }

  /** Every run: the live ones, and the stored ones as the last refreshRuns read them. */
  runs(): RunSummary[] {
    const stored = this.stored.runs;
    const ids = new Set(stored.map((r) => r.id));
    const liveOnly = [...this.live.values(), ...this.memory.values()].filter((r) => !ids.has(r.id));
    return [...liveOnly, ...stored.map((r) => this.live.get(r.id) ?? r)].sort((a, b) => b.startedAt.localeCompare(a.startedAt));
  }

  run(id: string): RunSummary | undefined {
    return this.live.get(id) ?? this.memory.get(id) ?? this.stored.runs.find((r) => r.id === id);
  }

  /** Reads the stored runs again (runs made by the CLI, folders removed) without blocking, then gives every run. */
  async refreshRuns(): Promise<RunSummary[]> {
    try {
      await this.stored.refresh();
    } catch (err) {
      this.log.warn(`could not read the stored runs: ${err instanceof Error ? err.message : String(err)}`);
    }
    this.showDied();
    return this.runs();
  }

  /** Runs just found dead (their process killed, out of memory) say so in their findings block, when it is in this window's document. */
  private showDied(): void {
    const workspace = workspaceRoot();
    const dirs = this.stored.takeDied();
    if (!workspace || !dirs.length) return;
    const ours = this.findingsPath();
    for (const dir of dirs) {
      const block = diedRunBlock(workspace, dir);
      // A block in another document (a CLI run's --findings) is left to the CLI's next start.
      if (!block || !this.findingsTarget || block.document !== ours) continue;
      this.log.warn(`${block.run.phase} run ${block.run.id} on ${block.run.target} had died: ${block.run.reason ?? ''}`);
      this.findings(block.update);
      block.shown();
    }
  }

  private findingsPath(): string | undefined {
    try {
      return findingsDocumentPath(readSettings());
    } catch {
      // a setting outside the workspace: nothing is written there, nor kept for it
      return undefined;
    }
  }

  /** A run that has ended leaves the live ones once the stored list holds its final files, so that it never drops out of runs(). */
  private async endLive(id: string): Promise<void> {
    await this.refreshRuns();
    this.live.delete(id);
  }

  /** Shows a run that no phase runner started (Analyze Trace File): saved beside its folder if it has one. */
  async publish(run: RunSummary): Promise<void> {
    const workspace = workspaceRoot();
    if (workspace && existsSync(runDir(workspace, run.id))) {
      this.runChanged(workspace, run);
      if (run.status !== 'running') await this.endLive(run.id);
      return;
    }
    const viewable = viewableRun(run);
    this.memory.set(run.id, viewable);
    this.changed.fire(viewable);
    this.listChanged.fire();
  }

  isRunning(targetName?: string): boolean {
    return [...this.active].some((a) => !targetName || a.target.name === targetName);
  }

  /** Aborts the runs going on a target (or all); each keeps what it measured so far. */
  stop(targetName?: string, reason?: RunStop): number {
    let n = 0;
    for (const a of this.active) {
      if (targetName && a.target.name !== targetName) continue;
      a.abort.abort(reason);
      n++;
    }
    return n;
  }

  /** The findings document in the first column, so that the results view goes beside it rather than over it. */
  async showFindings(): Promise<void> {
    try {
      await this.findingsTarget?.ensureOpen?.();
    } catch (err) {
      this.log.warn(`Could not show the findings document: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  /**
   * Runs one phase on a target to the end, with a progress notification whose Cancel stops it.
   * `outer` lets Run All Phases stop the whole sequence at once. Returns the run's final summary.
   */
  async runPhase(
    runner: PhaseRunner,
    target: Target,
    options: Record<string, unknown>,
    outer?: AbortSignal,
    /** Where this run stands in a sequence ("step 2 of 4 of Run All Phases"), for the progress title. */
    step?: string,
  ): Promise<RunSummary | undefined> {
    const workspace = workspaceRoot();
    if (!workspace) {
      void vscode.window.showErrorMessage('Inference Bench: open a folder first. Runs are saved under .inference-bench/runs/ in the workspace folder.');
      return undefined;
    }
    const active: ActiveRun = { target, phase: runner.phase, abort: new AbortController(), runIds: new Set() };
    const onOuterAbort = () => active.abort.abort();
    outer?.addEventListener('abort', onOuterAbort);
    this.active.add(active);
    this.updateStatusBar();
    let last: RunSummary | undefined;
    try {
      return await vscode.window.withProgress(
        {
          location: vscode.ProgressLocation.Notification,
          title: `Inference Bench: ${runner.title} on ${target.name}${step ? ` (${step})` : ''}`,
          cancellable: true,
        },
        async (progress, token) => {
          token.onCancellationRequested(() => active.abort.abort());
          progress.report({ message: `connecting to ${target.name}…` });
          const connection = await this.connect(target, active.abort.signal);
          // A cluster's other hosts, for the phases that work on every host (probe, micro's collectives, each host's traces).
          const others: Connection[] = [];
          try {
            const nodes = await connectClusterNodes(target, runner.phase, connection, async (node) => {
              progress.report({ message: `connecting to ${node.host}…` });
              const other = await this.connect(node, active.abort.signal);
              others.push(other);
              return { transport: other.transport, agent: other.agent };
            });
            const sink: ResultSink = {
              runChanged: (run) => {
                active.runId = run.id;
                active.runIds.add(run.id);
                last = run;
                this.runChanged(workspace, run);
                // A macro level running says how far it is and the time left; the headline follows it.
                const going = run.status === 'running' && run.levelProgress ? levelProgressText(run.levelProgress) : undefined;
                progress.report({ message: [going, run.headline ?? (going ? undefined : run.status)].filter(Boolean).join(' · ') });
              },
              findings: (update) => this.findings(update),
            };
            // The server's API key (Set Server API Key...), from SecretStorage; handed to the agent on stdin.
            const apiKey = (await this.apiKeys?.get(target.name)) || undefined;
            const ctx: PhaseContext = {
              target,
              transport: connection.transport,
              agent: connection.agent,
              workspace,
              sink,
              log: this.log,
              signal: active.abort.signal,
              apiKey,
              nodes,
              // The core says what to do in these words: the target's settings and the commands, where the CLI names flags.
              words: extensionWords(target),
            };
            progress.report({ message: 'running…' });
            await runner.run(ctx, options);
            const ended: RunSummary | undefined = last;
            if (ended && (ended.status === 'failed' || ended.status === 'interrupted')) this.notifyFailure(runner, target, ended);
            // "Where the milliseconds go" accounts this target's newest macro, micro and profile runs: refresh it.
            if (runner.phase !== 'probe') {
              const budget = budgetFindingsForWorkspace(workspace, target.name, 'vscode');
              if (budget) this.findings(budget);
            }
            return last;
          } finally {
            for (const c of [connection, ...others])
              await c.release().catch((err) => this.log.warn(`closing the connection to ${target.name}: ${String(err)}`));
          }
        },
      );
    } catch (err) {
      if (active.abort.signal.aborted) {
        this.log.info(`${runner.phase} on ${target.name} cancelled`);
        return last;
      }
      // A run folder that could not be made says where else runs can go in VS Code's words.
      const message = err instanceof RunStorageError ? err.said(extensionWords(target)) : err instanceof Error ? err.message : String(err);
      this.log.error(`${runner.phase} on ${target.name} failed: ${message}`);
      // A changed host key needs its own way out (the fingerprints, removing the old key), not the log.
      if (err instanceof SshError && err.kind === 'host-key-changed') {
        void showConnectionFailure(target, err, `${runner.title} on ${target.name} could not connect`);
        return last;
      }
      void vscode.window.showErrorMessage(`Inference Bench: ${runner.title} on ${target.name} failed: ${message}`, 'Show Log').then((pick) => {
        if (pick) this.log.show(true);
      });
      return last;
    } finally {
      outer?.removeEventListener('abort', onOuterAbort);
      this.active.delete(active);
      // Not only the last: a run left live keeps the status it last sent ("running") over its stored final one.
      for (const id of active.runIds) await this.endLive(id);
      this.updateStatusBar();
      this.listChanged.fire();
    }
  }

  /** A run that failed or was cut off says so at once, with why and what to do, in the extension's words. */
  private notifyFailure(runner: PhaseRunner, target: Target, run: RunSummary): void {
    const reason = run.reason ?? 'see the log for why';
    this.log.error(`${runner.phase} on ${target.name} ${run.status}: ${reason}`);
    // A server that wants a key is fixed from here: the button stores it for this target.
    const setKey = run.errorCode === 'unauthorized' ? ['Set Server API Key...'] : [];
    const actions = [...setKey, 'Show Log', 'Reveal Run Folder'];
    void vscode.window.showErrorMessage(`Inference Bench: ${runner.title} on ${target.name} ${run.status}: ${reason}`, ...actions).then((pick) => {
      if (pick === 'Set Server API Key...') void vscode.commands.executeCommand('inferenceBench.setApiKey', target.name);
      if (pick === 'Show Log') this.log.show(true);
      if (pick === 'Reveal Run Folder') void vscode.commands.executeCommand('inferenceBench.revealRun', run.id);
    });
  }

  /** The sink's runChanged: the views, the status bar and (throttled) the run folder. */
  private runChanged(workspace: string, incoming: RunSummary): void {
    const run = viewableRun(incoming);
    const isNew = !this.live.has(run.id);
    this.live.set(run.id, run);
    const now = Date.now();
    if (run.status !== 'running' || now - (this.lastSaved.get(run.id) ?? 0) > SAVE_INTERVAL_MS) {
      this.lastSaved.set(run.id, now);
      try {
        saveRunView(workspace, run);
      } catch (err) {
        this.log.warn(`could not save the view of run ${run.id}: ${String(err)}`);
      }
    }
    this.changed.fire(run);
    this.updateStatusBar();
    if (isNew || run.status !== 'running') this.listChanged.fire();
  }

  private findings(update: FindingsUpdate): void {
    if (!this.findingsTarget) {
      this.log.debug(`findings update ${update.sectionId} (no findings editor in this build)`);
      return;
    }
    // Kept in the run folder too, so that a run whose extension host is killed can say so in this block later.
    const workspace = workspaceRoot();
    const document = this.findingsPath();
    if (workspace && document) keepRunFindings(workspace, document, update);
    Promise.resolve(this.findingsTarget.update(update)).catch((err) => this.log.error(`updating the findings document: ${String(err)}`));
  }

  private updateStatusBar(): void {
    const going = [...this.active];
    if (!going.length) {
      this.statusBar.hide();
      return;
    }
    const first = going[0];
    const run = first.runId ? this.live.get(first.runId) : undefined;
    this.statusBar.text = `$(sync~spin) ${first.phase} on ${first.target.name}${run?.headline ? `: ${run.headline}` : ''}${going.length > 1 ? ` (+${going.length - 1})` : ''}`;
    this.statusBar.tooltip = 'Inference Bench: a run is going. Click to show the live results; Inference Bench: Stop ends it.';
    this.statusBar.show();
  }
}
