import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import * as vscode from 'vscode';
import { campaignReportHtml, reportPathFor, reportPreviewHtml, reportRuns } from '../../core/findings/report';
import { writeAtomic } from '../../core/runs/runFolder';
import { RunSummary } from '../../shared/results';
import { findingsDocumentPath, readSettings } from '../settings';

/**
 * "Export Campaign Report": the findings document as it reads in the editor now (unsaved typing
 * included: the report is what the user sees) and the runs it quotes, in one self-contained HTML
 * file beside it. Returns the file written, or undefined when there is no document yet.
 */
export async function exportReportCommand(runs: () => RunSummary[]): Promise<string | undefined> {
  let path: string | undefined;
  try {
    path = findingsDocumentPath(readSettings());
  } catch (err) {
    void vscode.window.showErrorMessage(err instanceof Error ? err.message : String(err));
    return undefined;
  }
  const open = path ? vscode.workspace.textDocuments.find((d) => d.uri.fsPath === path) : undefined;
  let text: string | undefined = open?.getText();
  if (text === undefined && path) {
    try {
      text = new TextDecoder().decode(await vscode.workspace.fs.readFile(vscode.Uri.file(path)));
    } catch {
      text = undefined;
    }
  }
  if (!path || text === undefined) {
    void vscode.window.showInformationMessage('Inference Bench: no findings document yet. Run a phase (or Run All Phases) and its results fill one in.');
    return undefined;
  }
  const out = reportPathFor(path);
  try {
    writeAtomic(out, campaignReportHtml(text, reportRuns(runs(), text), { title: basename(path), madeAt: new Date() }));
  } catch (err) {
    void vscode.window.showErrorMessage(`Inference Bench: the report could not be written to ${out}: ${err instanceof Error ? err.message : String(err)}`);
    return undefined;
  }
  void vscode.window.showInformationMessage(`Inference Bench: report written to ${basename(out)}.`, ...reportActions()).then((pick) => {
    if (pick === OPEN_PREVIEW) showReportPreview(out);
    if (pick === OPEN_BROWSER) void vscode.env.openExternal(vscode.Uri.file(out));
    if (pick === REVEAL) void vscode.commands.executeCommand('revealInExplorer', vscode.Uri.file(out));
  });
  return out;
}

const OPEN_PREVIEW = 'Open Preview';
const OPEN_BROWSER = 'Open in Browser';
const REVEAL = 'Reveal in Explorer';

/**
 * What the notification offers. A browser is offered only where a file:// link reaches it: desktop
 * VS Code on this machine. In a browser (code-server, vscode.dev) or over Remote-SSH the file is on
 * another machine and openExternal would do nothing; the preview works everywhere.
 */
export function reportActions(): string[] {
  const local = vscode.env.uiKind === vscode.UIKind.Desktop && vscode.env.remoteName === undefined;
  return local ? [OPEN_PREVIEW, OPEN_BROWSER, REVEAL] : [OPEN_PREVIEW, REVEAL];
}

/** The report in an editor tab: a webview with scripts off, the report's own page under a nonce policy. */
export function showReportPreview(path: string): vscode.WebviewPanel {
  const panel = vscode.window.createWebviewPanel(
    'inferenceBench.report',
    basename(path),
    { viewColumn: vscode.ViewColumn.Beside, preserveFocus: false },
    { enableScripts: false, localResourceRoots: [] },
  );
  panel.webview.html = reportPreviewHtml(readFileSync(path, 'utf8'), randomBytes(16).toString('base64'));
  return panel;
}
