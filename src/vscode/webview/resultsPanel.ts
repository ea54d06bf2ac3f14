import * as vscode from 'vscode';
import { budgetViewForWorkspace } from '../../core/explain/campaign';
import { compareRunFolders, findRun } from '../../core/compare/compareRuns';
import { WebviewNotice } from '../../shared/protocol';
import { Disposable } from '../disposable';
import { workspaceRoot } from '../settings';
import { answerRequest, requestFailed } from './hostActions';
import { webviewHtml } from './html';
import { RunsSource } from './runsSource';
import { WebviewHost } from './webviewHost';

// Live runs can change many times a second (one macro request each); the view redraws at most this often.
const UPDATE_INTERVAL_MS = 200;

export interface ResultsPanelDeps {
  extensionUri: vscode.Uri;
  source: RunsSource;
  log: vscode.LogOutputChannel;
  /** Opens the kernel-breakdown side view on a profile run. */
  inspectBreakdown(runId: string): void;
}

/**
 * The results panel. The host owns the data: a panel that becomes visible gets a snapshot, then
 * increments; nothing is posted while it is hidden. A serializer brings it back after a reload.
 */
export class ResultsPanel extends Disposable {
  static readonly viewType = 'inferenceBench.results';
  private static current: ResultsPanel | undefined;

  private readonly host: WebviewHost;
  private selectedRunId: string | undefined;
  private compareRunId: string | undefined;
  private pendingReveal: 'budget' | undefined;
  /** The last render the view reported: how many points and how long it took. */
  lastRender: { points: number; ms: number } | undefined;

  static show(deps: ResultsPanelDeps, runId?: string, compareRunId?: string, reveal?: 'budget'): ResultsPanel {
    let view = ResultsPanel.current;
    if (!view) {
      // The second column: the findings document takes the first, so that both stay in sight while a run goes.
      const panel = vscode.window.createWebviewPanel(
        ResultsPanel.viewType,
        'Inference Bench Results',
        { viewColumn: vscode.ViewColumn.Two, preserveFocus: true },
        ResultsPanel.options(deps.extensionUri),
      );
      view = ResultsPanel.current = new ResultsPanel(panel, deps);
    } else view.panel.reveal(undefined, true);
    if (runId) view.select(runId, compareRunId);
    if (reveal) view.reveal(reveal);
    return view;
  }

  /** The run shown, whose target's budget is below it. */
  get shownRunId(): string | undefined {
    return this.selectedRunId;
  }

  /** Scrolls the view to a section, now or once it has drawn its snapshot. */
  reveal(section: 'budget'): void {
    this.pendingReveal = section;
    this.sendReveal();
  }

  private sendReveal(): void {
    if (!this.host.isReady || !this.pendingReveal) return;
    this.host.post({ type: 'reveal', section: this.pendingReveal });
    this.pendingReveal = undefined;
  }

  static revive(panel: vscode.WebviewPanel, deps: ResultsPanelDeps): ResultsPanel {
    panel.webview.options = ResultsPanel.options(deps.extensionUri);
    ResultsPanel.current?.dispose();
    return (ResultsPanel.current = new ResultsPanel(panel, deps));
  }

  static get active(): ResultsPanel | undefined {
    return ResultsPanel.current;
  }

  private static options(extensionUri: vscode.Uri): vscode.WebviewOptions & vscode.WebviewPanelOptions {
    return {
      enableScripts: true,
      // Hidden views are torn down and get a fresh snapshot when shown: cheaper than keeping charts alive.
      retainContextWhenHidden: false,
      localResourceRoots: [vscode.Uri.joinPath(extensionUri, 'dist'), vscode.Uri.joinPath(extensionUri, 'media')],
    };
  }

  private constructor(
    private readonly panel: vscode.WebviewPanel,
    private readonly deps: ResultsPanelDeps,
  ) {
    super();
    this._register(panel);
    panel.webview.html = webviewHtml(panel.webview, deps.extensionUri, 'Inference Bench Results', 'results');
    this._register(
      panel.onDidDispose(() => {
        if (ResultsPanel.current === this) ResultsPanel.current = undefined;
        this.dispose();
      }),
    );
    this.host = this._register(
      new WebviewHost(
        panel.webview,
        {
          // Runs made or removed while the view was hidden (by the CLI, say) are in its snapshot.
          prepare: () => deps.source.refreshRuns(),
          snapshot: () => {
            this.sendSnapshot();
            this.sendVerdict();
            this.sendReveal();
          },
          answer: (request) => answerRequest(request, deps.log),
          failed: (_, error) => requestFailed(deps.log, 'results view', error),
          notice: (m) => this.onNotice(m),
        },
        UPDATE_INTERVAL_MS,
      ),
    );
    this._register(
      panel.onDidChangeViewState(() => {
        // A hidden webview is torn down; when it shows again it asks for a snapshot with `ready`.
        if (!panel.visible) this.host.hidden();
      }),
    );
    this._register(deps.source.onDidChangeRun((run) => this.host.update(run.id, { type: 'runUpdated', run })));
    // A finished run changes the decode-step budget (it accounts the newest macro, micro and profile runs).
    this._register(deps.source.onDidChangeRuns(() => this.host.post({ type: 'budget', budget: this.budget() })));
  }

  get visible(): boolean {
    return this.host.isReady;
  }

  select(runId: string, compareRunId?: string): void {
    this.selectedRunId = runId;
    this.compareRunId = compareRunId;
    this.host.post({ type: 'select', runId, compareRunId });
    this.sendFull(runId, compareRunId);
    this.host.post({ type: 'budget', budget: this.budget() });
    this.sendVerdict();
  }

  /** Compare's one-line answer: what changed beyond noise between the two runs shown, by the CLI's own rules. */
  private sendVerdict(): void {
    const root = workspaceRoot();
    const a = this.selectedRunId;
    const b = this.compareRunId;
    if (!root || !a || !b) return;
    let lines: string[];
    let flagged = 0;
    try {
      const comparison = compareRunFolders(findRun(root, a), findRun(root, b));
      flagged = comparison.differences.filter((d) => d.flagged).length;
      // With nothing flagged, why some quantities were not compared (a level only one run has, another workload).
      lines = flagged ? comparison.summary : [...comparison.summary, ...comparison.unmatched.slice(0, 3)];
    } catch (err) {
      lines = [err instanceof Error ? err.message : String(err)];
    }
    this.host.post({ type: 'verdict', runId: a, compareRunId: b, lines, flagged });
  }

  private sendSnapshot(): void {
    const runs = this.deps.source.runs();
    const shown = new Set([this.selectedRunId ?? runs[0]?.id, this.compareRunId].filter(Boolean));
    const trimmedRunIds: string[] = [];
    // Only the runs on screen go in full: a workspace of many macro runs holds tens of thousands of request points each.
    const light = runs.map((r) => {
      if (shown.has(r.id) || (!r.macro?.requests?.length && !r.micro?.points?.length)) return r;
      trimmedRunIds.push(r.id);
      return { ...r, macro: r.macro && { levels: r.macro.levels }, micro: r.micro && { ...r.micro, points: [] } };
    });
    this.host.post({
      type: 'snapshot',
      snapshot: { runs: light, selectedRunId: this.selectedRunId, compareRunId: this.compareRunId, trimmedRunIds, budget: this.budget() },
    });
  }

  private budget() {
    if (!this.host.isReady) return undefined;
    const root = workspaceRoot();
    // The budget of the shown run's target and, for a macro or profile run, of the server configuration
    // it measured: a comparison's slow configuration is never set beside the production profile.
    const runs = this.deps.source.runs();
    const shown = (this.selectedRunId ? this.deps.source.run(this.selectedRunId) : undefined) ?? runs.find((r) => r.phase !== 'probe');
    const measured = shown && (shown.phase === 'macro' || shown.phase === 'profile') ? shown.configuration?.id : undefined;
    return root ? budgetViewForWorkspace(root, shown?.target, measured && measured !== 'unknown' ? measured : undefined) : undefined;
  }

  /** Sends the runs the view now shows in full (they may have gone out trimmed in the snapshot). */
  private sendFull(...ids: (string | undefined)[]): void {
    for (const id of ids) {
      const run = id ? this.deps.source.run(id) : undefined;
      if (run) this.host.post({ type: 'runUpdated', run });
    }
  }

  private onNotice(message: WebviewNotice): void {
    switch (message.type) {
      case 'selectRun': {
        const before = this.selectedRunId ? this.deps.source.run(this.selectedRunId)?.target : undefined;
        this.selectedRunId = message.runId;
        this.compareRunId = message.compareRunId;
        this.sendFull(message.runId, message.compareRunId);
        if (this.deps.source.run(message.runId)?.target !== before) this.host.post({ type: 'budget', budget: this.budget() });
        this.sendVerdict();
        return;
      }
      case 'inspectBreakdown':
        this.deps.inspectBreakdown(message.runId);
        return;
      case 'rendered':
        this.lastRender = { points: message.points, ms: message.ms };
        this.deps.log.trace(`results view drew ${message.points} points in ${message.ms.toFixed(1)} ms`);
        return;
      case 'error':
        this.deps.log.error(`results view: ${message.message}`);
        return;
    }
  }
}
