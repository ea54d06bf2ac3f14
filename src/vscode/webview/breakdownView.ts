import * as vscode from 'vscode';
import { BreakdownView } from '../../shared/protocol';
import { ProfileSummary, RunSummary } from '../../shared/results';
import { Disposable } from '../disposable';
import { answerRequest, requestFailed } from './hostActions';
import { webviewHtml } from './html';
import { RunsSource } from './runsSource';
import { WebviewHost } from './webviewHost';

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
  /** The view's page as now resolved, if any. */
  private host: WebviewHost | undefined;
  private runId: string | undefined;

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly source: RunsSource,
    private readonly log: vscode.LogOutputChannel,
  ) {
    super();
    this._register({ dispose: () => this.host?.dispose() });
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
    this.host?.dispose();
    const host = (this.host = new WebviewHost(view.webview, {
      prepare: () => this.source.refreshRuns(),
      snapshot: () => this.send(),
      answer: (request) => answerRequest(request, this.log),
      failed: (_, error) => requestFailed(this.log, 'kernel view', error),
      notice: (m) => {
        if (m.type === 'error') this.log.error(`kernel view: ${m.message}`);
      },
    }));
    view.webview.options = {
      enableScripts: true,
      localResourceRoots: [vscode.Uri.joinPath(this.extensionUri, 'dist'), vscode.Uri.joinPath(this.extensionUri, 'media')],
    };
    view.webview.html = webviewHtml(view.webview, this.extensionUri, 'Kernel breakdown', 'breakdown');
    view.onDidChangeVisibility(() => {
      if (!view.visible) host.hidden();
    });
    view.onDidDispose(() => {
      host.dispose();
      if (this.host === host) this.host = undefined;
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
    this.host?.post({ type: 'breakdown', breakdown: this.current() });
  }
}
