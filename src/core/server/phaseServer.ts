import { ServerRecipe } from '../../remote/agentProtocol';
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
  const { change, status } = await ServerChange.adopt(ctx, purpose, {
    profilerDir: options.profilerDir,
    delayIterations: options.delayIterations,
    maxIterations: options.maxIterations,
    signal: options.signal,
  });
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
