import { FindingsUpdate, PhaseContext } from '../campaign/phaseContext';
import { describeTarget } from '../config/target';
import { campaignUpdateForTargets, ProbeInfo } from '../findings/skeleton';
import { RunFolder } from '../runs/runFolder';
import { RunSummary } from '../../shared/results';
import { sayHinted } from '../../shared/remedy';
import { AgentRunOutcome, runAgentCommand } from './agentRun';
import { agentOptionArgs } from '../../remote/agentOptionArgs';
import { ProbeResult } from '../../remote/agentProtocol';
import { apiKeyState, gpuTable, networkLine, probeView, serverName } from '../probe/tables';

// What agent/infbench_agent/probe/command.py reports (its `probe` and `result` events), as events.py defines it.
export type { ProbeResult } from '../../remote/agentProtocol';

export interface ProbePhaseOutcome {
  run: RunFolder;
  summary: RunSummary;
  result?: ProbeResult;
  agent: AgentRunOutcome<'probe'>;
}

/**
 * Asks the agent on the target what is there: Python and packages, GPUs and who holds them, and
 * the server at the target's URL. The result lands in the run folder, the sidebar (runChanged) and
 * the findings document (an Environment section).
 */
export async function runProbePhase(ctx: PhaseContext, options: { url?: string; timeoutS?: number; node?: boolean } = {}): Promise<ProbePhaseOutcome> {
  const url = options.url ?? ctx.target.serverUrl;
  const args = agentOptionArgs('probe', { url, timeout: options.timeoutS || undefined });
  const run = RunFolder.create(ctx.workspace, 'probe', ctx.target.name, { url, agentArgs: args });
  const summary: RunSummary = { id: run.info.id, phase: 'probe', target: ctx.target.name, startedAt: run.info.startedAt, status: 'running' };
  ctx.sink.runChanged({ ...summary });
  const agent = await runAgentCommand(ctx.transport, ctx.agent, 'probe', args, run, {
    signal: ctx.signal,
    apiKey: ctx.apiKey,
    words: ctx.words,
    onEvent: (event) => {
      if (event.type === 'log') ctx.log[event.level](`probe: ${sayHinted(event, ctx.words)}`);
    },
  });
  const result = agent.result;
  summary.status = agent.status;
  summary.reason = agent.reason;
  summary.errorCode = agent.errors[0]?.code;
  summary.failure = agent.failure;
  if (result) {
    summary.headline = probeHeadline(result);
    summary.probe = probeView(result);
    if (result.server.simulated) {
      summary.simulated = true;
      run.update({ simulated: true });
    }
    // The document's header (target, hardware, model, server) comes from the newest probe of a target's head.
    if (!options.node)
      ctx.sink.findings(campaignHeader(ctx.workspace, ctx.target.name, probeInfoFrom(result, `${ctx.target.name} (${describeTarget(ctx.target)})`)));
    ctx.sink.findings(probeFindings(ctx.target.name, run, result));
  }
  ctx.sink.runChanged({ ...summary });
  return { run, summary, result, agent };
}

/**
 * Probes every host of a cluster, the head first, each over its own connection and in its own run
 * (target `<cluster>/<host>` for the others): GPUs, who holds them, topology and network per host.
 * Only the head's probe sets the findings document's header; the server is reached from the head.
 */
export async function runClusterProbe(ctx: PhaseContext, options: { timeoutS?: number } = {}): Promise<ProbePhaseOutcome[]> {
  const [head, ...others] = ctx.nodes ?? [];
  const outcomes = [await runProbePhase({ ...ctx, nodes: undefined }, options)];
  if (!head) return outcomes;
  for (const node of others) {
    if (ctx.signal?.aborted) break;
    outcomes.push(
      await runProbePhase({ ...ctx, target: node.target, transport: node.transport, agent: node.agent, nodes: undefined }, { ...options, node: true }),
    );
  }
  return outcomes;
}

/** "vLLM 0.13.0 · Qwen/Qwen3-8B · 8× NVIDIA H200, 3 busy" */
export function probeHeadline(r: ProbeResult): string {
  const parts: string[] = [];
  const s = r.server;
  if (!s.reachable) parts.push('server not answering');
  else parts.push([serverName(r), s.models[0]?.id].filter(Boolean).join(' · '));
  const gpus = r.gpus.devices;
  if (gpus.length) {
    const busy = new Set(r.gpus.processes.map((p) => p.gpu_index)).size;
    parts.push(`${gpus.length}× ${gpus[0].name}${busy ? `, ${busy} in use` : ''}`);
  } else parts.push('no GPU seen');
  return parts.join(' · ');
}

function probeFindings(targetName: string, run: RunFolder, r: ProbeResult): FindingsUpdate {
  const s = r.server;
  const lines = [
    `${probeHeadline(r)}. Probed ${run.info.startedAt} on target "${targetName}" (host ${r.host}); run \`${run.info.id}\`.`,
    s.simulated ? 'The server is the inference-bench SIMULATOR, not a real model.' : '',
    s.reachable && s.profiler.enabled === false ? `Profiler: not enabled — ${s.profiler.evidence}.` : '',
    s.reachable && s.profiler.kind === 'cuda' ? `Profiler: vLLM's CUDA profiler — ${s.profiler.evidence}.` : '',
    apiKeyState(s) ? `API key: ${apiKeyState(s)}` : '',
  ].filter(Boolean);
  const network = networkLine(r);
  if (network) lines.push(network);
  return { sectionId: `probe-${targetName}`, heading: `Environment: ${targetName}`, lines, tables: r.gpus.devices.length ? [gpuTable(r)] : [] };
}

/**
 * The findings header: this probe's target, and every other target the workspace holds a completed
 * probe of (its newest), by name; a cluster's other hosts (`<cluster>/<host>`) are not targets.
 */
function campaignHeader(workspace: string, targetName: string, info: ProbeInfo): FindingsUpdate {
  const byTarget = new Map<string, ProbeInfo>([[targetName, info]]);
  // RunFolder.list gives the newest first: the first probe met of a target is its newest.
  for (const run of RunFolder.list(workspace)) {
    const name = run.info.target;
    if (run.info.phase !== 'probe' || run.info.status !== 'completed' || byTarget.has(name) || name.includes('/')) continue;
    const result = run.readResult<ProbeResult>();
    if (result?.server && result.gpus) byTarget.set(name, probeInfoFrom(result, `${name} (host ${result.host})`));
  }
  return campaignUpdateForTargets([...byTarget.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([, p]) => p));
}

/** The findings document's header lines from what the probe found. */
export function probeInfoFrom(result: ProbeResult, target: string): ProbeInfo {
  const gpus = result.gpus.devices;
  const gib = (mib: number | null) => (mib === null ? '' : ` ${Math.round(mib / 1024)} GiB`);
  const hardware = gpus.length
    ? `${gpus.length}× ${gpus[0].name}${gib(gpus[0].memory_total_mib)}, driver ${gpus[0].driver_version}`
    : `no GPU seen on ${result.host} (${result.gpus.error ?? 'nvidia-smi found nothing'})`;
  const model = result.server.models[0]?.id ?? undefined;
  const server = result.server.reachable ? `${serverName(result)} at ${result.server.url}` : `not answering at ${result.server.url}`;
  return { target, hardware, model: model ?? undefined, server };
}
