// How the extension starts a phase: a quick pick for its options, then core's function for it. A VS Code
// contract, so it lives with the front end; core knows only which phases there are (RunnablePhase).
import { Target } from '../../core/config/target';
import { PhaseContext } from '../../core/campaign/phaseContext';
import { RunnablePhase } from '../../core/campaign/runnablePhase';

/** A phase as the front end starts it: how to ask for its options, and the core function that runs it. */
export interface PhaseRunner {
  phase: RunnablePhase;
  title: string;
  /** Micro-benchmarks need the GPUs to themselves: the user is asked first. */
  needsGpusFree: boolean;
  /** Asks the user for options (a quick pick); undefined when they cancel. `defaults` skips the questions (Run All Phases). */
  pickOptions(target: Target, defaults: boolean): Promise<Record<string, unknown> | undefined>;
  run(ctx: PhaseContext, options: Record<string, unknown>): Promise<unknown>;
}

/** Every phase's runner; the extension's composition root makes them. */
export type PhaseRunners = Record<RunnablePhase, PhaseRunner>;
