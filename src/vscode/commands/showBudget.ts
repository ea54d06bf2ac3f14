import * as vscode from 'vscode';
import { budgetViewForWorkspace } from '../../core/explain/campaign';
import { hasResults, RunSummary } from '../../shared/results';
import { workspaceRoot } from '../settings';
import { pickTarget } from './pickers';

export interface ShowBudgetDeps {
  /** Every run, newest first. */
  runs(): RunSummary[];
  /** Opens the results view at a run, scrolled to its target's decode-step budget. */
  showBudgetOf(runId: string): void;
}

/**
 * "Show Decode-Step Budget": the results view at "Where the milliseconds go" for a target (the one
 * clicked in the sidebar, the only one, or the one picked). The view shows the budget of the run it
 * shows, so it opens at the target's newest measured run. Without the runs a budget needs, says
 * which to run and offers Run All Phases. Returns the run the view opened at.
 */
export async function showBudgetCommand(deps: ShowBudgetDeps, arg?: unknown): Promise<string | undefined> {
  const target = await pickTarget(arg, 'Decode-step budget of which target?');
  if (!target) return undefined;
  const root = workspaceRoot();
  const budget = root ? budgetViewForWorkspace(root, target.name) : undefined;
  const run = deps.runs().find((r) => r.target === target.name && r.phase !== 'probe' && r.status !== 'running' && hasResults(r));
  if (!root || !budget?.bars.length || !run) {
    void vscode.window
      .showInformationMessage(
        `Inference Bench: no decode-step budget for ${target.name} yet. It is built from the target's macro, micro and profile runs (a macro run is enough to begin); Run All Phases measures all three.`,
        'Run All Phases',
      )
      .then((pick) => pick && vscode.commands.executeCommand('inferenceBench.runAll', target.name));
    return undefined;
  }
  deps.showBudgetOf(run.id);
  return run.id;
}
