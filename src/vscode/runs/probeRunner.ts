import { runProbePhase } from '../../core/phases/probe';
import { TargetStates } from '../views/targetState';
import { PhaseRunner } from './phases';

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
      const r = outcome.result;
      if (r) {
        const server = r.server;
        states.set(ctx.target.name, {
          serverKind: server.reachable ? `${server.kind === 'vllm' ? 'vLLM' : server.kind === 'sglang' ? 'SGLang' : 'server'}${server.version ? ` ${server.version}` : ''}${server.simulated ? ' (simulator)' : ''}` : 'server not answering',
          model: server.models[0]?.id ?? undefined,
          gpus: r.gpus.devices.map((d) => ({ index: d.index, name: d.name, memoryUsedMiB: d.memory_used_mib ?? undefined, memoryTotalMiB: d.memory_total_mib ?? undefined })),
          probedAt: new Date().toISOString(),
          detail: r.gpus.available ? undefined : r.gpus.error ?? 'no GPUs seen',
        });
      }
      return outcome.summary;
    },
  };
}
