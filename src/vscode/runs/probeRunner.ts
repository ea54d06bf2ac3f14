import { ProbeResult, runProbePhase } from '../../core/phases/probe';
import { RunFolder, runDir } from '../../core/runs/runFolder';
import { TargetState, TargetStates } from '../views/targetState';
import { PhaseRunner } from '../../core/campaign/phaseRunner';

/** What the sidebar shows of a probe: the server, its model, each GPU's memory. */
export function stateFromProbe(r: ProbeResult, probedAt: string): Partial<TargetState> {
  const server = r.server;
  const kind = server.kind === 'vllm' ? 'vLLM' : server.kind === 'sglang' ? 'SGLang' : 'OpenAI-compatible server';
  return {
    serverKind: server.reachable ? kind : 'server not answering',
    simulated: server.reachable && !!server.simulated,
    serverVersion: server.version ?? undefined,
    model: server.models[0]?.id ?? undefined,
    gpus: r.gpus.devices.map((d) => ({ index: d.index, name: d.name, memoryUsedMiB: d.memory_used_mib ?? undefined, memoryTotalMiB: d.memory_total_mib ?? undefined })),
    probedAt,
    detail: r.gpus.available ? undefined : (r.gpus.error ?? 'no GPUs seen'),
  };
}

/** After a reload the sidebar shows each target as its newest stored probe saw it. */
export function restoreProbedStates(workspace: string | undefined, probeRuns: { id: string; target: string; startedAt: string; status: string }[], states: TargetStates): void {
  if (!workspace) return;
  const seen = new Set<string>();
  for (const run of [...probeRuns].sort((a, b) => b.startedAt.localeCompare(a.startedAt))) {
    if (seen.has(run.target) || run.status !== 'completed') continue;
    try {
      const result = RunFolder.open(runDir(workspace, run.id)).readResult<ProbeResult>();
      if (result?.gpus && result.server) {
        states.set(run.target, stateFromProbe(result, run.startedAt));
        seen.add(run.target);
      }
    } catch {
      // a probe folder cut short: the next probe fills the row
    }
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
      const outcome = await runProbePhase(ctx);
      if (outcome.result) states.set(ctx.target.name, stateFromProbe(outcome.result, new Date().toISOString()));
      return outcome.summary;
    },
  };
}
