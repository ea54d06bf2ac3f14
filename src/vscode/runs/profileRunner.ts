import { join } from 'node:path';
import * as vscode from 'vscode';
import { ProfileOptions, runProfilePhase } from '../../core/phases/profile';
import { ProfilerKind, readSettings } from '../settings';
import { PhaseRunner } from './phaseRunner';
import { PhaseContext } from '../../core/campaign/phaseContext';
import { STEADY_CAPTURE, withNsysServer, withProfilerServer } from '../../core/server/phaseServer';
import { Target } from '../../core/config/target';
import { ServerChange, serverChangesRoot, ServerControlError } from '../../core/server/serverChange';
import { offerPendingRestore, serverOutputChannel, serverProgressToChannel, vscodeServerOptions } from '../server/serverPrompts';

// SGLang takes the capture's bounds at /start_profile (a vLLM restarted with the profiler, in its configuration).
const STEADY = { delaySteps: STEADY_CAPTURE.skipSteps, numSteps: STEADY_CAPTURE.steps };
const STEADY_NOTE = `SGLang, and a vLLM restarted with the profiler, record steps ${STEADY_CAPTURE.skipSteps + 1}-${STEADY_CAPTURE.skipSteps + STEADY_CAPTURE.steps} only`;

const WORKLOADS = [
  {
    label: 'Decode batch of 4',
    detail: `4 requests decoding at once, 48 tokens each (about 48 decode steps profiled; ${STEADY_NOTE})`,
    options: { concurrency: 4, outputLen: 48, ...STEADY },
  },
  {
    label: 'Single stream',
    detail: 'one request, 48 tokens: the decode step that single-stream tok/s measures',
    options: { concurrency: 1, outputLen: 48, ...STEADY },
  },
  { label: 'Decode batch of 32', detail: '32 requests decoding at once, 48 tokens each', options: { concurrency: 32, outputLen: 48, ...STEADY } },
];

const PROFILERS: (vscode.QuickPickItem & { profiler: ProfilerKind })[] = [
  {
    label: 'Torch profiler',
    detail: "the server's own torch profiler (/start_profile, /stop_profile): the decode step by kernel category, per rank",
    profiler: 'torch',
  },
  {
    label: 'Nsight Systems (layers and modules inside CUDA graphs)',
    detail:
      'restarts the server under nsys (asks first, showing the exact command; the original is put back): the decode step by layer and module, beside the kernel categories',
    profiler: 'nsys',
  },
];

/**
 * Which profiler a profile run uses: the inferenceBench.profiler setting where the user set it, else
 * asked (the setting's default first). `ask: false` takes the setting's value without asking.
 */
export async function pickProfiler(target: Target, ask = true, title = `Run Profiler Phase on ${target.name}`): Promise<ProfilerKind | undefined> {
  const settings = readSettings();
  if (settings.profilerSet || !ask) return settings.profiler;
  const items = [...PROFILERS].sort((a, b) => (a.profiler === settings.profiler ? -1 : b.profiler === settings.profiler ? 1 : 0));
  const picked = await vscode.window.showQuickPick(items, {
    title: `${title}: which profiler`,
    placeHolder: 'Set inferenceBench.profiler to stop being asked',
    matchOnDetail: true,
    ignoreFocusOut: true,
  });
  return picked?.profiler;
}

/** A restart with the profiler: traces in a fresh folder on the host, the capture bounded as STEADY_CAPTURE says. */
export const STEADY_RESTART = { profilerDir: 'auto', delayIterations: STEADY_CAPTURE.skipSteps, maxIterations: STEADY_CAPTURE.steps };

/**
 * The profiler phase: the server's torch profiler around a short decode workload, the per-rank
 * traces fetched into the run folder and broken down in worker threads.
 */
export const profileRunner: PhaseRunner = {
  phase: 'profile',
  title: 'Profiler phase (decode step breakdown)',
  needsGpusFree: false,
  async pickOptions(target, defaults) {
    if (defaults) return { ...WORKLOADS[0].options, profiler: readSettings().profiler };
    const picked = await vscode.window.showQuickPick(
      WORKLOADS.map((w) => ({ ...w, description: '' })),
      {
        title: `Run Profiler Phase on ${target.name}`,
        placeHolder: `The server at ${target.serverUrl} must run with its profiler enabled (vLLM: --profiler-config)`,
        matchOnDetail: true,
        ignoreFocusOut: true,
      },
    );
    if (!picked) return undefined;
    const profiler = await pickProfiler(target);
    return profiler ? { ...picked.options, profiler } : undefined;
  },
  async run(ctx, given) {
    // Run All Phases: `serverChange`, the change (its folder's name) micro left with the profiler on (profiled, then the original put
    // back); `restartWithProfiler`, the restart already agreed in the plan (its consent still shows the commands).
    const { serverChange, restartWithProfiler, profiler, ...options } = given as {
      serverChange?: string;
      restartWithProfiler?: boolean;
      profiler?: ProfilerKind;
    };
    const profileOptions = { ...(options as ProfileOptions), analysis: readSettings().traceAnalysis };
    if (profiler === 'nsys') return profileUnderNsys(ctx, profileOptions, serverChange);
    if (serverChange) return profileThenRestore(ctx, serverChange, profileOptions);
    await offerPendingRestore(ctx);
    const outcome = await runProfilePhase(ctx, profileOptions);
    if (outcome.summary.errorCode !== 'profiler_disabled' || ctx.signal?.aborted) return outcome.summary;
    const restart = 'Restart With the Profiler';
    const pick = restartWithProfiler
      ? restart
      : await vscode.window.showWarningMessage(
          `Inference Bench: the server on ${ctx.target.name} runs without its profiler. ${outcome.summary.reason ?? ''} Restart it with the profiler for this run? The original is put back afterwards, also on failure or Cancel.`,
          { modal: true },
          restart,
        );
    if (pick !== restart) return outcome.summary;
    try {
      const options = { ...vscodeServerOptions(ctx.target.name, ctx.signal), ...STEADY_RESTART };
      return (await withProfilerServer(ctx, 'profile', options, () => runProfilePhase(ctx, profileOptions))).value.summary;
    } catch (err) {
      if (!(err instanceof ServerControlError)) throw err;
      serverOutputChannel().error(err.message);
      if (err.code !== 'declined') void vscode.window.showErrorMessage(`Inference Bench: ${err.message}`);
      return outcome.summary;
    }
  },
};

/**
 * The Nsight Systems profile: the server restarted under nsys after the same consent as a restart with
 * the profiler (the exact command shown), profiled, stopped so that nsys writes its report, and the
 * original put back. A server micro left with the torch profiler (Run All Phases) is put back first.
 */
async function profileUnderNsys(ctx: PhaseContext, options: ProfileOptions, handedOver?: string): Promise<unknown> {
  if (handedOver) await restore(ctx, handedOver);
  else await offerPendingRestore(ctx);
  try {
    const serverOptions = { ...vscodeServerOptions(ctx.target.name, ctx.signal), nsys: ctx.target.nsys };
    return (await withNsysServer(ctx, 'profile', serverOptions, (server) => runProfilePhase(ctx, { ...options, nsys: server }))).value.summary;
  } catch (err) {
    if (!(err instanceof ServerControlError)) throw err;
    serverOutputChannel().error(err.message);
    if (err.code === 'no_nsys') void showNsysMissing(ctx.target, err.message);
    else if (err.code !== 'declined') void vscode.window.showErrorMessage(`Inference Bench: ${err.message}`);
    return undefined;
  }
}

/** No nsys on the host (or its importer lacks libraries): the agent's words, and the target's nsys path one click away. */
async function showNsysMissing(target: Target, message: string): Promise<void> {
  const edit = 'Set the nsys Path…';
  const torch = 'Use the Torch Profiler';
  const pick = await vscode.window.showErrorMessage(`Inference Bench: ${message}`, edit, torch);
  if (pick === edit) await vscode.commands.executeCommand('inferenceBench.editTarget', target.name);
  if (pick === torch) await vscode.commands.executeCommand('inferenceBench.runProfile', target.name, { ...WORKLOADS[0].options, profiler: 'torch' });
}

async function restore(ctx: PhaseContext, name: string): Promise<void> {
  try {
    await ServerChange.open(ctx, join(serverChangesRoot(ctx.workspace), name)).restore(serverProgressToChannel(ctx.target.name));
  } catch (err) {
    serverOutputChannel().error(err instanceof Error ? err.message : String(err));
    void vscode.window.showErrorMessage(`Inference Bench: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** Profiles the server micro left running with the profiler, then puts the original back whatever the profile did. */
async function profileThenRestore(ctx: PhaseContext, name: string, options: ProfileOptions): Promise<unknown> {
  try {
    return (await runProfilePhase(ctx, options)).summary;
  } finally {
    await restore(ctx, name);
  }
}
