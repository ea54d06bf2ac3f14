import * as vscode from 'vscode';
import { PhaseRunners } from '../runs/phaseRunner';
import { RunController } from '../runs/runController';
import { compareRunsCommand, revealRunCommand } from './runFolderCommands';
import { RunAllGiven, runAllCommand, runPhaseCommand, stopCommand } from './runCommands';
import { pickRun } from './pickers';
import { CompareConfigurationsGiven, compareConfigurationsCommand } from './compareConfigurations';

export interface RunCommandDeps {
  controller: RunController;
  runners: PhaseRunners;
  /** The workspace's memory: the last configurations compared are offered again. */
  state: vscode.Memento;
  showResults(runId?: string, compareRunId?: string): void;
  inspectKernels(runId: string): Promise<void>;
}

/** The palette and sidebar commands that start, stop and inspect runs. */
export function registerRunCommands(deps: RunCommandDeps): vscode.Disposable[] {
  const { controller, runners } = deps;
  return [
    vscode.commands.registerCommand('inferenceBench.runMacro', (arg?: unknown, options?: unknown) => runPhaseCommand(controller, runners.macro, arg, options)),
    vscode.commands.registerCommand('inferenceBench.runMicro', (arg?: unknown, options?: unknown) => runPhaseCommand(controller, runners.micro, arg, options)),
    vscode.commands.registerCommand('inferenceBench.runProfile', (arg?: unknown, options?: unknown) =>
      runPhaseCommand(controller, runners.profile, arg, options),
    ),
    vscode.commands.registerCommand('inferenceBench.probeTarget', (arg?: unknown) => runPhaseCommand(controller, runners.probe, arg, {})),
    vscode.commands.registerCommand('inferenceBench.runAll', (arg?: unknown, given?: RunAllGiven) => runAllCommand(controller, runners, arg, given)),
    vscode.commands.registerCommand('inferenceBench.compareConfigurations', (arg?: unknown, given?: CompareConfigurationsGiven) =>
      compareConfigurationsCommand(controller, runners, deps.state, arg, given),
    ),
    vscode.commands.registerCommand('inferenceBench.stop', (arg?: unknown) => stopCommand(controller, arg)),
    vscode.commands.registerCommand('inferenceBench.revealRun', (arg?: unknown) => revealRunCommand(controller, arg)),
    vscode.commands.registerCommand('inferenceBench.compareRuns', (arg?: unknown) => compareRunsCommand(controller, arg, (a, b) => deps.showResults(a, b))),
    vscode.commands.registerCommand('inferenceBench.inspectKernels', async (arg?: unknown) => {
      const run = await pickRun(
        arg,
        (await controller.refreshRuns()).filter((r) => r.phase === 'profile'),
        'Inspect Kernel Breakdown',
      );
      if (run) await deps.inspectKernels(run.id);
    }),
  ];
}
