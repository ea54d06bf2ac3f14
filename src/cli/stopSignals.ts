import { constants } from 'node:os';
import { RunStop } from '../core/runs/runStop';

// How the CLI takes each signal that ends a run: as cancel (Ctrl-C) or as an interruption from
// elsewhere (a CI timeout's SIGTERM, a closed terminal's SIGHUP). Either way the run is stopped the
// same orderly way: the agent cancelled on the host, the run folder marked, result.json and --out
// written with what was measured; the exit status is then 128 + the signal's number, as a shell
// reports a command killed by it.
const STOPS = {
  SIGINT: new RunStop('cancelled', 'Cancelled by the user (Ctrl-C)'),
  SIGTERM: new RunStop('interrupted', 'Stopped by SIGTERM (a CI timeout, or kill)'),
  SIGHUP: new RunStop('interrupted', 'Stopped by SIGHUP (the terminal was closed)'),
} as const;
type StopSignal = keyof typeof STOPS;

let stoppedBy: StopSignal | undefined;

/** The exit code of a command that returned `code`: 128 + the signal's number when a signal stopped its run. */
export function stopExitCode(code: number): number {
  return stoppedBy && code !== 0 ? 128 + constants.signals[stoppedBy] : code;
}

/**
 * Turns SIGINT, SIGTERM and SIGHUP into `abort` with the matching RunStop, printing `stopping`.
 * A second Ctrl-C quits at once, as the user asked twice. Returns the function that stops listening.
 */
export function onStopSignals(abort: AbortController, stopping: string): () => void {
  const handlers = (Object.keys(STOPS) as StopSignal[]).map((sig) => {
    const handler = () => {
      if (abort.signal.aborted) {
        if (sig === 'SIGINT') process.exit(stopExitCode(1));
        return;
      }
      stoppedBy = sig;
      if (sig === 'SIGHUP') {
        // The terminal is gone: writing to it fails (EIO), which must not end the orderly stop.
        for (const stream of [process.stdout, process.stderr]) stream.on('error', () => undefined);
      }
      process.stderr.write(`\n${STOPS[sig].message}. ${stopping}\n`);
      abort.abort(STOPS[sig]);
    };
    process.on(sig, handler);
    return [sig, handler] as const;
  });
  return () => {
    for (const [sig, handler] of handlers) process.removeListener(sig, handler);
  };
}
