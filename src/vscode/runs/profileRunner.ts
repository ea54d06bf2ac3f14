import { join } from 'node:path';
import * as vscode from 'vscode';
import { ProfileOptions, runProfilePhase } from '../../core/phases/profile';
import { readSettings } from '../settings';
import { PhaseRunner } from './phaseRunner';
import { PhaseContext } from '../../core/campaign/phaseContext';
import { STEADY_CAPTURE, withProfilerServer } from '../../core/server/phaseServer';
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
    if (defaults) return { ...WORKLOADS[0].options };
    const picked = await vscode.window.showQuickPick(
      WORKLOADS.map((w) => ({ ...w, description: '' })),
      {
        title: `Run Profiler Phase on ${target.name}`,
        placeHolder: `The server at ${target.serverUrl} must run with its profiler enabled (vLLM: --profiler-config)`,
        matchOnDetail: true,
        ignoreFocusOut: true,
      },
    );
    return picked ? { ...picked.options } : undefined;
  },
  async run(ctx, given) {
    // Run All Phases: `serverChange`, the change (its folder's name) micro left with the profiler on (profiled, then the original put
    // back); `restartWithProfiler`, the restart already agreed in the plan (its consent still shows the commands).
    const { serverChange, restartWithProfiler, ...options } = given as { serverChange?: string; restartWithProfiler?: boolean };
    const profileOptions = { ...(options as ProfileOptions), analysis: readSettings().traceAnalysis };
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

/** Profiles the server micro left running with the profiler, then puts the original back whatever the profile did. */
async function profileThenRestore(ctx: PhaseContext, name: string, options: ProfileOptions): Promise<unknown> {
  try {
    return (await runProfilePhase(ctx, options)).summary;
  } finally {
    try {
      await ServerChange.open(ctx, join(serverChangesRoot(ctx.workspace), name)).restore(serverProgressToChannel(ctx.target.name));
    } catch (err) {
      serverOutputChannel().error(err instanceof Error ? err.message : String(err));
      void vscode.window.showErrorMessage(`Inference Bench: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
}
