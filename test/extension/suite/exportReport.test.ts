import * as assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as vscode from 'vscode';
import { closeAllEditors, workspaceFolder } from '../helpers';
import { reportActions, showReportPreview } from '../../../src/vscode/commands/exportReport';

// The fixture workspace holds one stored macro run; a findings document that quotes it is written here.
const FIXTURE_RUN = '2026-11-30_14-02-11-482-macro';
const DOC = 'report-campaign.md';

describe('Export Campaign Report', () => {
  before(async () => {
    writeFileSync(join(workspaceFolder(), DOC), `# Campaign\n\nNotes <script>alert(1)</script>\n\nRun \`${FIXTURE_RUN}\`.\n`);
    await vscode.workspace.getConfiguration('inferenceBench').update('findingsDocument', DOC, vscode.ConfigurationTarget.Workspace);
  });

  after(async () => {
    await vscode.workspace.getConfiguration('inferenceBench').update('findingsDocument', undefined, vscode.ConfigurationTarget.Workspace);
    for (const f of [DOC, 'report-campaign.html']) rmSync(join(workspaceFolder(), f), { force: true });
    await closeAllEditors();
  });

  it('writes the findings document as the editor shows it, with the runs it quotes, beside it as HTML', async () => {
    const doc = await vscode.workspace.openTextDocument(join(workspaceFolder(), DOC));
    await vscode.window.showTextDocument(doc);
    // Typing not yet saved is in the report: it reports what the user reads.
    const edit = new vscode.WorkspaceEdit();
    edit.insert(doc.uri, new vscode.Position(1, 0), '\nUnsaved line.\n');
    assert.ok(await vscode.workspace.applyEdit(edit));
    const out = await vscode.commands.executeCommand<string | undefined>('inferenceBench.exportReport');
    assert.equal(out, join(workspaceFolder(), 'report-campaign.html'));
    assert.ok(existsSync(out!));
    const html = readFileSync(out!, 'utf8');
    assert.ok(html.includes('Unsaved line.'));
    assert.ok(html.includes('&lt;script&gt;alert(1)&lt;/script&gt;'), "the document's HTML is shown, not run");
    assert.match(html, new RegExp(`<td><code>${FIXTURE_RUN}</code></td><td>macro</td>`));
    assert.ok(doc.isDirty, 'the user’s unsaved text stays unsaved');
    await vscode.commands.executeCommand('workbench.action.revertAndCloseActiveEditor');
  });

  it('opens the report in an editor tab where a browser cannot reach the file (code-server), charts included, under a nonce policy', async () => {
    const out = await vscode.commands.executeCommand<string | undefined>('inferenceBench.exportReport');
    assert.ok(out);
    // In a browser the file:// link of "Open in Browser" points at the server's disk: it is not offered there.
    if (vscode.env.uiKind === vscode.UIKind.Web) assert.deepEqual(reportActions(), ['Open Preview', 'Reveal in Explorer']);
    else assert.ok(reportActions().includes('Open Preview'));
    const panel = showReportPreview(out);
    try {
      assert.ok(panel.visible);
      const html = panel.webview.html;
      assert.match(html, /style-src 'nonce-[A-Za-z0-9+/=]+'/);
      assert.ok(!html.includes('unsafe-inline'));
      assert.match(html, /<svg[^>]*aria-label="Output throughput \(tok\/s\) against load"/);
      assert.ok(!/<script/.test(html));
    } finally {
      panel.dispose();
    }
  });
});
