import { RunStatus } from './runFolder';

/**
 * Why a run was stopped from outside, handed to the phase as its AbortSignal's reason: Cancel or
 * Ctrl-C is `cancelled`; a signal from elsewhere (SIGTERM from a CI timeout, SIGHUP from a closed
 * terminal) is `interrupted`. A plain abort() counts as the user's cancel.
 */
export class RunStop extends Error {
  constructor(
    readonly status: Extract<RunStatus, 'cancelled' | 'interrupted'>,
    message: string,
  ) {
    super(message);
    this.name = 'RunStop';
  }
}

/** How a run stopped by `signal` is marked, and the words for it (without what was kept). */
export function stopOf(signal: AbortSignal): { status: 'cancelled' | 'interrupted'; message: string } {
  return signal.reason instanceof RunStop ? signal.reason : { status: 'cancelled', message: 'Cancelled by the user' };
}
