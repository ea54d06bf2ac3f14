import { Target } from '../config/target';
import { PhaseContext } from './phaseContext';

export type RunnablePhase = 'probe' | 'macro' | 'micro' | 'profile';

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

export const PHASE_ORDER: RunnablePhase[] = ['macro', 'micro', 'profile'];
