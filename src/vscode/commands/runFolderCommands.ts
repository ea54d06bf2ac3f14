import * as vscode from 'vscode';
import { hasResults } from '../../shared/results';
import { RunController } from '../runs/runController';
import { runDir } from '../../core/runs/runFolder';
import { workspaceRoot } from '../settings';
import { pickRun } from './pickers';

/** Reveal Run Folder: the run's folder in the Explorer (event log, result, traces). */
export async function revealRunCommand(controller: RunController, arg: unknown): Promise<void> {
  const root = workspaceRoot();
  const run = await pickRun(arg, await controller.refreshRuns(), 'Reveal Run Folder');
  if (!run || !root) return;
  const uri = vscode.Uri.file(runDir(root, run.id));
  await vscode.commands.executeCommand('revealInExplorer', uri);
}

/** Compare With…: overlay another run of the same phase on the results view. */
export async function compareRunsCommand(controller: RunController, arg: unknown, show: (runId: string, compareRunId: string) => void): Promise<void> {
  // A run that kept nothing has nothing to set beside another.
  const runs = (await controller.refreshRuns()).filter(hasResults);
  const first = await pickRun(arg, runs, 'Compare: first run');
  if (!first) return;
  const others = runs.filter((r) => r.phase === first.phase && r.id !== first.id);
  if (!others.length) {
    void vscode.window.showInformationMessage(
      `Inference Bench: there is no other ${first.phase} run to compare with. Run the ${first.phase} phase again, then compare.`,
    );
    return;
  }
  const second = await pickRun(undefined, others, `Compare ${first.phase} run with…`);
  if (second) show(first.id, second.id);
}
