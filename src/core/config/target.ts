/**
 * A target is where phases run: a host reached over SSH (an alias from ~/.ssh/config, or
 * host/port/user), or this machine. The same shape comes from VS Code settings and CLI flags.
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
  const host = str('host');
  const kind = (str('kind') ?? (host ? 'ssh' : 'local')) as Target['kind'];
  if (kind !== 'ssh' && kind !== 'local') throw new SettingsError(`${where} "${name}": "kind" must be "ssh" or "local".`);
  if (kind === 'ssh' && !host) throw new SettingsError(`${where} "${name}": an SSH target needs "host" (a ~/.ssh/config alias or a host name).`);
  let port: number | undefined;
  if (r.port !== undefined) {
    port = Number(r.port);
    if (!Number.isInteger(port) || port < 1 || port > 65535) throw new SettingsError(`${where} "${name}": "port" must be a number from 1 to 65535.`);
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
  return { name, kind, host, port, user: str('user'), commandPrefix, serverUrl, python: str('python') ?? DEFAULT_PYTHON };
}

export function describeTarget(t: Target): string {
  if (t.kind === 'local') return 'this machine';
  return `${t.user ? `${t.user}@` : ''}${t.host}${t.port ? `:${t.port}` : ''}`;
}
