import * as vscode from 'vscode';
import { RunSummary } from '../../shared/results';
import { RunController } from '../runs/runController';
import { RunnablePhase } from '../../core/campaign/runnablePhase';
import { PhaseRunner, PhaseRunners } from '../runs/phaseRunner';
import { pickTarget } from './pickers';
import { askResumeRunAll, confirmRunAllPlan, offerPendingRestore, UnfinishedChoice } from '../server/serverPrompts';
import { basename } from 'node:path';
import {
  markPhase,
  phasesFrom,
  PlanStepKind,
  planRunAll,
  resumePoint,
  RunAllRecord,
  ServerNeeds,
  serverNeeds,
  unfinished,
} from '../../core/campaign/runAllPlan';
import { pastRuns, readRunAllRecord, writeRunAllRecord } from '../../core/campaign/runAllRecord';
import { Target } from '../../core/config/target';
import { MacroOptions } from '../../core/macro/options';
import { RunFolder, runDir } from '../../core/runs/runFolder';
import { pendingServerChanges } from '../../core/server/serverChange';
import { serverTimes } from '../../core/server/serverTimes';
import { workspaceRoot } from '../settings';
import { MICRO_THEN_PROFILE, MicroServerPlan } from '../runs/microRunner';
import { pickProfiler } from '../runs/profileRunner';
import { ProfilerKind } from '../settings';

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

/**
 * What a caller (a keybinding, a test) can give Run All Phases instead of its questions: the macro
 * workload, the plan's yes, and what to do with an unfinished plan on the target.
 */
export interface RunAllGiven {
  macro?: Record<string, unknown>;
  /** The plan agreed to, as by its button (a stop or restart still asks with its commands). */
  yes?: boolean;
  unfinished?: UnfinishedChoice;
  /** The profiler of the profile step (default: the inferenceBench.profiler setting, asked where it is not set). */
  profiler?: ProfilerKind;
}

/**
 * Run All Phases: probe → macro on the production configuration → micro → profile on one target, as a
 * plan. It asks first which macro workload to run (the Run Macro Phase choices, the last one run on the
 * target first), probes (which changes nothing) to learn whether the GPUs are held and the profiler is
 * on, then shows the plan — the server's stop and restarts only where needed, each step's expected time
 * and the total — and runs it on one yes. The plan is kept under the runs folder, so that the next Run
 * All on the target offers to resume one that was interrupted.
 */
export async function runAllCommand(controller: RunController, phases: PhaseRunners, arg: unknown, given?: RunAllGiven): Promise<void> {
  const target = await pickTarget(arg, 'Run All Phases');
  if (!target) return;
  const workspace = workspaceRoot();
  if (!workspace) {
    void vscode.window.showErrorMessage('Inference Bench: open a folder first. Runs are saved under .inference-bench/runs/ in the workspace folder.');
    return;
  }
  const previous = readRunAllRecord(workspace, target.name);
  if (unfinished(previous)) {
    const from = resumePoint(previous)!;
    const choice = given?.unfinished ?? (await askResumeRunAll(previous, from));
    if (!choice) return;
    if (choice === 'resume') {
      const profiler = await runAllProfiler(target, given);
      if (!profiler) return;
      await vscode.commands.executeCommand('inferenceBench.showResults');
      await controller.showFindings();
      await runPlan(controller, phases, target, workspace, { ...previous, state: 'running' }, from, new AbortController().signal, profiler);
      return;
    }
  }
  // Asked before anything runs, so that the phases then go on without a question between them but the plan's and the server's.
  const macroOptions = given?.macro ? { ...given.macro } : await phases.macro.pickOptions(target, false);
  if (!macroOptions) return;
  const profiler = await runAllProfiler(target, given);
  if (!profiler) return;
  await vscode.commands.executeCommand('inferenceBench.showResults');
  const all = new AbortController();
  // What is there (GPUs, server, model, profiler) decides the plan; a server an earlier session left changed is offered back first.
  const probed = await controller.runPhase(withPendingRestore(phases.probe), target, {}, all.signal, 'step 1 of Run All Phases, to plan the rest');
  // A probe that failed said why; the plan then does not know the GPUs and the profiler, and the phases find out.
  if (!probed || probed.status === 'cancelled') return;
  // Shown once the probe has named it after the model and GPU (before, a fresh campaign's would be findings.md).
  await controller.showFindings();
  let probeResult: unknown;
  try {
    probeResult = RunFolder.open(runDir(workspace, probed.id)).readResult();
  } catch {
    // no result to read: the plan then says the GPUs and the profiler are not known
  }
  const now = new Date().toISOString();
  const planned = planRunAll({
    target: target.name,
    macro: macroOptions as MacroOptions,
    needs: profiler === 'nsys' ? underNsys(serverNeeds(probeResult)) : serverNeeds(probeResult),
    past: pastRuns(workspace, target.name).filter((r) => r.id !== probed.id),
    server: serverTimes(workspace, target.name),
  });
  const record: RunAllRecord = {
    version: 1,
    target: target.name,
    createdAt: now,
    updatedAt: now,
    state: 'running',
    macro: macroOptions as MacroOptions,
    ...planned,
  };
  const marked = markPhase(record, 'probe', probed.status === 'completed' ? 'done' : 'failed', probed.id);
  // The probe has run: its own time, not an estimate.
  const took = Math.max(0, (Date.now() - Date.parse(probed.startedAt)) / 1000);
  const done = { ...marked, steps: marked.steps.map((s) => (s.kind === 'probe' ? { ...s, expectedS: took, basis: 'this probe' } : s)) };
  if (!given?.yes && !(await confirmRunAllPlan(target.name, done.steps, done.omitted))) return;
  writeRunAllRecord(workspace, done);
  await runPlan(controller, phases, target, workspace, done, 1, all.signal, profiler);
}

/** The profile step's profiler: given, else the setting where it is set, else asked; a caller that gives answers (a keybinding, a test) is not asked. */
function runAllProfiler(target: Target, given: RunAllGiven | undefined): Promise<ProfilerKind | undefined> {
  return given?.profiler ? Promise.resolve(given.profiler) : pickProfiler(target, !given, 'Run All Phases');
}

/** The Nsight Systems profile restarts the server under nsys itself (its own consent): the plan needs no restart with the torch profiler. */
function underNsys(needs: ServerNeeds): ServerNeeds {
  return { ...needs, profiler: true, profilerWhy: 'the Nsight Systems profile restarts the server under nsys itself, asking first' };
}

/** The probe (or another phase) offering first to put back a server an earlier session left changed. */
function withPendingRestore(runner: PhaseRunner): PhaseRunner {
  return {
    ...runner,
    async run(ctx, options) {
      await offerPendingRestore(ctx);
      return runner.run(ctx, options);
    },
  };
}

/**
 * Runs the plan's phases from step `from`, keeping the record up to date after each. Stops at the first
 * phase that fails or is cancelled, but micro: its failing (GPUs busy and the stop declined, no
 * PyTorch there) says nothing about the server, so the profile still runs.
 */
async function runPlan(
  controller: RunController,
  phases: PhaseRunners,
  target: Target,
  workspace: string,
  start: RunAllRecord,
  from: number,
  signal: AbortSignal,
  profiler: ProfilerKind,
): Promise<void> {
  let record = start;
  const save = (next: RunAllRecord) => {
    record = next;
    writeRunAllRecord(workspace, record);
  };
  const has = (kind: PlanStepKind) => record.steps.some((s) => s.kind === kind);
  // A server micro left with the profiler on for the profile (a window closed in between still finds it).
  let handedOver = record.serverChange ? pendingChange(workspace, target.name, record.serverChange) : undefined;
  for (const phase of phasesFrom(record, from)) {
    const runner = phase === 'probe' || phase === 'macro' ? withPendingRestore(phases[phase]) : phases[phase];
    const base = phase === 'macro' ? { ...record.macro } : phase === 'probe' ? {} : await runner.pickOptions(target, true);
    if (!base) return;
    const options: Record<string, unknown> = { ...base };
    if (phase === 'profile') options.profiler = profiler;
    if (phase === 'micro' && has('stop')) options.serverPlan = (has('start-profiler') ? 'stop-then-profiler' : 'stop') satisfies MicroServerPlan;
    if (phase === 'profile' && handedOver) options.serverChange = handedOver;
    else if (phase === 'profile' && profiler === 'torch' && (has('restart-profiler') || has('start-profiler'))) options.restartWithProfiler = true;
    save(markPhase(record, phase, 'running'));
    const first = record.steps.findIndex((s) => s.phase === phase);
    const run = await controller.runPhase(runner, target, options, signal, `step ${first + 1} of ${record.steps.length} of Run All Phases`);
    // Micro with a planned stop that was not made (declined, or the server could not be stopped) did not run at all:
    // nothing failed, and the profile still has its server.
    if (!run && phase === 'micro' && options.serverPlan && !signal.aborted) {
      save(markPhase(record, phase, 'skipped'));
      void vscode.window.showWarningMessage(
        `Inference Bench: micro did not run on ${target.name}: the server was not stopped for it (the "Inference Bench: Server" output says why); going on with the profiler.`,
      );
      continue;
    }
    const status = run?.status === 'completed' ? 'done' : run?.status === 'cancelled' || run?.status === 'interrupted' ? 'cancelled' : 'failed';
    save(markPhase(record, phase, status, run?.id));
    if (phase === 'micro') {
      handedOver = pendingServerChanges(workspace, target.name).find((c) => c.record.state === 'changed' && c.record.purpose === MICRO_THEN_PROFILE)?.dir;
      handedOver = handedOver ? basename(handedOver) : undefined;
      if (handedOver) save({ ...record, serverChange: handedOver });
    }
    if (run && run.status === 'failed' && phase === 'micro') {
      void vscode.window.showWarningMessage(`Inference Bench: the micro phase did not complete (${run.reason ?? 'failed'}); going on with the profiler.`);
      continue;
    }
    if (!run || run.status !== 'completed') {
      save({ ...record, state: 'stopped' });
      void vscode.window.showWarningMessage(
        `Inference Bench: Run All Phases stopped after the ${phase} phase (${run?.status ?? 'did not start'}). ${run?.reason ?? ''} Run All Phases again on ${target.name} to resume from there.`.trim(),
      );
      return;
    }
  }
  save({ ...record, state: 'finished' });
  notifyFinished(`all phases finished on ${target.name}.`);
}

/** The change (by its folder's name) if it still waits to be restored. */
function pendingChange(workspace: string, target: string, name: string): string | undefined {
  return pendingServerChanges(workspace, target).some((c) => basename(c.dir) === name && c.record.state === 'changed') ? name : undefined;
}

export async function stopCommand(controller: RunController, arg: unknown): Promise<void> {
  const node = arg as { target?: { name: string } } | undefined;
  const n = controller.stop(node?.target?.name);
  if (!n) void vscode.window.showInformationMessage('Inference Bench: no run is going.');
}
