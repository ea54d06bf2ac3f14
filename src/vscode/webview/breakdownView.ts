import * as vscode from 'vscode';
import { BreakdownView, HostToWebview, WebviewToHost } from '../../shared/protocol';
import { ProfileSummary, RunSummary } from '../../shared/results';
import { Disposable } from '../disposable';
import { insertTableIntoFindings } from './hostActions';
import { webviewHtml } from './html';
import { RunsSource } from './runsSource';

/** The profile of a run in the shape the breakdown view draws, if it has one. */
export function breakdownOf(run: RunSummary | undefined): BreakdownView | undefined {
  const p = run?.profile;
  if (!run || !p || !Array.isArray(p.ranks) || !Array.isArray(p.categories)) return undefined;
  const profile: ProfileSummary = { categories: p.categories, ranks: p.ranks, kernels: Array.isArray(p.kernels) ? p.kernels : [], steps: p.steps };
  return { runId: run.id, title: `${run.target}${run.simulated ? ' (simulator)' : ''} · ${new Date(run.startedAt).toLocaleString()}`, profile };
}

/**
 * The kernel-breakdown side view (a webview view in the panel area, so that the findings document
 * stays in sight). Shows one profile run: the one inspected last, else the newest.
 */
export class BreakdownViewProvider extends Disposable implements vscode.WebviewViewProvider {
  static readonly viewId = 'inferenceBench.kernels';
  private view: vscode.WebviewView | undefined;
  private ready = false;
  private runId: string | undefined;

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly source: RunsSource,
    private readonly log: vscode.LogOutputChannel,
  ) {
    super();
    this._register(
      source.onDidChangeRun((run) => {
        if (run.phase === 'profile' && (!this.runId || run.id === this.runId) && breakdownOf(run)) {
          this.runId = run.id;
          this.send();
        }
      }),
    );
  }

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    this.ready = false;
    view.webview.options = {
      enableScripts: true,
      localResourceRoots: [vscode.Uri.joinPath(this.extensionUri, 'dist'), vscode.Uri.joinPath(this.extensionUri, 'media')],
    };
    view.webview.html = webviewHtml(view.webview, this.extensionUri, 'Kernel breakdown', 'breakdown');
    view.onDidChangeVisibility(() => {
      if (!view.visible) this.ready = false;
    });
    view.onDidDispose(() => {
      if (this.view === view) this.view = undefined;
    });
    view.webview.onDidReceiveMessage(async (m: WebviewToHost) => {
      if (m.type === 'ready') {
        await this.source.refreshRuns();
        this.ready = true;
        this.send();
      } else if (m.type === 'insertTable') {
        try {
          await insertTableIntoFindings(m.table);
          this.post({ type: 'reply', requestId: m.requestId, ok: true });
        } catch (err) {
          const error = err instanceof Error ? err.message : String(err);
          void vscode.window.showErrorMessage(`Inference Bench: ${error}`);
          this.post({ type: 'reply', requestId: m.requestId, ok: false, error });
        }
      } else if (m.type === 'error') this.log.error(`kernel view: ${m.message}`);
    });
  }

  /** Shows a run's breakdown, revealing the view. */
  async inspect(runId: string): Promise<void> {
    this.runId = runId;
    await vscode.commands.executeCommand(`${BreakdownViewProvider.viewId}.focus`);
    this.send();
  }

  private current(): BreakdownView | undefined {
    const runs = this.source.runs();
    return breakdownOf(this.runId ? this.source.run(this.runId) : runs.find((r) => r.phase === 'profile' && breakdownOf(r)));
  }

  private send(): void {
    this.post({ type: 'breakdown', breakdown: this.current() });
  }

  private post(message: HostToWebview): void {
    if (this.view && this.ready && this.view.visible) void this.view.webview.postMessage(message);
  }
}
