import { LocalTransport } from './localTransport';
import { SshConnection, SshEndpoint, SshHooks } from './ssh/connection';
import { SshTransport } from './ssh/sshTransport';
import { Transport } from './transport';

/**
 * What the remote layer needs to reach a target. The core's Target (settings, CLI flags) maps onto
 * this; it lives here because remote sits below core.
 */
export interface TransportSpec extends Partial<SshEndpoint> {
  kind: 'ssh' | 'local';
  /** argv put before every command, for example ['docker', 'exec', '-i', 'vllm']. */
  commandPrefix?: readonly string[];
}

interface PooledConnection {
  connection: SshConnection;
  users: number;
}

// One connection per SSH endpoint, shared by every transport opened on it and closed with the last.
const pool = new Map<string, PooledConnection>();

function poolKey(e: SshEndpoint): string {
  return JSON.stringify([e.configFile ?? '', e.home ?? '', e.user ?? '', e.host, e.port ?? 0]);
}

/**
 * Opens a transport for a target and, for SSH, connects at once so that a wrong key, an unknown or
 * changed host key or an unreachable host is reported before any work starts (as an SshError whose
 * message names the host and the next step). Transports to the same endpoint share one connection
 * (the first opener's hooks serve it); each transport's close() gives its share back.
 */
export async function openTransport(spec: TransportSpec, hooks: SshHooks = {}): Promise<Transport> {
  if (spec.kind === 'local') return new LocalTransport(spec.commandPrefix ?? []);
  if (!spec.host) throw new Error('An SSH target needs a host: a Host alias from ~/.ssh/config, or a host name.');
  const endpoint: SshEndpoint = {
    host: spec.host,
    port: spec.port,
    user: spec.user,
    configFile: spec.configFile,
    home: spec.home,
    connectTimeoutMs: spec.connectTimeoutMs,
  };
  const key = poolKey(endpoint);
  let entry = pool.get(key);
  if (!entry) {
    entry = { connection: new SshConnection(endpoint, hooks), users: 0 };
    pool.set(key, entry);
  }
  entry.users++;
  const shared = entry;
  let left = false;
  // A connection on its way out (its last transport closing, waiting for the commands it cancels) is
  // not handed to the next opener: that one connects afresh, and so checks the host key again.
  const leave = () => {
    if (left) return;
    left = true;
    shared.users--;
    if (shared.users === 0 && pool.get(key) === shared) pool.delete(key);
  };
  const release = async () => {
    leave();
    if (shared.users === 0) await shared.connection.close();
  };
  const transport = new SshTransport(shared.connection, spec.commandPrefix ?? [], release, leave);
  try {
    await transport.connect();
  } catch (err) {
    await release();
    throw err;
  }
  return transport;
}
