import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { RunFolder } from '../core/runs/runFolder';
import { ResultsSnapshot } from '../shared/protocol';
import { MacroLevelSummary, RunSummary } from '../shared/results';
import { addTargetCommand } from './commands/addTarget';
import { findingsDocumentPath, readSettings, workspaceRoot } from './settings';
import { TargetsTreeProvider } from './views/targetsTree';
import { ResultsPanel } from './webview/resultsPanel';

export function activate(context: vscode.ExtensionContext): void {
  const started = Date.now();
  const log = vscode.window.createOutputChannel('Inference Bench', { log: true });
  context.subscriptions.push(log);

  const tree = new TargetsTreeProvider();
  context.subscriptions.push(tree, vscode.window.createTreeView('inferenceBench.targets', { treeDataProvider: tree, showCollapseAll: true }));

  let selectedRunId: string | undefined;
  const snapshot = (): ResultsSnapshot => ({ runs: storedRuns(), selectedRunId });

  context.subscriptions.push(
    vscode.commands.registerCommand('inferenceBench.addTarget', async () => {
      if (await addTargetCommand(log)) tree.refresh();
    }),
    vscode.commands.registerCommand('inferenceBench.openFindings', async () => {
      const file = findingsDocumentPath(readSettings());
      if (!file) {
        void vscode.window.showErrorMessage('Inference Bench: open a folder first; the findings document lives in the workspace folder.');
        return;
      }
      if (!fs.existsSync(file)) fs.writeFileSync(file, `# Findings: ${path.basename(file, '.md')}\n\n## Notes\n\n`);
      await vscode.window.showTextDocument(vscode.Uri.file(file), { preview: false });
    }),
    vscode.commands.registerCommand('inferenceBench.showResults', (runId?: string) => {
      if (typeof runId === 'string') selectedRunId = runId;
      const panel = ResultsPanel.show(context.extensionUri, snapshot, log);
      if (selectedRunId) panel.select(selectedRunId);
    }),
    vscode.commands.registerCommand('inferenceBench.refresh', () => tree.refresh()),
    vscode.window.registerWebviewPanelSerializer(ResultsPanel.viewType, {
      deserializeWebviewPanel: async (panel) => {
        context.subscriptions.push(ResultsPanel.revive(panel, context.extensionUri, snapshot, log));
      },
    }),
  );

  log.info(`Inference Bench activated in ${Date.now() - started} ms`);
}

export function deactivate(): void {
  // Everything is owned by context.subscriptions.
}

/** Runs stored in the workspace, as the results view draws them. */
function storedRuns(): RunSummary[] {
  const root = workspaceRoot();
  if (!root) return [];
  return RunFolder.list(root).map((run) => {
    const info = run.info;
    const summary: RunSummary = { id: info.id, phase: info.phase, target: info.target, startedAt: info.startedAt, status: info.status, reason: info.reason, simulated: info.simulated };
    const result = run.readResult<Record<string, unknown>>();
    if (info.phase === 'macro' && result && Array.isArray(result.levels)) summary.macro = { levels: result.levels as MacroLevelSummary[] };
    return summary;
  });
}
