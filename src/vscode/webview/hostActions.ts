import * as path from 'node:path';
import * as vscode from 'vscode';
import { renderMarkdownTable } from '../../core/findings/markdownTable';
import { ResultTable } from '../../shared/table';
import { findingsDocumentPath, readSettings, workspaceRoot } from '../settings';

/** Asks where to save an export (PNG or CSV from a results view) and writes it there. Returns the path, or undefined if the user cancelled. */
export async function saveExport(fileName: string, bytes: Uint8Array): Promise<string | undefined> {
  const root = workspaceRoot();
  const ext = path.extname(fileName).slice(1).toLowerCase();
  const target = await vscode.window.showSaveDialog({
    title: `Save ${fileName}`,
    defaultUri: root ? vscode.Uri.file(path.join(root, fileName)) : undefined,
    filters: ext === 'png' ? { 'PNG image': ['png'] } : { 'CSV table': ['csv'] },
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
  const at = editor.selection.active;
  const lineText = editor.document.lineAt(at.line).text;
  // A table must start on a line of its own with a blank line before it, or markdown will not see it.
  const before = lineText.trim() === '' ? '' : at.character === 0 ? '' : '\n\n';
  const markdown = `${before}**${table.title}**\n\n${renderMarkdownTable(table)}\n${table.note ? `\n_${table.note}_\n` : ''}\n`;
  const ok = await editor.edit((b) => b.insert(at, markdown));
  if (!ok) throw new Error('The editor refused the edit (the document may be read-only).');
}
