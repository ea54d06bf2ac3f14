import * as vscode from 'vscode';
import { renderTableBlock } from '../../core/findings/render';
import { LabeledTable } from '../../core/findings/storedTables';

/**
 * "Insert Result Here": the user picks one of the result tables and it is inserted at the cursor as
 * markdown (title, aligned table, note), for the user's own prose sections. The tables come from
 * `tables`, which the caller fills from the runs it knows (see FindingsEditor.resultTables).
 */
export async function insertResultHere(tables: () => LabeledTable[] | Promise<LabeledTable[]>): Promise<boolean> {
  const editor = vscode.window.activeTextEditor;
  if (!editor) {
    void vscode.window.showErrorMessage('Inference Bench: put the cursor where the table should go in a document first, then run Insert Result Here again.');
    return false;
  }
  const choices = await tables();
  if (!choices.length) {
    void vscode.window.showInformationMessage(
      'Inference Bench: there are no result tables yet. Run a phase (macro, micro or profiler) first; its tables then appear here.',
    );
    return false;
  }
  const picked = await vscode.window.showQuickPick(
    choices.map((choice) => ({ label: choice.label, description: `${choice.table.rows.length} rows`, detail: choice.detail, choice })),
    { title: 'Insert Result Here', placeHolder: 'Which result table goes at the cursor?', matchOnDetail: true, ignoreFocusOut: true },
  );
  if (!picked) return false;
  return insertTableAt(editor, picked.choice);
}

export async function insertTableAt(editor: vscode.TextEditor, choice: LabeledTable): Promise<boolean> {
  const doc = editor.document;
  const eol = doc.eol === vscode.EndOfLine.CRLF ? '\r\n' : '\n';
  const at = editor.selection.start;
  const line = doc.lineAt(at.line).text;
  // A table needs a line of its own with a blank line before it, or markdown reads it as text.
  const before = line.slice(0, at.character).trim() ? eol + eol : at.line > 0 && doc.lineAt(at.line - 1).text.trim() ? eol : '';
  const after = line.slice(at.character).trim() ? eol + eol : eol;
  const block = before + renderTableBlock(choice.table).join(eol) + after;
  const ok = await editor.edit((b) => b.replace(editor.selection, block));
  if (!ok) void vscode.window.showErrorMessage('Inference Bench: the editor refused the insertion (is the document read-only?).');
  return ok;
}
