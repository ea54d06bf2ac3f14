/** The phases a front end runs on a target (probe first, then the three measurements). */
export type RunnablePhase = 'probe' | 'macro' | 'micro' | 'profile';

/** The measurement phases in the order Run All Phases runs them. */
export const PHASE_ORDER: RunnablePhase[] = ['macro', 'micro', 'profile'];
