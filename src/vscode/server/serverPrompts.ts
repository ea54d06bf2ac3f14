import * as vscode from 'vscode';
import { ServerChangeOptions } from '../../core/server/phaseServer';
import { describePlan, OmittedStep, PlanStep, RunAllRecord } from '../../core/campaign/runAllPlan';
import { pendingServerChanges, ServerChange, ServerContext, ServerProgress, ServerStep } from '../../core/server/serverChange';
import { serverProgressText } from '../../core/server/progressText';
import { consentDetail } from '../../core/server/consentText';

// The server's start-up log and every stop, start and restore, one channel for the whole window.
let channel: vscode.LogOutputChannel | undefined;

export function serverOutputChannel(): vscode.LogOutputChannel {
  channel ??= vscode.window.createOutputChannel('Inference Bench: Server', { log: true });
  return channel;
}

export function disposeServerOutputChannel(): void {
  channel?.dispose();
  channel = undefined;
}

const BUTTON: Record<ServerStep['kind'], string> = {
  stop: 'Stop the Server',
  restart: 'Restart the Server',
  restore: 'Put the Original Back',
};

/** A modal that shows the exact commands and what they change; only the button is a yes. */
export async function confirmServerStep(step: ServerStep): Promise<boolean> {
  const { shown: detail, whole } = consentDetail(step, 'the output "Inference Bench: Server"');
  serverOutputChannel().info(`Asked: ${step.title}\n${whole}`);
  if (detail !== whole) serverOutputChannel().show(true);
  const pick = await vscode.window.showWarningMessage(`Inference Bench: ${step.title}?`, { modal: true, detail }, BUTTON[step.kind]);
  serverOutputChannel().info(pick ? 'Agreed.' : 'Declined: nothing was changed.');
  return pick === BUTTON[step.kind];
}

/** The start-up log into the output channel, and where it stands in the status bar. */
export function serverProgressToChannel(targetName: string): (p: ServerProgress) => void {
  const out = serverOutputChannel();
  let shown = false;
  let status: vscode.Disposable | undefined;
  return (p) => {
    if (!shown) {
      out.show(true);
      shown = true;
    }
    if (p.line !== undefined) {
      out.info(`  | ${p.line}`);
      return;
    }
    const time = p.elapsedS !== undefined ? ` (${p.elapsedS.toFixed(1)} s${p.estimateS ? ` of about ${Math.round(p.estimateS)} s last time` : ''})` : '';
    // The stages read from the log were just written as its lines; the status bar still follows them.
    if (p.stage !== 'weights' && p.stage !== 'cuda_graphs' && p.stage !== 'api') out.info(serverProgressText(p));
    status?.dispose();
    status =
      p.stage === 'ready' || p.stage === 'failed'
        ? undefined
        : vscode.window.setStatusBarMessage(`$(sync~spin) Server on ${targetName}: ${p.stage ?? ''}${time}`);
    if (p.stage === 'ready' || p.stage === 'failed') vscode.window.setStatusBarMessage(`Server on ${targetName}: ${p.stage}`, 5000);
  };
}

/** Consent through the modal, progress into the output channel, Cancel from the run's signal. */
export function vscodeServerOptions(targetName: string, signal?: AbortSignal): ServerChangeOptions {
  return { consent: confirmServerStep, onProgress: serverProgressToChannel(targetName), signal };
}

/**
 * A change of this target's server that an earlier session did not put back (the window closed, the
 * connection dropped mid-restart): offered before the phase runs, with the exact command.
 */
export async function offerPendingRestore(ctx: ServerContext): Promise<void> {
  const pending = pendingServerChanges(ctx.workspace, ctx.target.name)[0];
  if (!pending) return;
  const change = ServerChange.open(ctx, pending.dir);
  const step: ServerStep = {
    ...change.restoreStep(),
    title: `Put the original server back on ${ctx.target.name} (changed for ${pending.record.purpose} and left ${pending.record.state} by an earlier session)`,
  };
  if (!(await confirmServerStep(step))) return;
  try {
    await change.restore(serverProgressToChannel(ctx.target.name));
    void vscode.window.showInformationMessage(`Inference Bench: the original server is back on ${ctx.target.name}.`);
  } catch (err) {
    void vscode.window.showErrorMessage(`Inference Bench: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** Run All Phases' plan in a modal: its steps with their expected times, what is left out and why, the total; one yes. */
export async function confirmRunAllPlan(targetName: string, steps: PlanStep[], omitted: OmittedStep[]): Promise<boolean> {
  const detail = [
    ...describePlan(steps, omitted),
    '',
    'A stop or restart still asks first, with its exact commands. Cancel during a restart puts the original back.',
  ].join('\n');
  serverOutputChannel().info(`Run All Phases on ${targetName}, the plan:\n${detail}`);
  const run = 'Run the Plan';
  const pick = await vscode.window.showInformationMessage(`Inference Bench: Run All Phases on ${targetName}?`, { modal: true, detail }, run);
  serverOutputChannel().info(pick === run ? 'Agreed.' : 'Declined: nothing ran after the probe.');
  return pick === run;
}

export type UnfinishedChoice = 'resume' | 'start over';

/** An earlier Run All on the target that did not finish: go on from its next step, or start over. */
export async function askResumeRunAll(record: RunAllRecord, from: number): Promise<UnfinishedChoice | undefined> {
  const step = record.steps[from];
  const resume = `Resume from Step ${from + 1} (${step.phase})`;
  const over = 'Start Over';
  const detail = [
    `Planned ${record.createdAt.slice(0, 16).replace('T', ' ')} UTC, last step ${record.updatedAt.slice(0, 16).replace('T', ' ')} UTC.`,
    '',
    ...describePlan(record.steps, record.omitted, from),
  ].join('\n');
  const pick = await vscode.window.showInformationMessage(
    `Inference Bench: Run All Phases on ${record.target} stopped before its end (step ${from + 1}, ${step.title}).`,
    { modal: true, detail },
    resume,
    over,
  );
  return pick === resume ? 'resume' : pick === over ? 'start over' : undefined;
}
