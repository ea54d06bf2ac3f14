import { PhaseRunner } from './phaseRunner';
import { runClusterProbe } from '../../core/phases/probe';
import { newestProbeStates, stateFromProbe } from '../../core/phases/probeState';
import { TargetStates } from '../views/targetState';

/** After a reload the sidebar shows each target as its newest stored probe saw it. */
export async function restoreProbedStates(
  workspace: string | undefined,
  probeRuns: { id: string; target: string; startedAt: string; status: string }[],
  states: TargetStates,
): Promise<void> {
  if (!workspace) return;
  for (const [target, state] of await newestProbeStates(workspace, probeRuns)) {
    // A probe that finished while the stored ones were read is newer: it keeps its row.
    if (!states.get(target)?.probedAt) states.set(target, state);
  }
}

/**
 * The probe: what is on the target (Python, packages, GPUs and their memory, the server and its
 * model). Its result feeds the sidebar's state rows under the target.
 */
export function probeRunner(states: TargetStates): PhaseRunner {
  return {
    phase: 'probe',
    title: 'Probe (GPUs, server, model)',
    needsGpusFree: false,
    pickOptions: async () => ({}),
    async run(ctx) {
      // A cluster: every host, each under its own name (<cluster>/<host>) in the sidebar.
      const outcomes = await runClusterProbe(ctx);
      for (const o of outcomes) if (o.result) states.set(o.summary.target, stateFromProbe(o.result, new Date().toISOString()));
      return outcomes[0].summary;
    },
  };
}
