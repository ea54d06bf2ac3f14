import * as vscode from 'vscode';
import { RunSummary } from '../../shared/results';
import { RunController } from '../runs/runController';
import { PHASE_ORDER, RunnablePhase } from '../../core/campaign/runnablePhase';
import { PhaseRunner, PhaseRunners } from '../runs/phaseRunner';
import { pickTarget } from './pickers';
import { showRunAllPlan } from '../server/serverPrompts';

const PHASE_TITLES: Record<RunnablePhase, string> = {
  probe: 'Probe Target',
  macro: 'Run Macro Phase',
  micro: 'Run Micro Phase',
  profile: 'Run Profiler Phase',
};

/**
 * Run one phase on a target: options from a quick pick (or given as the command's second argument,
 * for keybindings and tests), then the run controller takes over.
 */
export async function runPhaseCommand(controller: RunController, runner: PhaseRunner, arg: unknown, given?: unknown): Promise<RunSummary | undefined> {
  const phase = runner.phase;
  const target = await pickTarget(arg, PHASE_TITLES[phase]);
  if (!target) return undefined;
  if (runner.needsGpusFree && !(await confirmGpusFree(runner.title, target.name))) return undefined;
  const options =
    given && typeof given === 'object' && !Array.isArray(given) ? { ...(given as Record<string, unknown>) } : await runner.pickOptions(target, false);
  if (!options) return undefined;
  // The probe only feeds the sidebar and the findings header; the phases bring the results up beside the findings.
  if (phase !== 'probe') {
    await controller.showFindings();
    await vscode.commands.executeCommand('inferenceBench.showResults');
  }
  const run = await controller.runPhase(runner, target, options);
  if (run?.status === 'completed' && phase !== 'probe')
    notifyFinished(`${runner.title} on ${target.name} finished${run.headline ? `: ${run.headline}` : ''}.`, run.id);
  return run;
}

/** A phase that ended well says so with its headline, and where to look (a failure has its own message). */
function notifyFinished(message: string, runId?: string): void {
  void vscode.window.showInformationMessage(`Inference Bench: ${message}`, 'Open Results', 'Open Findings').then((pick) => {
    if (pick === 'Open Results') void vscode.commands.executeCommand('inferenceBench.showResults', runId);
    if (pick === 'Open Findings') void vscode.commands.executeCommand('inferenceBench.openFindings');
  });
}

async function confirmGpusFree(title: string, targetName: string): Promise<boolean> {
  const pick = await vscode.window.showWarningMessage(
    `${title} needs the GPUs of ${targetName} to itself: a running inference server holds their memory and would skew the timings. Stop the server (or make sure it is idle) before going on.`,
    { modal: true },
    'The GPUs are free, go on',
  );
  return pick !== undefined;
}

/** What a caller (a keybinding, a test) can give Run All Phases instead of its questions: the macro workload. */
export interface RunAllGiven {
  macro?: Record<string, unknown>;
}

/**
 * Run All Phases: macro → micro → profiler on one target, asking first which macro workload to run
 * (the Run Macro Phase choices, the one last run on the target first; Escape runs none) and before
 * the phase that needs the GPUs free; the other phases take their defaults. Stops at the first phase
 * that fails or is cancelled.
 */
export async function runAllCommand(controller: RunController, phases: PhaseRunners, arg: unknown, given?: RunAllGiven): Promise<void> {
  const target = await pickTarget(arg, 'Run All Phases');
  if (!target) return;
  const runners = PHASE_ORDER.map((p) => phases[p]);
  // Asked before anything runs, so that the phases then go on without a question between them but the GPUs'.
  const macroOptions = given?.macro ? { ...given.macro } : await phases.macro.pickOptions(target, false);
  if (!macroOptions) return;
  showRunAllPlan(target.name);
  await vscode.commands.executeCommand('inferenceBench.showResults');
  const all = new AbortController();
  // What is there first (GPUs, server, model): the sidebar and the findings header show it.
  const steps = runners.length + 1;
  const step = (n: number) => `step ${n} of ${steps} of Run All Phases`;
  const probed = await controller.runPhase(phases.probe, target, {}, all.signal, step(1));
  if (probed?.status === 'cancelled') return;
  // Shown once the probe has named it after the model and GPU (before, a fresh campaign's would be findings.md).
  await controller.showFindings();
  for (const [i, runner] of runners.entries()) {
    if (runner.needsGpusFree && !(await confirmGpusFree(`${runner.title} (next in Run All Phases)`, target.name))) {
      void vscode.window.showInformationMessage(`Inference Bench: skipped the ${runner.phase} phase; going on with the rest.`);
      continue;
    }
    const options = runner.phase === 'macro' ? macroOptions : await runner.pickOptions(target, true);
    if (!options) return;
    const run = await controller.runPhase(runner, target, options, all.signal, step(i + 2));
    // Micro failing (GPUs busy and the user declined, no PyTorch there) says nothing about the server: the profiler can still run.
    if (run && run.status === 'failed' && runner.phase === 'micro') {
      void vscode.window.showWarningMessage(`Inference Bench: the micro phase did not complete (${run.reason ?? 'failed'}); going on with the profiler.`);
      continue;
    }
    if (!run || run.status !== 'completed') {
      void vscode.window.showWarningMessage(
        `Inference Bench: Run All Phases stopped after the ${runner.phase} phase (${run?.status ?? 'did not start'}). ${run?.reason ?? ''}`.trim(),
      );
      return;
    }
  }
  notifyFinished(`all phases finished on ${target.name}.`);
}

export async function stopCommand(controller: RunController, arg: unknown): Promise<void> {
  const node = arg as { target?: { name: string } } | undefined;
  const n = controller.stop(node?.target?.name);
  if (!n) void vscode.window.showInformationMessage('Inference Bench: no run is going.');
}
