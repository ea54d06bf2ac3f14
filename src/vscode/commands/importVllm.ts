import * as vscode from 'vscode';
import { importVllmBench, ImportError, ImportedMacroResult } from '../../core/compare/vllmBench';
import { RunController } from '../runs/runController';
import { workspaceRoot } from '../settings';

/**
 * Import vllm bench serve Result…: a `--save-result` JSON (or an `--append-result` file) as a macro run
 * of the workspace, as `infbench import-vllm` makes it, shown in the results view: its levels beside
 * ours, and with `--save-detailed` each request on the run's timeline. Returns the new run's id.
 */
export async function importVllmResultCommand(controller: RunController, show: (runId: string) => void, arg?: unknown): Promise<string | undefined> {
  const root = workspaceRoot();
  if (!root) {
    void vscode.window.showErrorMessage(
      'Inference Bench: open a folder first. An imported result becomes a run under .inference-bench/runs/ in the workspace folder.',
    );
    return undefined;
  }
  let file: string | undefined;
  if (arg instanceof vscode.Uri) file = arg.fsPath;
  else if (typeof arg === 'string') file = arg;
  else {
    const picked = await vscode.window.showOpenDialog({
      title: 'Import vllm bench serve Result: a JSON saved with --save-result (and --save-detailed for the timeline)',
      canSelectMany: false,
      openLabel: 'Import',
      filters: { 'vllm bench serve results': ['json', 'jsonl'], 'All files': ['*'] },
      defaultUri: vscode.workspace.workspaceFolders?.[0]?.uri,
    });
    file = picked?.[0]?.fsPath;
  }
  if (!file) return undefined;
  let runId: string;
  let requests: number | undefined;
  try {
    const run = importVllmBench(root, file);
    runId = run.info.id;
    requests = run.readResult<ImportedMacroResult>()?.requests;
  } catch (err) {
    if (!(err instanceof ImportError)) throw err;
    void vscode.window.showErrorMessage(`Inference Bench: ${err.message}`);
    return undefined;
  }
  await controller.refreshRuns();
  show(runId);
  void vscode.window.showInformationMessage(
    requests
      ? `Inference Bench: imported ${requests} requests with their send times; the results view draws them on the run's timeline.`
      : "Inference Bench: imported the levels. For the run's timeline, run vllm bench serve with --save-result --save-detailed.",
  );
  return runId;
}
