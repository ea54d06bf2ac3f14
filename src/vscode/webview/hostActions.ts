import * as path from 'node:path';
import * as vscode from 'vscode';
import { storedRunTrace } from '../../core/runs/requestTrace';
import { WebviewRequest } from '../../shared/protocol';
import { ResultTable } from '../../shared/table';
import { insertTableAt } from '../findings/insertResult';
import { findingsDocumentPath, readSettings, workspaceRoot } from '../settings';

/** Asks where to save an export (PNG or CSV from a results view) and writes it there. Returns the path, or undefined if the user cancelled. */
export async function saveExport(fileName: string, bytes: Uint8Array): Promise<string | undefined> {
  const root = workspaceRoot();
  const ext = path.extname(fileName).slice(1).toLowerCase();
  const target = await vscode.window.showSaveDialog({
    title: `Save ${fileName}`,
    defaultUri: root ? vscode.Uri.file(path.join(root, fileName)) : undefined,
    filters: ext === 'png' ? { 'PNG image': ['png'] } : ext === 'json' ? { 'Chrome trace (Perfetto, chrome://tracing)': ['json'] } : { 'CSV table': ['csv'] },
  });
  if (!target) return undefined;
  await vscode.workspace.fs.writeFile(target, bytes);
  return target.fsPath;
}

/** Decodes a canvas's `data:image/png;base64,...` URL; refuses anything else. */
export function pngFromDataUrl(dataUrl: string): Uint8Array {
  const prefix = 'data:image/png;base64,';
  if (!dataUrl.startsWith(prefix)) throw new Error('The chart export was not a PNG image.');
  return Buffer.from(dataUrl.slice(prefix.length), 'base64');
}

/**
 * Inserts a table at the cursor of the findings document, through the editor so that undo works and
 * nothing is written behind the user's back. Opens the document beside the view if it is not showing.
 */
export async function insertTableIntoFindings(table: ResultTable): Promise<void> {
  const file = findingsDocumentPath(readSettings());
  if (!file) throw new Error('Open a folder first: the findings document lives in the workspace folder (setting inferenceBench.findingsDocument).');
  const uri = vscode.Uri.file(file);
  let editor = vscode.window.visibleTextEditors.find((e) => e.document.uri.fsPath === uri.fsPath);
  if (!editor) {
    try {
      await vscode.workspace.fs.stat(uri);
    } catch {
      await vscode.workspace.fs.writeFile(uri, Buffer.from(`# Findings: ${path.basename(file, '.md')}\n\n## Notes\n\n`));
    }
    editor = await vscode.window.showTextDocument(uri, { viewColumn: vscode.ViewColumn.One, preserveFocus: true, preview: false });
  }
  // A cursor the user never placed sits at the very top, above the title: append instead.
  if (editor.selection.isEmpty && editor.selection.active.line === 0 && editor.selection.active.character === 0) {
    const end = editor.document.lineAt(editor.document.lineCount - 1).range.end;
    editor.selection = new vscode.Selection(end, end);
  }
  // Same markdown as Insert Result Here (title, aligned table, note), at the cursor.
  const ok = await insertTableAt(editor, { label: table.title, detail: table.id, table });
  if (!ok) throw new Error('The editor refused the insertion (the findings document may be read-only).');
}

/** Does what a view asks (save an export, insert a table into the findings document); every view answers each request the same way. */
export async function answerRequest(request: WebviewRequest, log: vscode.LogOutputChannel): Promise<void> {
  if (request.type === 'insertTable') return insertTableIntoFindings(request.table);
  if (request.type === 'exportTrace') {
    const root = workspaceRoot();
    if (!root) throw new Error('Open the folder that holds the runs (.inference-bench/runs) first: the trace is built from the run folder.');
    const saved = await saveExport(`${request.runId}.trace.json`, Buffer.from(storedRunTrace(root, request.runId), 'utf8'));
    if (saved) log.info(`saved ${saved} (open it in https://ui.perfetto.dev or chrome://tracing)`);
    return;
  }
  const bytes = request.type === 'exportPng' ? pngFromDataUrl(request.dataUrl) : Buffer.from(request.csv, 'utf8');
  const saved = await saveExport(request.fileName, bytes);
  if (saved) log.info(`saved ${saved}`);
}

/** A view's request that failed: in the log, and said to the user (the view shows the error too). */
export function requestFailed(log: vscode.LogOutputChannel, view: string, error: string): void {
  log.error(`${view} action failed: ${error}`);
  void vscode.window.showErrorMessage(`Inference Bench: ${error}`);
}
