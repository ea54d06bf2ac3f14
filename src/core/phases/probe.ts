import { FindingsUpdate, PhaseContext } from '../campaign/phaseContext';
import { describeTarget } from '../config/target';
import { campaignUpdate, ProbeInfo } from '../findings/skeleton';
import { RunFolder } from '../runs/runFolder';
import { RunSummary } from '../../shared/results';
import { ResultTable } from '../../shared/table';
import { AgentRunOutcome, runAgentCommand } from './agentRun';
import { ProbeResult } from '../../remote/agentProtocol';

// What agent/infbench_agent/probe.py reports (its `probe` and `result` events), as events.py defines it.
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
  const args = ['--url', url, ...(options.timeoutS ? ['--timeout', String(options.timeoutS)] : [])];
  const run = RunFolder.create(ctx.workspace, 'probe', ctx.target.name, { url, agentArgs: args });
  const summary: RunSummary = { id: run.info.id, phase: 'probe', target: ctx.target.name, startedAt: run.info.startedAt, status: 'running' };
  ctx.sink.runChanged({ ...summary });
  const agent = await runAgentCommand(ctx.transport, ctx.agent, 'probe', args, run, {
    signal: ctx.signal,
    apiKey: ctx.apiKey,
    onEvent: (event) => {
      if (event.type === 'log') ctx.log[event.level](`probe: ${event.message}`);
    },
  });
  const result = agent.result;
  summary.status = agent.status;
  summary.reason = agent.reason;
  if (result) {
    summary.headline = probeHeadline(result);
    if (result.server.simulated) {
      summary.simulated = true;
      run.update({ simulated: true });
    }
    // The document's header (target, hardware, model, server) comes from the newest probe of a target's head.
    if (!options.node) ctx.sink.findings(campaignUpdate(probeInfoFrom(result, `${ctx.target.name} (${describeTarget(ctx.target)})`)));
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

export function serverName(r: ProbeResult): string {
  const s = r.server;
  const kind = s.kind === 'vllm' ? 'vLLM' : s.kind === 'sglang' ? 'SGLang' : 'unknown server';
  return `${s.simulated ? 'SIMULATOR (vLLM API)' : kind}${s.version && !s.simulated ? ` ${s.version}` : ''}`;
}

const mib = (v: number | null) => (v === null ? null : v / 1024);

export function gpuTable(r: ProbeResult): ResultTable {
  return {
    id: 'probe-gpus',
    title: 'GPUs',
    columns: [
      { key: 'index', label: 'GPU', digits: 0 },
      { key: 'name', label: 'Name', align: 'left' },
      { key: 'used', label: 'Memory used (GiB)', digits: 1 },
      { key: 'total', label: 'Total (GiB)', digits: 1 },
      { key: 'util', label: 'Util (%)', digits: 0 },
      { key: 'procs', label: 'Processes', align: 'left' },
    ],
    rows: r.gpus.devices.map((d) => ({
      index: d.index,
      name: d.name,
      used: mib(d.memory_used_mib),
      total: mib(d.memory_total_mib),
      util: d.utilization_pct,
      procs:
        r.gpus.processes
          .filter((p) => p.gpu_index === d.index)
          .map((p) => `${p.process_name} (pid ${p.pid}, ${((p.used_memory_mib ?? 0) / 1024).toFixed(1)} GiB)`)
          .join(', ') || '—',
    })),
    note: r.gpus.available ? `driver ${r.gpus.devices[0]?.driver_version ?? '?'}` : (r.gpus.error ?? undefined),
  };
}

/** Readable lines for the terminal and the findings document: the facts, then what to do about problems. */
export function probeSummaryLines(r: ProbeResult): string[] {
  const s = r.server;
  const lines: string[] = [];
  lines.push(`Host ${r.host} · Python ${r.python.version} (${r.python.executable})`);
  const pkgs = Object.entries(r.packages)
    .map(([name, v]) => `${name} ${v ?? '—'}`)
    .join(', ');
  lines.push(`Packages: ${pkgs}`);
  if (!s.reachable) {
    lines.push(`Server: ${s.error ?? `nothing answers at ${s.url}`}`);
  } else {
    lines.push(`Server: ${serverName(r)} at ${s.url}${s.healthy === false ? ' (health check failed)' : ''}${s.kind_evidence ? ` — ${s.kind_evidence}` : ''}`);
    if (s.auth?.required) lines.push(`  API key: ${s.error ?? 'this server wants an API key'}`);
    for (const m of s.models) lines.push(`  model ${m.id}${m.max_model_len ? `, max_model_len ${m.max_model_len}` : ''}`);
    const p = s.profiler;
    lines.push(
      `  profiler: ${p.enabled === true ? (p.kind === 'cuda' ? 'CUDA profiler (no torch traces)' : 'enabled') : p.enabled === false ? 'NOT enabled' : 'unknown'}${p.evidence ? ` (${p.evidence})` : ''}`,
    );
    if (s.parallel)
      lines.push(
        `  parallel: tp ${s.parallel.tp} × pp ${s.parallel.pp} × dp ${s.parallel.dp}${s.parallel.dp_attention ? ' (DP attention)' : ''}: ${s.parallel.ranks} rank(s) write traces`,
      );
  }
  if (s.command_line) lines.push(`  command (pid ${s.pid}): ${s.command_line.join(' ')}`);
  if (!r.gpus.available) lines.push(`GPUs: ${r.gpus.error}`);
  else {
    for (const d of r.gpus.devices) {
      const procs = r.gpus.processes.filter((p) => p.gpu_index === d.index);
      lines.push(
        `GPU ${d.index}: ${d.name}, ${fmtGiB(d.memory_used_mib)} / ${fmtGiB(d.memory_total_mib)} GiB used, ${d.utilization_pct ?? '?'}% busy${procs.length ? ` — ${procs.map((p) => `${p.process_name} pid ${p.pid}`).join(', ')}` : ''}`,
      );
    }
  }
  const network = networkLine(r);
  if (network) lines.push(network);
  return lines;
}

/** The links NCCL would take to other hosts: RDMA ports first (its default when present), else the socket interfaces. */
export function networkLine(r: ProbeResult): string | undefined {
  const n = r.network;
  if (!n) return undefined;
  const rdma = n.rdma.map((p) => `${p.device}:${p.port} ${p.state ?? '?'}${p.rate ? ` ${p.rate}` : ''}${p.link_layer ? ` (${p.link_layer})` : ''}`);
  const sockets = n.interfaces
    .filter((i) => i.nccl_default && i.state === 'up')
    .map((i) => `${i.name}${i.speed_mbps ? ` ${i.speed_mbps >= 1000 ? `${i.speed_mbps / 1000} Gb/s` : `${i.speed_mbps} Mb/s`}` : ''}`);
  const env = Object.entries(n.env).map(([k, v]) => `${k}=${v}`);
  return `Network: ${rdma.length ? `RDMA ${rdma.join(', ')}` : 'no RDMA device (NCCL uses sockets between hosts)'}; interfaces up: ${sockets.join(', ') || 'none'}${env.length ? `; ${env.join(' ')}` : ''}`;
}

function fmtGiB(v: number | null): string {
  return v === null ? '?' : (v / 1024).toFixed(1);
}

function probeFindings(targetName: string, run: RunFolder, r: ProbeResult): FindingsUpdate {
  const s = r.server;
  const lines = [
    `${probeHeadline(r)}. Probed ${run.info.startedAt} on target "${targetName}" (host ${r.host}); run \`${run.info.id}\`.`,
    s.simulated ? 'The server is the inference-bench SIMULATOR, not a real model.' : '',
    s.reachable && s.profiler.enabled === false ? `Profiler: not enabled — ${s.profiler.evidence}.` : '',
    s.reachable && s.profiler.kind === 'cuda' ? `Profiler: vLLM's CUDA profiler — ${s.profiler.evidence}.` : '',
    s.auth?.required ? `API key: ${s.error ?? 'the server wants an API key'}` : '',
  ].filter(Boolean);
  const network = networkLine(r);
  if (network) lines.push(network);
  return { sectionId: `probe-${targetName}`, heading: `Environment: ${targetName}`, lines, tables: r.gpus.devices.length ? [gpuTable(r)] : [] };
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
