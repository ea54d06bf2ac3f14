import { basename } from 'node:path';
import * as vscode from 'vscode';
import { campaignReportHtml, reportPathFor, reportRuns } from '../../core/findings/report';
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
  void vscode.window.showInformationMessage(`Inference Bench: report written to ${basename(out)}.`, 'Open in Browser', 'Reveal in Explorer').then((pick) => {
    if (pick === 'Open in Browser') void vscode.env.openExternal(vscode.Uri.file(out));
    if (pick === 'Reveal in Explorer') void vscode.commands.executeCommand('revealInExplorer', vscode.Uri.file(out));
  });
  return out;
}
