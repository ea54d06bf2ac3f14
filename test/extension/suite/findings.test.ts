import * as assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import * as vscode from 'vscode';
import { defaultFindingsDocument } from '../../../src/core/findings/campaignName';
import { markerId, parseRegions, userText } from '../../../src/core/findings/markers';
import { renderSkeleton } from '../../../src/core/findings/skeleton';
import { applyFindingsUpdate, EDITED_NOTE } from '../../../src/core/findings/update';
import { silentLogger } from '../../../src/core/log';
import { FindingsEditor } from '../../../src/vscode/findings/findingsEditor';
import { macroUpdate, profileUpdate } from '../../unit/findings/fixtures';
import { closeAllEditors, sleep, waitFor, workspaceFolder } from '../helpers';

// The FindingsEditor here is the extension's own class running in this real extension host against
// real editors; only the phases are left out: the updates are the ones a macro or profiler run sends.

function regionContent(text: string, sectionId: string): string {
  const r = parseRegions(text)
    .regions.filter((x) => x.id === markerId(sectionId) && x.intact)
    .pop();
  assert.ok(r, `no region for ${sectionId} in:\n${text}`);
  return text.slice(r.contentStart, r.contentEnd);
}

async function typeAt(editor: vscode.TextEditor, offset: number, text: string, pauseMs = 10): Promise<void> {
  const pos = editor.document.positionAt(offset);
  editor.selection = new vscode.Selection(pos, pos);
  for (const ch of text) {
    await vscode.commands.executeCommand('type', { text: ch });
    await sleep(pauseMs);
  }
}

const endOf = (doc: vscode.TextDocument) => doc.getText().length;

/** Closes every editor without a save prompt (a prompt would wait forever in a headless run). */
async function discardAndCloseAll(): Promise<void> {
  for (let i = 0; i < 30 && vscode.window.tabGroups.all.some((g) => g.tabs.length); i++) {
    if (!vscode.window.activeTextEditor) await vscode.commands.executeCommand('workbench.action.focusFirstEditorGroup');
    await vscode.commands.executeCommand('workbench.action.revertAndCloseActiveEditor');
    await sleep(50);
  }
  await closeAllEditors();
}

describe('the findings document in the editor', () => {
  let file: string;
  let findings: FindingsEditor;

  // code-server saves after a delay by default; desktop VS Code does not. The dirty-document cases
  // need the desktop default, or the auto-save would be mistaken for the tool writing to disk.
  before(async () => {
    await vscode.workspace.getConfiguration('files').update('autoSave', 'off', vscode.ConfigurationTarget.Global);
  });

  after(async () => {
    await vscode.workspace.getConfiguration('files').update('autoSave', undefined, vscode.ConfigurationTarget.Global);
  });

  beforeEach(async () => {
    await closeAllEditors();
    file = join(workspaceFolder(), `findings-${Date.now()}.md`);
    findings = new FindingsEditor(() => file, silentLogger, { showOnNewRun: false });
  });

  afterEach(async () => {
    findings.dispose();
    await discardAndCloseAll();
    rmSync(file, { force: true });
  });

  it('creates the skeleton and opens it in the first column without taking focus', async () => {
    const other = await vscode.workspace.openTextDocument({ language: 'markdown', content: 'scratch' });
    await vscode.window.showTextDocument(other, vscode.ViewColumn.Two);
    const editor = await findings.ensureOpen({ target: 'local', hardware: '8× NVIDIA H200' });
    assert.ok(existsSync(file));
    assert.equal(editor.viewColumn, vscode.ViewColumn.One);
    assert.equal(vscode.window.activeTextEditor?.document, other, 'focus stays where the user was');
    const text = editor.document.getText();
    assert.match(text, /^# Findings: findings-\d+\n/);
    assert.match(text, /\*\*Hardware:\*\* 8× NVIDIA H200/);
    for (const h of ['## Macro', '## Micro', '## Profiler', '## Where the milliseconds go', '## Notes']) assert.ok(text.includes(h), h);
  });

  it('lands every update in a dirty document while the user types, and keeps every keystroke', async () => {
    const editor = await findings.ensureOpen(undefined, { focus: true });
    const initial = editor.document.getText();
    await typeAt(editor, endOf(editor.document), '\nFirst thought: ');
    assert.ok(editor.document.isDirty);
    const typed = 'TPOT stays flat up to c=8, 注意力 is cheap 🚀.';
    const landed: Promise<void>[] = [];
    // Rows arrive while the user keeps typing at the end of the notes.
    const typing = typeAt(editor, endOf(editor.document), typed, 15);
    for (let rows = 1; rows <= 8; rows++) {
      landed.push(findings.update(macroUpdate(rows)));
      await sleep(60);
    }
    await Promise.all([typing, ...landed]);
    const text = editor.document.getText();
    assert.equal(userText(text), `${userText(initial)}\nFirst thought: ${typed}`);
    assert.match(regionContent(text, macroUpdate(1).sectionId), /\| +128 \| +488\.0 \|/, 'the last row landed');
    assert.ok(editor.document.isDirty, 'a document with unsaved user text is left for the user to save');
    assert.equal(readFileSync(file, 'utf8'), initial, 'nothing was written behind the editor');
  });

  it('tries again when the user types between reading the document and applying the edit', async () => {
    const editor = await findings.ensureOpen(undefined, { focus: true });
    // Unsaved text already there: the update goes into the buffer, where the race is.
    await typeAt(editor, endOf(editor.document), '\nY');
    const end = editor.document.positionAt(endOf(editor.document));
    editor.selection = new vscode.Selection(end, end);
    // A keystroke sent just before the edit reaches the workbench first, exactly as when the user
    // types while the extension host computes: VS Code must refuse the now stale edit.
    const workspace = vscode.workspace as { applyEdit: typeof vscode.workspace.applyEdit };
    const realApplyEdit = workspace.applyEdit;
    let calls = 0;
    let refused = 0;
    workspace.applyEdit = async (edit, metadata) => {
      if (++calls === 1) void vscode.commands.executeCommand('type', { text: 'Z' });
      const ok = await realApplyEdit.call(vscode.workspace, edit, metadata);
      if (!ok) refused++;
      return ok;
    };
    try {
      await findings.update(macroUpdate(2));
    } finally {
      workspace.applyEdit = realApplyEdit;
    }
    assert.ok(refused >= 1 && calls >= 2, `the stale edit was refused and tried again (calls ${calls}, refused ${refused})`);
    const text = editor.document.getText();
    assert.ok(text.endsWith('YZ'), 'the keystrokes stayed');
    assert.match(regionContent(text, macroUpdate(1).sectionId), /\| +2 \| +47\.0 \|/);
  });

  it('gathers a burst of rows into one edit, so that one undo takes back one batch', async () => {
    const editor = await findings.ensureOpen(undefined, { focus: true });
    await typeAt(editor, endOf(editor.document), '\nMy note.');
    await findings.update(macroUpdate(1));
    const afterFirst = editor.document.getText();
    const workspace = vscode.workspace as { applyEdit: typeof vscode.workspace.applyEdit };
    const realApplyEdit = workspace.applyEdit;
    let calls = 0;
    workspace.applyEdit = (edit, metadata) => {
      calls++;
      return realApplyEdit.call(vscode.workspace, edit, metadata);
    };
    try {
      await Promise.all([2, 3, 4, 5, 6, 7, 8].map((rows) => findings.update(macroUpdate(rows))));
    } finally {
      workspace.applyEdit = realApplyEdit;
    }
    assert.equal(calls, 1, 'seven rows sent together land as one edit');
    assert.match(regionContent(editor.document.getText(), macroUpdate(1).sectionId), /\| +128 \|/);
    await vscode.commands.executeCommand('undo');
    assert.equal(editor.document.getText(), afterFirst);
  });

  it('writes the results to the file of a document with nothing unsaved, and its tab never shows unsaved', async () => {
    const editor = await findings.ensureOpen();
    const dirtyAt: number[] = [];
    const watching = vscode.workspace.onDidChangeTextDocument((e) => {
      if (e.document === editor.document && e.document.isDirty) dirtyAt.push(e.document.version);
    });
    try {
      await findings.update(macroUpdate(2));
      await findings.update(profileUpdate());
    } finally {
      watching.dispose();
    }
    assert.deepEqual(dirtyAt, [], 'the tab showed unsaved (●) while the tool wrote');
    assert.equal(editor.document.isDirty, false);
    assert.match(readFileSync(file, 'utf8'), /\| all-reduce \| +11\.17 \| +51\.5 \|/);
    assert.equal(editor.document.getText(), readFileSync(file, 'utf8'), 'the editor shows what the file holds');
  });

  it("never saves the user's unsaved text; the results reach the file when the user discards it", async () => {
    const editor = await findings.ensureOpen(undefined, { focus: true });
    await typeAt(editor, endOf(editor.document), '\nDraft, not to be saved');
    await findings.update(profileUpdate());
    assert.ok(editor.document.getText().includes('all-reduce'), 'the results are in the editor at once');
    assert.ok(editor.document.getText().includes('Draft, not to be saved'));
    assert.ok(editor.document.isDirty, 'the draft is still unsaved');
    assert.ok(!readFileSync(file, 'utf8').includes('Draft'), 'the draft was saved without the user');
    // The user discards the draft (File: Revert File): the results must not go with it.
    await vscode.commands.executeCommand('workbench.action.files.revert');
    const onDisk = await waitFor('the results in the file', () => {
      const text = readFileSync(file, 'utf8');
      return text.includes('all-reduce') ? text : undefined;
    });
    assert.ok(!onDisk.includes('Draft'));
    await waitFor('the editor to show the file', () => editor.document.getText() === onDisk && !editor.document.isDirty);
  });

  it("results that landed beside the user's unsaved text reach the file with the user's own save", async () => {
    const editor = await findings.ensureOpen(undefined, { focus: true });
    await typeAt(editor, endOf(editor.document), '\nKept.');
    await findings.update(macroUpdate(3));
    assert.ok(!readFileSync(file, 'utf8').includes('Serving by concurrency'), 'nothing written behind the dirty editor');
    assert.ok(await editor.document.save());
    const text = readFileSync(file, 'utf8');
    assert.ok(text.includes('Kept.') && text.includes('Serving by concurrency'));
    await findings.update(macroUpdate(4));
    assert.equal(editor.document.isDirty, false, 'the next update goes to the file of the clean document');
    assert.match(regionContent(readFileSync(file, 'utf8'), macroUpdate(1).sectionId), /\| +4 \| +54\.0 \|/);
  });

  it('leaves a region the user edited as theirs and writes a fresh one below it', async () => {
    const editor = await findings.ensureOpen(undefined, { focus: true });
    await findings.update(macroUpdate(2));
    const at = editor.document.getText().indexOf('Single-stream decode');
    await typeAt(editor, at, 'Checked: ');
    await findings.update(macroUpdate(4));
    const text = editor.document.getText();
    assert.ok(text.includes('Checked: Single-stream decode'));
    assert.ok(regionContent(text, macroUpdate(1).sectionId).includes(EDITED_NOTE));
    assert.equal(text.match(/Checked: /g)?.length, 1);
  });

  it('edits a closed document on disk, keeping what the user saved in it', async () => {
    const mine = renderSkeleton('closed.md').replace('## Notes\n', '## Notes\n\nWritten while no editor had it open.\n');
    writeFileSync(file, mine);
    await waitFor('the document to be closed', () => !vscode.workspace.textDocuments.some((d) => d.uri.fsPath === file));
    await findings.update(macroUpdate(3));
    await findings.update(profileUpdate());
    const text = readFileSync(file, 'utf8');
    assert.equal(userText(text), userText(mine));
    assert.match(regionContent(text, macroUpdate(1).sectionId), /\| +4 \| +54\.0 \|/);
    assert.ok(!vscode.workspace.textDocuments.some((d) => d.uri.fsPath === file), 'the document was not opened to edit it');
  });

  it('lets two runs fill their sections at once, row by row', async () => {
    const editor = await findings.ensureOpen();
    const a = macroUpdate(1).sectionId;
    const b = 'macro-2026-12-01_10-05-00-000';
    const landed: Promise<void>[] = [];
    for (let rows = 1; rows <= 8; rows++) {
      landed.push(findings.update(macroUpdate(rows, a)), findings.update(macroUpdate(rows, b)));
      if (rows === 4) landed.push(findings.update(profileUpdate()));
      await sleep(rows % 2 ? 0 : 200);
    }
    await Promise.all(landed);
    const text = editor.document.getText();
    for (const id of [a, b]) assert.equal(regionContent(text, id).match(/^\| +\d+ \|/gm)?.length, 8, `all rows of ${id}`);
    assert.ok(text.indexOf(a) < text.indexOf(b));
    assert.ok(regionContent(text, profileUpdate().sectionId).includes('all-reduce'));
  });

  it("a run's first updates show the document, and its preview opens with them already in it", async () => {
    const shown = new FindingsEditor(() => file, silentLogger, { previewBeside: () => true });
    try {
      // What the document held when the preview's tab appeared: the preview renders that first.
      const seen = new Promise<string>((resolve) => {
        const listening = vscode.window.tabGroups.onDidChangeTabs(async (e) => {
          const preview = e.opened.find((t) => t.input instanceof vscode.TabInputCustom && t.input.viewType === 'vscode.markdown.preview.editor');
          if (!preview) return;
          listening.dispose();
          resolve((await vscode.workspace.openTextDocument(vscode.Uri.file(file))).getText());
        });
      });
      // Two sections at once, as a probe sends its header and its environment.
      const updates = [macroUpdate(4), profileUpdate()];
      await Promise.all(updates.map((u) => shown.update(u)));
      const textAtPreview = await seen;
      for (const u of updates) assert.ok(textAtPreview.includes(u.heading), `the preview opened before "${u.heading}" was in the document`);
      const text = vscode.window.visibleTextEditors.find((e) => e.document.uri.fsPath === file);
      assert.ok(text, 'the text of the document is shown too');
      assert.equal(text.viewColumn, vscode.ViewColumn.One);
    } finally {
      shown.dispose();
    }
  });

  it('Insert Result Here puts a chosen table at the cursor', async () => {
    // The extension's own instance reads the tables back from the configured findings document.
    const configured = join(workspaceFolder(), defaultFindingsDocument(workspaceFolder()));
    const before = existsSync(configured) ? readFileSync(configured, 'utf8') : undefined;
    writeFileSync(configured, applyFindingsUpdate(renderSkeleton(basename(configured)), profileUpdate()).text);
    try {
      const doc = await vscode.workspace.openTextDocument({ language: 'markdown', content: '# My report\n\nThe step:\n' });
      const editor = await vscode.window.showTextDocument(doc);
      editor.selection = new vscode.Selection(doc.positionAt(doc.getText().length), doc.positionAt(doc.getText().length));
      const running = vscode.commands.executeCommand('inferenceBench.insertResult');
      await sleep(500);
      await vscode.commands.executeCommand('workbench.action.acceptSelectedQuickOpenItem');
      assert.equal(await running, true);
      assert.match(doc.getText(), /^# My report\n\nThe step:\n\n\*\*Decode step by category\*\*\n\n\| category +\| ms \/ step \| % of step \|\n/);
      assert.match(doc.getText(), /\| idle +\| +1\.10 \| +5\.1 \|\n$/);
    } finally {
      if (before === undefined) rmSync(configured, { force: true });
      else writeFileSync(configured, before);
    }
  });
});
