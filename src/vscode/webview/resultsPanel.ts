import * as vscode from 'vscode';
import { HostToWebview, ResultsSnapshot, WebviewToHost } from '../../shared/protocol';
import { RunSummary } from '../../shared/results';
import { Disposable } from '../disposable';
import { resultsHtml } from './html';

/**
 * The results panel. The host owns the data: a panel that becomes visible gets a snapshot, then
 * increments; nothing is posted while it is hidden. A serializer brings it back after a reload.
 */
export class ResultsPanel extends Disposable {
  static readonly viewType = 'inferenceBench.results';
  private static current: ResultsPanel | undefined;

  private visibleAndReady = false;

  static show(extensionUri: vscode.Uri, snapshot: () => ResultsSnapshot, log: vscode.LogOutputChannel): ResultsPanel {
    if (ResultsPanel.current) {
      ResultsPanel.current.panel.reveal(undefined, true);
      ResultsPanel.current.sendSnapshot();
      return ResultsPanel.current;
    }
    const panel = vscode.window.createWebviewPanel(ResultsPanel.viewType, 'Inference Bench Results', { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true }, ResultsPanel.options(extensionUri));
    return (ResultsPanel.current = new ResultsPanel(panel, extensionUri, snapshot, log));
  }

  static revive(panel: vscode.WebviewPanel, extensionUri: vscode.Uri, snapshot: () => ResultsSnapshot, log: vscode.LogOutputChannel): ResultsPanel {
    panel.webview.options = ResultsPanel.options(extensionUri);
    return (ResultsPanel.current = new ResultsPanel(panel, extensionUri, snapshot, log));
  }

  static get active(): ResultsPanel | undefined {
    return ResultsPanel.current;
  }

  private static options(extensionUri: vscode.Uri): vscode.WebviewOptions & vscode.WebviewPanelOptions {
    return {
      enableScripts: true,
      retainContextWhenHidden: false,
      localResourceRoots: [vscode.Uri.joinPath(extensionUri, 'dist'), vscode.Uri.joinPath(extensionUri, 'media')],
    };
  }

  private constructor(
    private readonly panel: vscode.WebviewPanel,
    extensionUri: vscode.Uri,
    private readonly snapshot: () => ResultsSnapshot,
    private readonly log: vscode.LogOutputChannel,
  ) {
    super();
    this._register(panel);
    panel.webview.html = resultsHtml(panel.webview, extensionUri, 'Inference Bench Results');
    this._register(panel.onDidDispose(() => {
      if (ResultsPanel.current === this) ResultsPanel.current = undefined;
      this.dispose();
    }));
    this._register(panel.onDidChangeViewState(() => {
      // A hidden webview is torn down; when it shows again it asks for a snapshot with `ready`.
      if (!panel.visible) this.visibleAndReady = false;
    }));
    this._register(panel.webview.onDidReceiveMessage((m: WebviewToHost) => this.onMessage(m)));
  }

  /** Called by the run controller as results arrive. */
  runUpdated(run: RunSummary): void {
    this.post({ type: 'runUpdated', run });
  }

  select(runId: string, compareRunId?: string): void {
    this.post({ type: 'select', runId, compareRunId });
  }

  private sendSnapshot(): void {
    this.post({ type: 'snapshot', snapshot: this.snapshot() });
  }

  private post(message: HostToWebview): void {
    if (!this.visibleAndReady) return;
    void this.panel.webview.postMessage(message);
  }

  private onMessage(message: WebviewToHost): void {
    switch (message.type) {
      case 'ready':
        this.visibleAndReady = true;
        this.sendSnapshot();
        break;
      case 'error':
        this.log.error(`results view: ${message.message}`);
        break;
      default:
        this.log.debug(`results view sent ${message.type}`);
    }
  }
}
