import { readFile } from 'node:fs/promises';
import { resultPath, runDir } from '../runs/runFolder';
import { ProbeResult } from './probe';

/** One GPU as the probe saw it. */
export interface GpuState {
  index: number;
  name: string;
  memoryUsedMiB?: number;
  memoryTotalMiB?: number;
}

/** What a target's newest probe found, as the sidebar shows it under the target (its connection's state is the connection manager's). */
export interface TargetState {
  /** What the probe could not see (no GPUs, say). */
  detail?: string;
  /** vLLM, SGLang, or another OpenAI-compatible server; "server not answering" when it did not. */
  serverKind?: string;
  /** The server is the project's simulator. */
  simulated?: boolean;
  serverVersion?: string;
  model?: string;
  gpus?: GpuState[];
  probedAt?: string;
  /** The server wants an API key that the probe did not have. */
  needsApiKey?: boolean;
  /** Set while the server does not answer its health check: why, in words. */
  serverDown?: string;
}

/** What the sidebar shows of a probe: the server, its model, each GPU's memory. */
export function stateFromProbe(r: ProbeResult, probedAt: string): Partial<TargetState> {
  const server = r.server;
  const kind = server.kind === 'vllm' ? 'vLLM' : server.kind === 'sglang' ? 'SGLang' : 'OpenAI-compatible server';
  return {
    serverKind: server.reachable ? kind : 'server not answering',
    simulated: server.reachable && !!server.simulated,
    serverVersion: server.version ?? undefined,
    model: server.models[0]?.id ?? undefined,
    gpus: r.gpus.devices.map((d) => ({
      index: d.index,
      name: d.name,
      memoryUsedMiB: d.memory_used_mib ?? undefined,
      memoryTotalMiB: d.memory_total_mib ?? undefined,
    })),
    probedAt,
    detail: r.gpus.available ? undefined : (r.gpus.error ?? 'no GPUs seen'),
    needsApiKey: server.reachable && !!server.auth?.required && !server.auth.key_accepted,
    serverDown: server.reachable ? undefined : (server.error ?? `nothing answers at ${server.url}`),
  };
}

/** Each target's state from its newest completed probe among the stored runs (read without blocking), for the sidebar after a reload. */
export async function newestProbeStates(
  workspace: string,
  probeRuns: { id: string; target: string; startedAt: string; status: string }[],
): Promise<Map<string, Partial<TargetState>>> {
  const states = new Map<string, Partial<TargetState>>();
  for (const run of [...probeRuns].sort((a, b) => b.startedAt.localeCompare(a.startedAt))) {
    if (states.has(run.target) || run.status !== 'completed') continue;
    try {
      const result = JSON.parse(await readFile(resultPath(runDir(workspace, run.id)), 'utf8')) as ProbeResult;
      if (result?.gpus && result.server) states.set(run.target, stateFromProbe(result, run.startedAt));
    } catch {
      // a probe folder cut short: the next probe fills the row
    }
  }
  return states;
}
