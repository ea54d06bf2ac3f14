import { parseUserRecipe, UserServerRecipe } from './serverRecipe';

/**
 * One host of a cluster target: an alias from ~/.ssh/config (or a host name), with optional overrides.
 */
export interface ClusterNode {
  host: string;
  port?: number;
  user?: string;
}

/**
 * A target is where phases run: a host reached over SSH (an alias from ~/.ssh/config, or
 * host/port/user), or this machine. The same shape comes from VS Code settings and CLI flags.
 * A cluster (a server spread over several hosts, as multi-node vLLM and SGLang run) lists its hosts
 * in `nodes`; its host/port/user are the first node's, the head, where the server URL is reached and
 * the single-host phases run.
 */
export interface Target {
  name: string;
  kind: 'ssh' | 'local';
  /** A Host alias from ~/.ssh/config, or a host name / address. */
  host?: string;
  port?: number;
  user?: string;
  /** argv put before every remote command, for example ["docker", "exec", "-i", "vllm"]. */
  commandPrefix?: string[];
  /** The inference server's base URL as seen from the target host. */
  serverUrl: string;
  /** The Python interpreter on the host (the one with PyTorch and vLLM for micro and profile). */
  python: string;
  /** A cluster's hosts, the head first; absent for a single host. */
  nodes?: ClusterNode[];
  /** The head's address as the other nodes reach it, for torch.distributed's rendezvous (default: the address the head's SSH session came in on). */
  rendezvousAddr?: string;
  /** The server's recipe as the user wrote it: what the tool starts in place of the one adopted from the running process. */
  serverRecipe?: UserServerRecipe;
  /** Nsight Systems' `nsys` on the host, for the Nsight Systems profile (default: found on PATH, in the CUDA toolkit, Nsight installs). */
  nsys?: string;
}

export const DEFAULT_SERVER_URL = 'http://127.0.0.1:8000';
export const DEFAULT_PYTHON = 'python3';

export class SettingsError extends Error {}

/** Validates one target as it comes from settings or a file; the message names the bad field. */
export function parseTarget(raw: unknown, where = 'inferenceBench.targets'): Target {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new SettingsError(`${where}: each target must be an object such as {"name": "gpu-box", "host": "gpu-box"}.`);
  }
  const r = raw as Record<string, unknown>;
  const str = (key: string, required = false): string | undefined => {
    const v = r[key];
    if (v === undefined || v === null || v === '') {
      if (required) throw new SettingsError(`${where}: "${key}" is missing.`);
      return undefined;
    }
    if (typeof v !== 'string') throw new SettingsError(`${where}: "${key}" must be a string, not ${JSON.stringify(v)}.`);
    return v;
  };
  const name = str('name', true)!;
  const nodes = r.nodes === undefined ? undefined : parseNodes(r.nodes, `${where} "${name}"`);
  const host = nodes ? nodes[0].host : str('host');
  const kind = (str('kind') ?? (host ? 'ssh' : 'local')) as Target['kind'];
  if (kind !== 'ssh' && kind !== 'local') throw new SettingsError(`${where} "${name}": "kind" must be "ssh" or "local".`);
  if (kind === 'ssh' && !host) throw new SettingsError(`${where} "${name}": an SSH target needs "host" (a ~/.ssh/config alias or a host name).`);
  if (nodes && kind !== 'ssh') throw new SettingsError(`${where} "${name}": a target with "nodes" is a cluster of SSH hosts; leave "kind" out.`);
  if (nodes && r.host !== undefined) throw new SettingsError(`${where} "${name}": give the hosts in "nodes" (the head first), not also "host".`);
  let port: number | undefined = nodes?.[0].port;
  if (r.port !== undefined) {
    if (nodes) throw new SettingsError(`${where} "${name}": give each node's "port" in "nodes", not one for the cluster.`);
    port = parsePort(r.port, `${where} "${name}"`);
  }
  let commandPrefix: string[] | undefined;
  if (r.commandPrefix !== undefined) {
    const p = r.commandPrefix;
    if (typeof p === 'string') commandPrefix = p.trim() ? p.trim().split(/\s+/) : undefined;
    else if (Array.isArray(p) && p.every((x) => typeof x === 'string')) commandPrefix = p.length ? (p as string[]) : undefined;
    else throw new SettingsError(`${where} "${name}": "commandPrefix" must be an array of strings such as ["docker", "exec", "-i", "vllm"].`);
  }
  const serverUrl = str('serverUrl') ?? DEFAULT_SERVER_URL;
  try {
    new URL(serverUrl);
  } catch {
    throw new SettingsError(`${where} "${name}": "serverUrl" is not a URL: ${serverUrl}`);
  }
  // A cluster-wide user fills in the hosts that name none; the head's is the target's.
  if (nodes) for (const n of nodes) n.user ??= str('user');
  const user = nodes ? nodes[0].user : str('user');
  const target: Target = { name, kind, host, port, user, commandPrefix, serverUrl, python: str('python') ?? DEFAULT_PYTHON };
  if (nodes) target.nodes = nodes;
  const rendezvousAddr = str('rendezvousAddr');
  if (rendezvousAddr) target.rendezvousAddr = rendezvousAddr;
  const nsys = str('nsys')?.trim();
  if (nsys) target.nsys = nsys;
  if (r.serverRecipe !== undefined) {
    try {
      target.serverRecipe = parseUserRecipe(r.serverRecipe);
    } catch (err) {
      throw new SettingsError(`${where} "${name}": "serverRecipe": ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  return target;
}

function parsePort(value: unknown, where: string): number {
  const port = Number(value);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new SettingsError(`${where}: "port" must be a number from 1 to 65535.`);
  return port;
}

/** A cluster's "nodes": aliases ("node-a", "user@node-b") or objects ({"host": "node-b", "port": 2222}). */
function parseNodes(raw: unknown, where: string): ClusterNode[] {
  const example = '["node-a", "node-b"] (Host aliases from ~/.ssh/config, the head first)';
  if (!Array.isArray(raw) || raw.length === 0) throw new SettingsError(`${where}: "nodes" must be a list of hosts such as ${example}.`);
  const nodes = raw.map((n, i): ClusterNode => {
    if (typeof n === 'string' && n.trim()) {
      const at = n.lastIndexOf('@');
      const host = n.slice(at + 1).trim();
      if (!host) throw new SettingsError(`${where}: node ${i + 1} ("${n}") has no host after "@".`);
      return at >= 0 ? { host, user: n.slice(0, at) } : { host };
    }
    if (typeof n === 'object' && n !== null && !Array.isArray(n) && typeof (n as { host?: unknown }).host === 'string' && (n as { host: string }).host) {
      const o = n as { host: string; port?: unknown; user?: unknown };
      if (o.user !== undefined && typeof o.user !== 'string') throw new SettingsError(`${where}: node ${i + 1}'s "user" must be a string.`);
      return { host: o.host, port: o.port === undefined ? undefined : parsePort(o.port, `${where} node ${i + 1}`), user: o.user as string | undefined };
    }
    throw new SettingsError(`${where}: node ${i + 1} must be a host alias or {"host": ...}; "nodes" is a list such as ${example}.`);
  });
  const seen = new Set<string>();
  for (const n of nodes) {
    const key = `${n.user ?? ''}@${n.host}:${n.port ?? ''}`;
    if (seen.has(key)) throw new SettingsError(`${where}: node ${n.host} is listed twice in "nodes".`);
    seen.add(key);
  }
  return nodes;
}

/** The hosts of a target as single-host targets, the head first: a cluster's nodes, or the target itself. */
export function clusterNodes(t: Target): Target[] {
  if (!t.nodes?.length) return [t];
  return t.nodes.map((n, i) => ({
    name: i === 0 ? t.name : `${t.name}/${n.host}`,
    kind: 'ssh',
    host: n.host,
    port: n.port,
    user: n.user,
    commandPrefix: t.commandPrefix,
    serverUrl: t.serverUrl,
    python: t.python,
  }));
}

export function isCluster(t: Target): boolean {
  return (t.nodes?.length ?? 0) > 1;
}

export function describeTarget(t: Target): string {
  if (t.kind === 'local') return 'this machine';
  if (isCluster(t)) return `${t.nodes!.length} hosts: ${t.nodes!.map((n) => `${n.user ? `${n.user}@` : ''}${n.host}${n.port ? `:${n.port}` : ''}`).join(', ')}`;
  return `${t.user ? `${t.user}@` : ''}${t.host}${t.port ? `:${t.port}` : ''}`;
}
