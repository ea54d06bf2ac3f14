// The micro step in the order Run All Phases' plan gives it: a planned stop comes first, so that micro never
// runs against the GPUs the plan already knows are held (and never leaves a "GPUs are busy" failure of its
// own making in the sidebar and the findings). Pure ordering: the front end supplies the steps.

/** What Run All Phases planned for the server around micro: stop it and start it again, or start it with the profiler. */
export type MicroServerPlan = 'stop' | 'stop-then-profiler';

/** What the user chose when micro found the GPUs busy without a plan. */
export type BusyChoice = 'stop' | 'beside';

export interface MicroSteps<T> {
  /** One micro run; `allowBusy` runs beside a loaded server, sized to the free memory. */
  micro(allowBusy: boolean): Promise<T>;
  /** Whether a micro run was refused because the GPUs are held. */
  refusedBusy(outcome: T): boolean;
  /** Stops the server (with its consent), runs `body`, starts it again as `plan` says; undefined when the stop was declined or failed. */
  withServerStopped(plan: MicroServerPlan, body: () => Promise<T>): Promise<T | undefined>;
  /** Asks what to do about GPUs found busy by a micro run nobody planned a stop for. */
  askBusy(refused: T): Promise<BusyChoice | undefined>;
}

/**
 * Runs micro as planned. With a planned stop: the stop, micro on the freed GPUs, the start — micro
 * itself never meets the server. Without one: micro, and if it finds the GPUs held, what the user chooses.
 * Returns undefined when a planned stop was not made (declined or failed): micro did not run.
 */
export async function runMicroAsPlanned<T>(plan: MicroServerPlan | undefined, steps: MicroSteps<T>): Promise<T | undefined> {
  if (plan) return steps.withServerStopped(plan, () => steps.micro(false));
  const outcome = await steps.micro(false);
  if (!steps.refusedBusy(outcome)) return outcome;
  const choice = await steps.askBusy(outcome);
  if (choice === 'beside') return steps.micro(true);
  if (choice === 'stop') return (await steps.withServerStopped('stop', () => steps.micro(false))) ?? outcome;
  return outcome;
}
