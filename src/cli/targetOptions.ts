import { resolve } from 'node:path';
import { UsageError } from './command';
import { stderrLogger } from './cliLogger';
import { FindingsFile, findingsFlagPath } from './findingsFile';
import { onStopSignals } from './stopSignals';
import { showDiedRuns } from './diedRuns';
import { keepRunFindings } from '../core/findings/runFindings';
import { connectClusterNodes, FindingsUpdate, nullSink, PhaseContext, ResultSink } from '../core/campaign/phaseContext';
import { RunnablePhase } from '../core/campaign/runnablePhase';
import { DEFAULT_PYTHON, DEFAULT_SERVER_URL, parseTarget, Target } from '../core/config/target';
import { NodeConnection } from '../core/phases/collectives';
import { Logger } from '../core/log';
import { bundledAgentPath, deployAgent, DeployedAgent } from '../remote/agentDeploy';
import { openTransport } from '../remote/openTransport';
import { SshHooks } from '../remote/ssh/connection';
import { Transport } from '../remote/transport';

/** The flags every phase command takes to say where it runs; spread into parseArgs' options. */
export const TARGET_OPTIONS = {
  target: { type: 'string', default: 'local' },
  port: { type: 'string' },
  user: { type: 'string' },
  'ssh-config': { type: 'string' },
  prefix: { type: 'string' },
  'accept-new-host-key': { type: 'boolean' },
  url: { type: 'string' },
  python: { type: 'string' },
  workspace: { type: 'string' },
  findings: { type: 'string' },
  'api-key': { type: 'string' },
  'rendezvous-addr': { type: 'string' },
  verbose: { type: 'boolean' },
} as const;

export interface TargetFlags {
  target?: string;
  port?: string;
  user?: string;
  'ssh-config'?: string;
  prefix?: string;
  'accept-new-host-key'?: boolean;
  url?: string;
  python?: string;
  workspace?: string;
  findings?: string;
  'api-key'?: string;
  'rendezvous-addr'?: string;
  verbose?: boolean;
}

/** The help text for TARGET_OPTIONS; `python` says what the interpreter is needed for. */
export function targetUsage(python = 'Python 3 on the target'): string {
  return `Target:
  --target local|HOST       this machine (default), or an SSH host: a Host alias from ~/.ssh/config,
                            a host name, or user@host; HOST1,HOST2,... is a cluster (a server across
                            hosts, the head first): micro then runs its collectives across them all
  --rendezvous-addr ADDR    a cluster's head as the other hosts reach it (default: the address the
                            head's SSH session came in on)
  --port N, --user NAME     override the ssh config's Port and User
  --ssh-config FILE         another ssh config file (default ~/.ssh/config)
  --prefix "docker exec -i vllm"   run the agent inside a container on the host
  --accept-new-host-key     trust a host key seen for the first time (it is added to known_hosts);
                            without it an unknown host is refused. A changed key is always refused.
  --url URL                 the server as seen from the target (default ${DEFAULT_SERVER_URL})
  --python PATH             ${python} (default ${DEFAULT_PYTHON})
  --workspace DIR           where runs are kept (.inference-bench/runs/ under it; default: current folder)
  --findings FILE           also write the results into this findings document (relative to the workspace)
  --api-key KEY             for a server started with --api-key (default: $INFBENCH_API_KEY, else
                            $OPENAI_API_KEY as vllm bench serve reads it); sent on the agent's stdin
  --verbose`;
}

/** The target the flags describe; `--target user@host` splits like ssh's own argument. */
export function cliTarget(v: TargetFlags): Target {
  const name = v.target ?? 'local';
  const serverUrl = v.url ?? DEFAULT_SERVER_URL;
  try {
    new URL(serverUrl);
  } catch {
    throw new UsageError(`--url is not a URL: ${serverUrl}. Example: --url http://127.0.0.1:8000`);
  }
  const commandPrefix = v.prefix?.trim() ? v.prefix.trim().split(/\s+/) : undefined;
  const python = v.python ?? DEFAULT_PYTHON;
  if (name === 'local') return { name, kind: 'local', serverUrl, python, commandPrefix };
  if (name.includes(',')) {
    if (v.port !== undefined)
      throw new UsageError("--port applies to one host; give a cluster's ports in its hosts' ~/.ssh/config entries (or --ssh-config FILE).");
    const hosts = name.split(',').map((h) => h.trim());
    if (hosts.some((h) => !h || h === 'local')) throw new UsageError(`--target ${name}: a cluster is a list of SSH hosts such as node-a,node-b.`);
    try {
      return parseTarget({ name, nodes: hosts, user: v.user, serverUrl, python, commandPrefix, rendezvousAddr: v['rendezvous-addr'] }, '--target');
    } catch (err) {
      throw new UsageError(err instanceof Error ? err.message : String(err));
    }
  }
  let port: number | undefined;
  if (v.port !== undefined) {
    port = Number(v.port);
    if (!Number.isInteger(port) || port < 1 || port > 65535) throw new UsageError(`--port must be a number from 1 to 65535; got "${v.port}".`);
  }
  const at = name.lastIndexOf('@');
  const host = at >= 0 ? name.slice(at + 1) : name;
  const user = v.user ?? (at >= 0 ? name.slice(0, at) : undefined);
  if (!host) throw new UsageError(`--target needs a host after "@"; got "${name}".`);
  return { name, kind: 'ssh', host, port, user, serverUrl, python, commandPrefix };
}

/** A connected target with the agent deployed, and Ctrl-C wired to an AbortSignal. */
export interface OpenedTarget {
  target: Target;
  transport: Transport;
  agent: DeployedAgent;
  workspace: string;
  log: Logger;
  findings?: FindingsFile;
  signal: AbortSignal;
  /** The server's API key from --api-key or the environment; never stored. */
  apiKey?: string;
  /** A cluster's hosts, connected, the head (transport, agent) first; absent for one host. */
  nodes?: NodeConnection[];
  close(): Promise<void>;
}

/**
 * Connects to the target the flags name (an unknown host key refused unless --accept-new-host-key,
 * a key's passphrase asked on the terminal), deploys the agent, and turns Ctrl-C, SIGTERM and SIGHUP
 * into stopping the run, with `stopping` printed so the user knows what is kept.
 */
export async function openCliTarget(v: TargetFlags, phase: RunnablePhase, stopping: string): Promise<OpenedTarget> {
  const target = cliTarget(v);
  const log = stderrLogger(v.verbose);
  const workspace = resolve(v.workspace ?? '.');
  // Before connecting: a findings path outside the workspace is refused at once.
  const findingsPath = v.findings ? findingsFlagPath(workspace, v.findings) : undefined;
  showDiedRuns(workspace, log);
  const hooks: SshHooks = {
    onUnknownHostKey: v['accept-new-host-key']
      ? async (p) => {
          process.stderr.write(`Trusting the new host key of ${p.hostName}: ${p.keyType} ${p.fingerprint} (added to ${p.knownHostsFile}).\n`);
          return true;
        }
      : undefined,
    askPassphrase: process.stdin.isTTY ? (file) => askHidden(`Passphrase for ${file}: `) : undefined,
    log: (level, message) => log[level](message),
  };
  const transport = await openTransport({ ...target, configFile: v['ssh-config'] }, hooks);
  const others: Transport[] = [];
  const abort = new AbortController();
  const stopListening = onStopSignals(abort, stopping);
  const close = async () => {
    // Signals still stop the closing (the last kills on the host) in order; only then they are the default again.
    await Promise.all([transport, ...others].map((t) => t.close()));
    stopListening();
  };
  try {
    const agent = await deployAgent(transport, bundledAgentPath(), target.python);
    const findings = findingsPath ? new FindingsFile(findingsPath, log, { workspace }) : undefined;
    const apiKey = v['api-key'] || process.env.INFBENCH_API_KEY || process.env.OPENAI_API_KEY || undefined;
    // Every host the phase works on, up front: a wrong key or host key on any of them is said before work starts.
    const nodes = await connectClusterNodes(target, phase, { transport, agent }, async (node) => {
      const t = await openTransport({ ...node, configFile: v['ssh-config'] }, hooks);
      others.push(t);
      return { transport: t, agent: await deployAgent(t, bundledAgentPath(), node.python) };
    });
    return { target, transport, agent, workspace, log, findings, signal: abort.signal, apiKey, nodes, close };
  } catch (err) {
    await close();
    throw err;
  }
}

/** The context a phase runs in from the CLI: the opened target, findings to the --findings file, `runChanged` for progress lines. */
export function cliPhaseContext(opened: OpenedTarget, runChanged: ResultSink['runChanged'] = nullSink.runChanged): PhaseContext {
  const { findings, workspace } = opened;
  const toFindings = (update: FindingsUpdate) => {
    // Kept in the run folder first, so that a run killed mid-way can say so in this block, with every row it showed, at the next start.
    if (findings) keepRunFindings(workspace, findings.path, update);
    findings?.findings(update);
  };
  return { ...opened, sink: { runChanged, findings: toFindings } };
}

/** Reads a line from the terminal without echoing it. */
function askHidden(prompt: string): Promise<string | undefined> {
  return new Promise((resolvePromise) => {
    const stdin = process.stdin;
    process.stderr.write(prompt);
    let value = '';
    const wasRaw = stdin.isRaw;
    stdin.setRawMode?.(true);
    stdin.resume();
    const onData = (chunk: Buffer) => {
      for (const ch of chunk.toString('utf8')) {
        if (ch === '\r' || ch === '\n') return finish(value);
        if (ch === '\u0003' || ch === '\u0004') return finish(undefined);
        if (ch === '\u007f' || ch === '\b') value = value.slice(0, -1);
        else value += ch;
      }
    };
    const finish = (result: string | undefined) => {
      stdin.removeListener('data', onData);
      stdin.setRawMode?.(wasRaw);
      stdin.pause();
      process.stderr.write('\n');
      resolvePromise(result);
    };
    stdin.on('data', onData);
  });
}
