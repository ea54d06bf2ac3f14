import { clusterNodes, isCluster, Target } from '../config/target';
import { Logger } from '../log';
import { DeployedAgent } from '../../remote/agentDeploy';
import { Transport } from '../../remote/transport';
import { FindingsUpdate } from '../findings/findingsUpdate';
import type { RunnablePhase } from './runnablePhase';
import { RunConfiguration, RunSummary } from '../../shared/results';
import type { RemedyWords } from '../../shared/remedy';

/**
 * Where a phase's results go as they arrive: the results view and sidebar (runChanged), and the
 * findings document (findings). The VS Code front end and the CLI each provide one.
 */
export interface ResultSink {
  runChanged(run: RunSummary): void;
  findings(update: FindingsUpdate): void;
}

/** Everything a phase needs to run on one target. */
export interface PhaseContext {
  target: Target;
  transport: Transport;
  agent: DeployedAgent;
  /** The workspace folder; runs go under `.inference-bench/runs/` in it. */
  workspace: string;
  sink: ResultSink;
  log: Logger;
  signal?: AbortSignal;
  /** Every host of a cluster target, the head (this context's transport) first; absent for one host. */
  nodes?: NodeConnection[];
  /**
   * The server's API key (a server started with --api-key), for every phase: handed to the agent on
   * stdin, never put on a command line, in an environment or in the run folder.
   */
  apiKey?: string;
  /** How this front end says a remedy (a setting, a command) in reasons and findings; the CLI's flags when absent. */
  words?: RemedyWords;
  /**
   * The server configuration the phase measures, where the caller started it (a configuration of a
   * comparison); absent, the phase adopts the recipe of what serves the target's URL (phases/configuration.ts).
   */
  configuration?: RunConfiguration;
}

// Phases and front ends name the findings' update with the sink it goes through.
export type { FindingsUpdate };

/** One host of a cluster, connected, with the agent deployed on it. */
export interface NodeConnection {
  target: Target;
  transport: Transport;
  agent: DeployedAgent;
}

export const nullSink: ResultSink = { runChanged() {}, findings() {} };

/**
 * A cluster's hosts for a phase's context, the head (already connected) first and every other host
 * connected through `connect`, one after the other; undefined for one host. Macro needs no other
 * host (the server is reached from the head), so none is connected for it. The CLI and the
 * extension both build `nodes` here, so a target means the same to both: a `nodes` list naming one
 * host is that one host, as isCluster says.
 */
export async function connectClusterNodes(
  target: Target,
  phase: RunnablePhase,
  head: Omit<NodeConnection, 'target'>,
  connect: (node: Target) => Promise<Omit<NodeConnection, 'target'>>,
): Promise<NodeConnection[] | undefined> {
  if (!isCluster(target) || phase === 'macro') return undefined;
  const [first, ...rest] = clusterNodes(target);
  const nodes: NodeConnection[] = [{ target: first, transport: head.transport, agent: head.agent }];
  for (const node of rest) nodes.push({ target: node, ...(await connect(node)) });
  return nodes;
}
