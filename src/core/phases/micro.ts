import { Remedy, sayHinted } from '../../shared/remedy';
import { FindingsUpdate, PhaseContext } from '../campaign/phaseContext';
import { MicroOptions, microAgentArgs } from '../micro/options';
import { MicroPoint, microChartData, microHeadline, microTables } from '../micro/tables';
import { RunFolder } from '../runs/runFolder';
import { AgentEvent } from '../../remote/agentProtocol';
import { RunSummary } from '../../shared/results';
import { AgentRunOutcome, runAgentCommand } from './agentRun';
import { recordConfiguration } from './configuration';
import { ClusterCollectivesOutcome, CollectiveOptions, runClusterCollectives } from './collectives';

/** The agent refused because something else holds the GPUs; the front end may ask the user and run again with allowBusy. */
export interface BusyRefusal {
  message: string;
  /** What to do, with its remedies (stop the server, run anyway) as data. */
  hint?: string;
  remedies?: Remedy[];
}

export interface MicroPhaseOutcome {
  run: RunFolder;
  summary: RunSummary;
  points: MicroPoint[];
  agent: AgentRunOutcome<'micro'>;
  busy?: BusyRefusal;
}

// The results view and sidebar at most this often; the findings document less often (each update
// is an edit of the user's document).
const VIEW_UPDATE_MS = 250;
const FINDINGS_UPDATE_MS = 2000;

interface RunContext {
  kernel?: string;
  fallback?: string;
  device?: string;
  /** The agent measured on a CPU (its device's kind, not its name). */
  onCpu?: boolean;
  timing?: string;
  model?: string;
  allreduceNote?: string;
  cluster?: ClusterCollectivesOutcome;
  failures: string[];
  warnings: string[];
}

/**
 * Runs the micro phase on the context's target: GEMMs at the model's shapes, all-reduce at decode
 * sizes and launch overhead, each point turned into run-summary updates (results view, sidebar) and
 * findings tables as it arrives. result.json holds the agent's result with every point.
 * When the GPUs are busy the agent refuses before touching them; the outcome's `busy` says so, and
 * the caller may run again with `allowBusy` once the user consents.
 */
export async function runMicroPhase(ctx: PhaseContext, options: MicroOptions = {}): Promise<MicroPhaseOutcome> {
  // A cluster: the pieces on the head, the collectives across every host (in place of the head's own all-reduce).
  const cluster = ctx.nodes && ctx.nodes.length > 1 ? ctx.nodes : undefined;
  const acrossHosts = cluster !== undefined && !options.skip?.includes('allreduce');
  const headOptions = { ...options, topK: undefined };
  if (cluster) headOptions.skip = [...new Set([...(options.skip ?? []), 'allreduce' as const])];
  const args = microAgentArgs(headOptions, ctx.target.serverUrl);
  const run = RunFolder.create(ctx.workspace, 'micro', ctx.target.name, { ...options, agentArgs: args });
  const points: MicroPoint[] = [];
  const info: RunContext = { failures: [], warnings: [] };
  const summary: RunSummary = {
    id: run.info.id,
    phase: 'micro',
    target: ctx.target.name,
    startedAt: run.info.startedAt,
    status: 'running',
    micro: { points },
  };
  let lastView = 0;
  let lastFindings = 0;

  const publish = (force: boolean) => {
    const now = Date.now();
    if (force || now - lastView >= VIEW_UPDATE_MS) {
      lastView = now;
      summary.micro = { points: [...points], ...microChartData(points, info.device) };
      const headline = microHeadline(points);
      // CPU figures are there to prove the code path; nobody should read them as a GPU's.
      if (headline) summary.headline = info.onCpu ? `CPU only — ${headline}` : headline;
      ctx.sink.runChanged({ ...summary });
    }
    if (force || now - lastFindings >= FINDINGS_UPDATE_MS) {
      lastFindings = now;
      ctx.sink.findings(findingsUpdate(run, summary, points, info, options));
    }
  };

  const onEvent = (event: AgentEvent) => {
    switch (event.type) {
      case 'log': {
        const said = sayHinted(event, ctx.words);
        if (event.level === 'error') info.failures.push(said);
        // The kernel's fallback is said once in the findings from the points themselves.
        else if (event.level === 'warn' && event.topic !== 'gemm_kernel') info.warnings.push(said);
        ctx.log[event.level](`micro: ${said}`);
        break;
      }
      case 'micro.point': {
        const point: MicroPoint = { ...event.point, kind: event.kind };
        points.push(point);
        if (point.kind === 'peak' && typeof point.device === 'string') info.device = point.device;
        if (point.kind === 'peak' && point.device_kind) info.onCpu = point.device_kind === 'cpu';
        if (point.kind === 'gemm' && info.kernel === undefined) {
          info.kernel = String(point.kernel);
          info.fallback = typeof point.fallback_reason === 'string' ? point.fallback_reason : undefined;
        }
        publish(false);
        break;
      }
      case 'error':
        ctx.log.error(`micro on ${ctx.target.name}: ${sayHinted(event, ctx.words)}`);
        break;
      default:
        break;
    }
  };

  ctx.sink.runChanged({ ...summary });
  // Micro measures the GPUs, not the server: the configuration is kept to say what served (or was stopped) meanwhile.
  summary.configuration = await recordConfiguration(ctx, run, ctx.target.serverUrl);
  const agent = await runAgentCommand(ctx.transport, ctx.agent, 'micro', args, run, {
    signal: ctx.signal,
    onEvent,
    leaveOpen: acrossHosts,
    apiKey: ctx.apiKey,
    words: ctx.words,
  });
  if (acrossHosts) {
    let status = agent.status;
    let reason = agent.reason;
    if (agent.status === 'completed') {
      const across = await runClusterCollectives(cluster, run, collectiveOptions(options), {
        log: ctx.log,
        signal: ctx.signal,
        rendezvousAddr: ctx.target.rendezvousAddr,
        serverUrl: ctx.target.serverUrl,
        apiKey: ctx.apiKey,
        words: ctx.words,
        onPoint: (point) => {
          points.push(point);
          publish(false);
        },
      });
      status = across.status;
      reason = across.reason;
      info.cluster = across;
      if (across.status !== 'completed') ctx.log.error(`micro on ${ctx.target.name}: ${across.reason ?? across.status}`);
    }
    agent.status = status;
    agent.reason = reason;
    const clusterResult = info.cluster && { nodes: info.cluster.nodes, plan: info.cluster.plan, master_addr: info.cluster.masterAddr, status, reason };
    run.writeResult({ ...(agent.result ?? { partial: true }), points, cluster: clusterResult });
    run.finish(status, reason);
  }
  const r = agent.result;
  if (r) {
    info.device = r.device?.name ?? info.device;
    if (r.device?.kind) info.onCpu = r.device.kind === 'cpu';
    info.model = r.model?.name;
    info.timing = typeof r.timing === 'string' ? r.timing : undefined;
    info.allreduceNote = r.allreduce?.note ?? undefined;
  } else if (!acrossHosts) {
    // Cancelled, refused or cut off: keep every point that arrived.
    run.writeResult({ points, partial: true, status: agent.status, reason: agent.reason, errors: agent.errors });
  }
  const busyError = agent.errors.find((e) => e.code === 'gpus_busy');
  summary.status = agent.status;
  summary.reason = agent.reason;
  summary.errorCode = agent.errors[0]?.code;
  summary.failure = agent.failure;
  publish(true);
  return { run, summary, points, agent, busy: busyError ? { message: busyError.message, hint: busyError.hint, remedies: busyError.remedies } : undefined };
}

function findingsUpdate(run: RunFolder, summary: RunSummary, points: MicroPoint[], info: RunContext, options: MicroOptions): FindingsUpdate {
  const lines: string[] = [];
  if (summary.headline) lines.push(`**${summary.headline}**`);
  const model = info.model ?? options.model ?? options.config ?? (options.shapes?.length ? 'given shapes' : 'the served model');
  const cpu = info.onCpu === true;
  lines.push(
    `\`${model}\` shapes at TP=${options.tp ?? 1} on ${info.device ?? 'the target'}` +
      `${info.kernel ? `, GEMM kernel ${info.kernel}` : ''}${info.timing ? `; ${info.timing}` : ''}. Run \`${run.info.id}\`.`,
  );
  if (info.fallback) lines.push(`Not the server's kernel: ${info.fallback}.`);
  const cluster = info.cluster;
  if (cluster?.plan) {
    const hosts = cluster.nodes.map((n) => `${n.where} (ranks ${n.rankOffset ?? '?'}–${(n.rankOffset ?? 0) + (n.ranks ?? 1) - 1})`).join(', ');
    lines.push(`Collectives across ${cluster.nodes.length} hosts through torch.distributed (env:// at ${cluster.masterAddr}:${cluster.plan.port}): ${hosts}.`);
  }
  if (cpu) lines.push('⚠ **CPU only**: no GPU was used; these figures show the code path, not GPU performance.');
  for (const w of info.warnings) lines.push(`⚠ ${w}`);
  for (const f of info.failures) lines.push(`✗ ${f}`);
  if (summary.status !== 'running' && summary.status !== 'completed') lines.push(`Run ${summary.status}: ${summary.reason ?? ''}`.trim());
  return {
    sectionId: `micro-${run.info.id}`,
    heading: `Micro-benchmarks — ${summary.target}`,
    lines,
    tables: microTables(points, { kernel: info.kernel, allreduceNote: info.allreduceNote, model: cluster?.plan }),
  };
}

/** The cluster collectives' share of the micro options: the same model, M list and device. */
function collectiveOptions(o: MicroOptions): CollectiveOptions {
  return {
    model: o.model,
    config: o.config,
    m: o.m,
    hidden: o.hidden,
    topK: o.topK,
    device: o.device === 'cpu' ? 'cpu' : o.device?.startsWith('cuda') ? 'cuda' : 'auto',
    backend: o.arBackend,
    localRanks: o.arWorldSize,
    repeats: o.repeats,
    allowBusy: o.allowBusy,
    busyThreshold: o.busyThreshold,
  };
}
