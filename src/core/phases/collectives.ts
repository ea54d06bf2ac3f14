import { RemedyWords, sayHinted } from '../../shared/remedy';
import { NodeConnection } from '../campaign/phaseContext';
import { Logger } from '../log';
import { MicroPoint } from '../micro/tables';
import { RunFolder, RunStatus } from '../runs/runFolder';
import { RunStop } from '../runs/runStop';
import { CollectivePlan, CollectiveSize } from '../../remote/agentProtocol';
import { agentOptionArgs } from '../../remote/agentOptionArgs';
import { AgentRunOutcome, runAgentCommand } from './agentRun';

export type { NodeConnection } from '../campaign/phaseContext';

export interface CollectiveOptions {
  model?: string;
  config?: string;
  /** Token counts M of a decode step the messages are sized for. */
  m?: number[];
  /** Hidden size and experts per token when no model is given. */
  hidden?: number;
  topK?: number;
  /** cpu runs gloo on every host (no GPU needed); auto uses the GPUs when every host has them. */
  device?: 'auto' | 'cpu' | 'cuda';
  backend?: 'auto' | 'nccl' | 'gloo';
  /** Processes per host (default: one per GPU; 2 on a CPU). */
  localRanks?: number;
  /** The user consented to run beside whatever holds a host's GPUs. */
  allowBusy?: boolean;
  busyThreshold?: number;
  repeats?: number;
}

/** How one host's part of the cluster run ended. */
export interface NodeOutcome {
  name: string;
  where: string;
  status: RunStatus;
  reason?: string;
  /** The first of its global ranks and how many it ran. */
  rankOffset?: number;
  ranks?: number;
}

export interface ClusterCollectivesOutcome {
  status: RunStatus;
  reason?: string;
  points: MicroPoint[];
  plan?: CollectivePlan;
  masterAddr?: string;
  nodes: NodeOutcome[];
}

// After the first host fails, the others get this long to say why before they are stopped: a rank
// that died is seen first on its own host, its peers elsewhere only lose the connection.
const FAILURE_GRACE_MS = 3000;

/**
 * All-reduce and all-to-all across the hosts of a cluster, through torch.distributed's own env://
 * rendezvous: the agent on each host (over that host's SSH connection) starts its ranks, the first
 * host holds the TCPStore. First every host says how many ranks it runs (`collective --plan`), then
 * the head sizes the messages for the whole world and picks the rendezvous port, then every host runs
 * at once. Cancel, a dropped connection or a host that fails stops every host; the outcome says which
 * host failed and why. Each host's events go to `nodes/<host>/` in the run folder.
 */
export async function runClusterCollectives(
  nodes: NodeConnection[],
  run: RunFolder,
  options: CollectiveOptions,
  hooks: {
    log: Logger;
    signal?: AbortSignal;
    rendezvousAddr?: string;
    serverUrl?: string;
    apiKey?: string;
    words?: RemedyWords;
    onPoint?: (point: MicroPoint) => void;
  },
): Promise<ClusterCollectivesOutcome> {
  const outcome: ClusterCollectivesOutcome = {
    status: 'running',
    points: [],
    nodes: nodes.map((n) => ({ name: n.target.name, where: n.transport.label, status: 'running' })),
  };
  const fail = (status: RunStatus, reason: string) => ({ ...outcome, status, reason });
  const modelArgs = agentOptionArgs('collective', {
    model: options.model || undefined,
    config: options.config || undefined,
    serverUrl: !options.model && !options.config && !options.hidden ? hooks.serverUrl : undefined,
    hidden: options.hidden || undefined,
    topK: options.topK || undefined,
    m: options.m?.length ? options.m.join(',') : undefined,
  });
  const deviceArgs = agentOptionArgs('collective', {
    device: options.device && options.device !== 'auto' ? options.device : undefined,
    localRanks: options.localRanks || undefined,
    allowBusy: options.allowBusy,
    busyThreshold: options.busyThreshold,
  });
  const logs = nodes.map((n, i) => run.nodeLog(`${i}-${n.target.host ?? n.target.name}`));

  // 1. What each host runs: its ranks and device.
  const counted = await Promise.all(
    nodes.map((n, i) =>
      runAgentCommand(n.transport, n.agent, 'collective', [...agentOptionArgs('collective', { plan: true, worldSize: 0 }), ...deviceArgs], logs[i], {
        signal: hooks.signal,
        words: hooks.words,
        leaveOpen: true,
      }),
    ),
  );
  const bad = counted.findIndex((c) => c.status !== 'completed' || !c.result?.plan);
  if (bad >= 0) {
    outcome.nodes[bad] = { ...outcome.nodes[bad], status: counted[bad].status, reason: counted[bad].reason };
    return fail(counted[bad].status === 'completed' ? 'failed' : counted[bad].status, `${nodes[bad].transport.label}: ${counted[bad].reason ?? 'no plan'}`);
  }
  const plans = counted.map((c) => c.result!.plan!);
  const world = plans.reduce((acc, p) => acc + p.local_ranks, 0);
  const allGpu = plans.every((p) => p.device === 'cuda');
  const device = options.device === 'cuda' || (options.device !== 'cpu' && allGpu) ? 'cuda' : 'cpu';
  if (device === 'cuda' && !allGpu) {
    const cpu = nodes.filter((_, i) => plans[i].device !== 'cuda').map((n) => n.transport.label);
    return fail('failed', `--device cuda, but ${cpu.join(', ')} show no GPU (nvidia-smi). Run with --device cpu for gloo on every host.`);
  }
  const backend = options.backend && options.backend !== 'auto' ? options.backend : device === 'cuda' ? 'nccl' : 'gloo';
  if (device === 'cpu' && options.device !== 'cpu' && plans.some((p) => p.device === 'cuda'))
    hooks.log.info('collectives: not every host has a GPU, so gloo on the CPUs runs everywhere.');

  // 2. The whole world's message sizes and the rendezvous port, on the head.
  const head = await runAgentCommand(
    nodes[0].transport,
    nodes[0].agent,
    'collective',
    [...agentOptionArgs('collective', { plan: true }), ...modelArgs, ...deviceArgs, ...agentOptionArgs('collective', { worldSize: world })],
    logs[0],
    {
      signal: hooks.signal,
      words: hooks.words,
      apiKey: hooks.apiKey,
      leaveOpen: true,
    },
  );
  const plan = head.result?.plan;
  if (head.status !== 'completed' || !plan)
    return fail(head.status === 'completed' ? 'failed' : head.status, `${nodes[0].transport.label}: ${head.reason ?? 'no plan'}`);
  outcome.plan = plan;
  const masterAddr = hooks.rendezvousAddr ?? plan.addr ?? (nodes.every((n) => n.target.kind === 'local') ? '127.0.0.1' : undefined);
  if (!masterAddr)
    return fail(
      'failed',
      `The address the other nodes reach ${nodes[0].transport.label} by is unknown (its SSH session shows none, as inside a container). Set the target's "rendezvousAddr" to the head's address on the cluster network.`,
    );
  outcome.masterAddr = masterAddr;
  hooks.log.info(`collectives: ${world} ranks on ${nodes.length} hosts (${backend} on ${device}), rendezvous at ${masterAddr}:${plan.port}.`);

  // 3. Every host at once. One host failing stops the others (their ranks would wait in a collective).
  const stopAll = new AbortController();
  const onUserStop = () => stopAll.abort(hooks.signal!.reason);
  if (hooks.signal?.aborted) onUserStop();
  hooks.signal?.addEventListener('abort', onUserStop, { once: true });
  let failedFirst: number | undefined;
  const stoppedByUs = new Set<number>();
  let graceTimer: NodeJS.Timeout | undefined;
  let offset = 0;
  const runs = nodes.map((n, i) => {
    const rankOffset = offset;
    offset += plans[i].local_ranks;
    outcome.nodes[i] = { ...outcome.nodes[i], rankOffset, ranks: plans[i].local_ranks };
    const args = agentOptionArgs('collective', {
      worldSize: world,
      nodeRank: i,
      rankOffset,
      localRanks: plans[i].local_ranks,
      masterAddr,
      masterPort: plan.port,
      device,
      backend,
      repeats: options.repeats ?? 5,
      arSizes: plan.allreduce.map((s) => s.bytes).join(','),
      a2aSizes: plan.alltoall.map((s) => s.bytes).join(','),
      ops: plan.alltoall.length ? undefined : 'allreduce',
    });
    return runAgentCommand(n.transport, n.agent, 'collective', args, logs[i], {
      signal: stopAll.signal,
      words: hooks.words,
      leaveOpen: true,
      onEvent: (event) => {
        if (event.type === 'micro.point' && (event.kind === 'allreduce' || event.kind === 'alltoall')) {
          const point = decodePoint(event.kind, event.point, plan);
          outcome.points.push(point);
          hooks.onPoint?.(point);
        } else if (event.type === 'log') hooks.log[event.level](`collectives on ${n.transport.label}: ${sayHinted(event, hooks.words)}`);
      },
    }).then((r: AgentRunOutcome<'collective'>) => {
      if (r.status !== 'completed' && failedFirst === undefined && !stopAll.signal.aborted) {
        failedFirst = i;
        graceTimer = setTimeout(() => stopAll.abort(new RunStop('interrupted', `Stopped because ${n.transport.label} failed`)), FAILURE_GRACE_MS);
      }
      // Ended once every host was being stopped: whatever it says, it did not fail first.
      if (stopAll.signal.aborted) stoppedByUs.add(i);
      return r;
    });
  });
  const results = await Promise.all(runs);
  clearTimeout(graceTimer);
  hooks.signal?.removeEventListener('abort', onUserStop);
  results.forEach((r, i) => (outcome.nodes[i] = { ...outcome.nodes[i], status: r.status, reason: r.reason }));

  if (hooks.signal?.aborted) {
    const stop = results.find((r) => r.status === 'cancelled' || r.status === 'interrupted');
    return fail(stop?.status ?? 'cancelled', `${stop?.reason ?? 'Cancelled'}`);
  }
  if (results.every((r) => r.status === 'completed')) return { ...outcome, status: 'completed' };
  // The cause first: a host whose rank died, then one whose connection went, then one that failed for
  // a reason of its own; hosts whose ranks only lost their peers elsewhere come last.
  const lostPeer = (r: AgentRunOutcome) => r.errors.length > 0 && r.errors.every((e) => e.code === 'collective_failed');
  const rank = (r: AgentRunOutcome, i: number) =>
    r.errors.some((e) => e.code === 'rank_died') ? 0 : stoppedByUs.has(i) ? 3 : r.status === 'interrupted' ? 1 : lostPeer(r) ? 3 : 2;
  const order = results.map((r, i) => ({ r, i })).filter(({ r }) => r.status !== 'completed');
  order.sort((a, b) => rank(a.r, a.i) - rank(b.r, b.i) || (a.i === failedFirst ? -1 : b.i === failedFirst ? 1 : a.i - b.i));
  const cause = order[0].i;
  const others = results.map((r, i) => ({ r, i })).filter(({ r, i }) => i !== cause && r.status !== 'completed');
  const r = results[cause];
  return fail(
    r.status,
    `${nodes[cause].transport.label} failed: ${r.reason ?? 'no reason given'}` +
      (others.length ? ` The ranks on ${others.map(({ i }) => nodes[i].transport.label).join(', ')} were stopped with it.` : ''),
  );
}

/** A collective's point with the decode M its size stands for (several M can share one all-to-all size). */
export function decodePoint(kind: 'allreduce' | 'alltoall', point: Record<string, unknown>, plan: CollectivePlan): MicroPoint {
  const sizes: CollectiveSize[] = kind === 'allreduce' ? plan.allreduce : plan.alltoall;
  const ms = sizes.filter((s) => s.bytes === Number(point.bytes)).map((s) => s.m);
  return { ...point, kind, source: ms.length ? 'decode' : 'sweep', m: ms[0] ?? null, decode_m: ms };
}
