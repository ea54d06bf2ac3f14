import { join } from 'node:path';
import { ServerRecipe } from '../../remote/agentProtocol';
import { outputTarget, recipeDifferences } from './recipe';
import { NsysServer } from '../phases/profileNsys';
import { Consent, ServerChange, ServerContext, ServerControlError, ServerProgress } from './serverChange';

export interface ServerChangeOptions {
  consent: Consent;
  onProgress?: (p: ServerProgress) => void;
  /** Cancels the phase and a start in progress; the original is put back whatever it says. */
  signal?: AbortSignal;
}

export interface ProfilerRestartOptions extends ServerChangeOptions {
  /** Where the restarted server writes traces; `auto` is a fresh folder in the agent's cache on the host. */
  profilerDir: string;
  /** vLLM: engine steps skipped after /start_profile, and the most recorded (a bounded, steady-state capture). */
  delayIterations?: number;
  maxIterations?: number;
}

/**
 * The extension's bounded, steady-state capture: the batch's prefill and first decode steps skipped,
 * then at most this many steps recorded (vLLM: delay_iterations and max_iterations in the restarted
 * server's --profiler-config; SGLang: the profile's --delay-steps and --num-steps).
 */
export const STEADY_CAPTURE = { skipSteps: 8, steps: 32 } as const;

/** What a phase ran with the server changed, and the change's record (its folder holds every step). */
export interface WithServerOutcome<T> {
  value: T;
  change: ServerChange;
}

/**
 * "Stop the server, run micro, start it again": adopts the running server, asks, stops it by its
 * identity, runs `body`, and starts the original again — also when `body` fails or is cancelled.
 */
export async function withServerStopped<T>(
  ctx: ServerContext,
  purpose: string,
  options: ServerChangeOptions,
  body: () => Promise<T>,
): Promise<WithServerOutcome<T>> {
  const { change } = await ServerChange.adopt(ctx, purpose, { signal: options.signal });
  if (!(await options.consent(change.stopStep()))) throw new ServerControlError('The server was left running: the stop was not agreed to.', 'declined');
  // A stop cut off half-way (Cancel, a lost connection) is restored too.
  try {
    await change.stop(options.onProgress);
    return { value: await body(), change };
  } finally {
    await change.restore(options.onProgress);
  }
}

/** Adopts the running server with its recipe as it would run with the profiler on, bounded as `options` say. */
function adoptWithProfiler(ctx: ServerContext, purpose: string, options: ProfilerRestartOptions) {
  const { profilerDir, delayIterations, maxIterations, signal } = options;
  return ServerChange.adopt(ctx, purpose, { profilerDir, delayIterations, maxIterations, signal });
}

/**
 * "Restart with the profiler": adopts the running server and its recipe with the profiler on for its
 * version, asks, restarts it so, runs `body`, then puts the original back. A start that fails or is
 * cancelled puts the original back at once and throws with the server's own words.
 */
export async function withProfilerServer<T>(
  ctx: ServerContext,
  purpose: string,
  options: ProfilerRestartOptions,
  body: (running: ServerRecipe) => Promise<T>,
): Promise<WithServerOutcome<T>> {
  const { change, status } = await adoptWithProfiler(ctx, purpose, options);
  const changed = status.profiler_recipe;
  if (!changed) throw new ServerControlError(`The server's recipe on ${ctx.target.name} could not be given a profiler.`, 'no_recipe');
  if (!(await options.consent(change.restartStep(changed, status.estimate_s))))
    throw new ServerControlError('The server was left as it was: the restart was not agreed to.', 'declined');
  try {
    await change.stop(options.onProgress);
    const started = await change.start(changed, { signal: options.signal, onProgress: options.onProgress });
    if (options.signal?.aborted) throw new ServerControlError('Cancelled during the restart.', 'cancelled');
    return { value: await body(started.recipe ?? changed), change };
  } finally {
    await change.restore(options.onProgress);
  }
}

/** What micro ran with the server stopped, and whether the server now runs with the profiler for the profile run. */
export interface HandedOverOutcome<T> extends WithServerOutcome<T> {
  /** The change is left open (state `changed`): the profile run profiles this server, then restores the original. */
  handedOver: boolean;
}

/**
 * "Stop the server, run micro, then start it with the profiler" (Run All Phases when micro needs the
 * GPUs and the profile needs the profiler): one start instead of two, since a start is the long part
 * (36 minutes for the seed campaign's model). One consent shows both commands. After `body` the
 * server is started with the profiler and the change left open for the profile run, which restores
 * the original; Cancel, a failure of `body`, or a profiler start that fails puts the original back.
 */
export async function withServerStoppedThenProfiler<T>(
  ctx: ServerContext,
  purpose: string,
  options: ProfilerRestartOptions,
  body: () => Promise<T>,
): Promise<HandedOverOutcome<T>> {
  const { change, status } = await adoptWithProfiler(ctx, purpose, options);
  const changed = status.profiler_recipe ?? undefined;
  const stop = change.stopStep();
  const step = changed
    ? {
        ...stop,
        title: `Stop the server on ${ctx.target.name} (pid ${change.record.original.identity?.pid ?? '?'}) for micro, then start it with the profiler for the profile`,
        commands: [
          stop.commands[0],
          change.startCommand(changed),
          `after the profile, and on Cancel or a failure: ${change.startCommand(change.record.original)}`,
        ],
        changes: [
          'the server does not answer while micro runs',
          ...recipeDifferences(change.record.original, changed).map((d) => `the server started after micro ${d}`),
          `the server started after micro: ${outputTarget(changed)}`,
          ...change.originalInWords(),
          `its original recipe is kept in ${join(change.dir, 'original-recipe.json')}`,
        ],
        estimateS: status.estimate_s,
      }
    : stop;
  if (!(await options.consent(step))) throw new ServerControlError('The server was left running: the stop was not agreed to.', 'declined');
  let handedOver = false;
  try {
    await change.stop(options.onProgress);
    const value = await body();
    if (changed && !options.signal?.aborted) {
      try {
        await change.start(changed, { signal: options.signal, onProgress: options.onProgress });
        handedOver = !options.signal?.aborted;
      } catch (err) {
        // Micro's numbers stand; the profile run then finds the profiler off and asks as it would alone.
        ctx.log.warn(
          `The server on ${ctx.target.name} did not start with the profiler (${err instanceof Error ? err.message : String(err)}); the original is put back.`,
        );
      }
    }
    return { value, change, handedOver };
  } finally {
    if (!handedOver) await change.restore(options.onProgress);
  }
}

export interface NsysRestartOptions extends ServerChangeOptions {
  /** The target's nsys; `auto` (the default) lets the agent find one on the host. */
  nsys?: string;
}

/**
 * "Restart under Nsight Systems": adopts the running server and its recipe under `nsys profile` (the
 * agent finds nsys on the host and says how to get it where it is absent), asks with the exact command,
 * restarts it so, runs `body`, then stops it by the identity it started with (nsys writes its report as
 * the server exits) and puts the original back — also when `body` fails or is cancelled.
 */
export async function withNsysServer<T>(
  ctx: ServerContext,
  purpose: string,
  options: NsysRestartOptions,
  body: (server: NsysServer) => Promise<T>,
): Promise<WithServerOutcome<T>> {
  const { change, status } = await ServerChange.adopt(ctx, purpose, { nsys: options.nsys ?? 'auto', signal: options.signal });
  const changed = status.nsys_recipe as (ServerRecipe & { nsys_report?: string }) | undefined;
  if (!changed?.nsys_report)
    throw new ServerControlError(
      `Nsight Systems cannot profile the server on ${ctx.target.name}: ${typeof status.nsys_advice === 'string' ? status.nsys_advice : 'the agent gave no recipe under nsys.'}`,
      'no_nsys',
    );
  const step = change.restartStep(changed, status.estimate_s);
  const words = Array.isArray(status.nsys_change) ? (status.nsys_change as string[]) : [];
  step.changes.push(...words.filter((w) => !w.startsWith('command: ')).map((w) => `under nsys: ${w}`));
  if (!(await options.consent(step))) throw new ServerControlError('The server was left as it was: the restart under nsys was not agreed to.', 'declined');
  let done = false;
  const stop = async () => {
    if (done) return;
    done = true;
    try {
      // The server under nsys, by the identity it started with: a restore alone would find its child listening and leave it.
      if (change.record.state === 'changed') await change.stop(options.onProgress);
    } finally {
      await change.restore(options.onProgress);
    }
  };
  try {
    await change.stop(options.onProgress);
    const started = await change.start(changed, { signal: options.signal, onProgress: options.onProgress });
    if (options.signal?.aborted) throw new ServerControlError('Cancelled during the restart.', 'cancelled');
    const running = started.recipe ?? changed;
    return { value: await body({ running, report: changed.nsys_report, nsys: changed.argv[0], stop }), change };
  } finally {
    await stop();
  }
}
