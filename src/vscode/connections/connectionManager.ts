import * as vscode from 'vscode';
import { Target } from '../../core/config/target';
import { bundledAgentPath, deployAgent, DeployedAgent } from '../../remote/agentDeploy';
import { openTransport } from '../../remote/openTransport';
import { SshHooks } from '../../remote/ssh/connection';
import { Transport, TransportState } from '../../remote/transport';
import { Connection, Connector } from '../../core/campaign/connection';
import { askTrustHostKey } from './hostKeyPrompt';
import { PassphraseStore } from './passphraseStore';

export interface ConnectionStateChange {
  /** The host's key (hostKey()); every target with this key shows the change. */
  host: string;
  state: TransportState;
  /** Why, in words (the error message for `failed`). */
  detail?: string;
}

/** What a target's connection row shows: the state of its host's connection. */
export interface HostConnectionState {
  state: TransportState;
  detail?: string;
}

/** One transport + agent on the host, for one command prefix and interpreter (targets may differ there). */
interface Channel {
  ready: Promise<{ transport: Transport; agent: DeployedAgent }>;
  status: 'pending' | 'ok' | 'failed';
}

interface HostEntry {
  key: string;
  channels: Map<string, Channel>;
  users: number;
  state: TransportState;
  detail?: string;
  hooks: SshHooks;
}

/**
 * The machine a target reaches: targets with the same SSH host, port and user (or this machine)
 * share one connection, and so one state.
 */
export function hostKey(target: Pick<Target, 'kind' | 'host' | 'port' | 'user'>): string {
  return target.kind === 'local' ? 'local' : JSON.stringify([target.host ?? '', target.port ?? 0, target.user ?? '']);
}

/**
 * The extension's SSH (and local) connections: one per host, shared by every target on it and
 * every phase that runs there, and counted. A connected host stays connected when its last phase
 * ends, as a Remote-SSH window stays connected: the sidebar shows it connected and the server watch
 * looks at its server through it, until the user disconnects it, the connection drops beyond its
 * reconnects, or the window closes (SSH keepalives keep an idle one alive through NATs and firewalls).
 * Unknown host keys are asked about in a modal with the fingerprint; key passphrases are
 * asked once and kept in SecretStorage. The state is the host's, so every target on it shows the
 * same; an attempt given up (Cancel while connecting, nobody else waiting) ends as disconnected.
 */
export class ConnectionManager implements vscode.Disposable {
  private readonly entries = new Map<string, HostEntry>();
  private readonly stateEmitter = new vscode.EventEmitter<ConnectionStateChange>();
  readonly onDidChangeState = this.stateEmitter.event;
  private readonly passphrases: PassphraseStore;
  /** Hosts whose last attempt failed, with why; cleared by the next attempt. */
  private readonly failed = new Map<string, HostConnectionState>();

  constructor(
    secrets: vscode.SecretStorage,
    private readonly log: vscode.LogOutputChannel,
    private readonly agentPath: string = bundledAgentPath(),
  ) {
    this.passphrases = new PassphraseStore(secrets);
  }

  /** For the run controller: a Connector that shares this manager's connections. */
  readonly connector: Connector = (target, signal) => this.connect(target, signal);

  /** How many phases hold the target's host connection now (0 when idle or closed). */
  users(target: Target): number {
    return this.entries.get(hostKey(target))?.users ?? 0;
  }

  /**
   * The target's connection if it is open and ready, for a quick look (the server's health) that must
   * not open one; undefined otherwise.
   */
  openChannelOf(target: Target): Promise<{ transport: Transport; agent: DeployedAgent }> | undefined {
    const entry = this.entries.get(hostKey(target));
    if (entry?.state !== 'connected') return undefined;
    const channel = entry.channels.get(JSON.stringify([target.commandPrefix ?? [], target.python]));
    return channel?.status === 'ok' ? channel.ready : undefined;
  }

  /** The targets among `all` that reach the same host as `target` (itself included). */
  targetsSharing(target: Target, all: readonly Target[]): Target[] {
    const key = hostKey(target);
    return all.filter((t) => hostKey(t) === key);
  }

  async connect(target: Target, signal?: AbortSignal): Promise<Connection> {
    const key = hostKey(target);
    const entry = this.entries.get(key) ?? this.openHost(key, target);
    const channelKey = JSON.stringify([target.commandPrefix ?? [], target.python]);
    let channel = entry.channels.get(channelKey);
    if (!channel) {
      channel = this.openChannel(entry, target);
      entry.channels.set(channelKey, channel);
    }
    entry.users++;
    let released = false;
    const release = async () => {
      if (released) return;
      released = true;
      entry.users--;
      if (entry.users > 0) return;
      if (this.entries.get(key) !== entry) {
        await this.closeEntry(entry);
        return;
      }
      if (entry.state !== 'connected' && entry.state !== 'reconnecting') {
        // Nobody waits for this attempt any more (cancelled, or it failed): it is not left "connecting…".
        // Not awaited: a cancel returns at once, the attempt is closed whenever it settles.
        void this.disconnectKey(key, entry.state === 'failed' ? { state: 'failed', detail: entry.detail } : undefined);
      }
      // A connected host is kept (no idle timer): the target still reads connected and its server is still watched.
    };
    try {
      const { transport, agent } = await abortable(channel.ready, signal);
      return { transport, agent, release };
    } catch (err) {
      // A failed attempt is not kept: the next phase tries again (perhaps after the user fixed it).
      if (entry.channels.get(channelKey) === channel && channel.status === 'failed') entry.channels.delete(channelKey);
      await release();
      throw err;
    }
  }

  /** Closes the connection of the target's host now (phases still using it see their commands end). */
  disconnectTarget(target: Target): Promise<void> {
    return this.disconnectKey(hostKey(target));
  }

  dispose(): void {
    for (const key of [...this.entries.keys()]) void this.disconnectKey(key);
    this.stateEmitter.dispose();
  }

  private async disconnectKey(key: string, final?: HostConnectionState): Promise<void> {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    if (final?.state === 'failed') {
      // The failure stays visible (with its reason) until the next attempt, without a held entry.
      this.failed.set(key, final);
    }
    this.fire({ host: key, state: final?.state ?? 'disconnected', detail: final?.detail });
    await this.closeEntry(entry);
  }

  /** The state of a host, a failed last attempt included. */
  hostState(target: Target): HostConnectionState {
    const key = hostKey(target);
    const entry = this.entries.get(key);
    if (entry) return { state: entry.state, detail: entry.detail };
    return this.failed.get(key) ?? { state: 'disconnected' };
  }

  private openHost(key: string, target: Target): HostEntry {
    this.failed.delete(key);
    const label = target.kind === 'local' ? 'this machine' : (target.host ?? target.name);
    const entry: HostEntry = { key, channels: new Map(), users: 0, state: 'connecting', hooks: {} };
    entry.hooks = {
      onUnknownHostKey: (prompt) => askTrustHostKey(prompt, target.name),
      askPassphrase: (keyFile, previousWasWrong) => this.passphrases.ask(keyFile, previousWasWrong),
      onPassphraseResult: (keyFile, accepted) => void this.passphrases.result(keyFile, accepted),
      onStateChange: (state, detail) => this.setState(entry, state, detail),
      log: (level, message) => this.log[level](`${label}: ${message}`),
    };
    this.entries.set(key, entry);
    this.setState(entry, 'connecting');
    return entry;
  }

  private openChannel(entry: HostEntry, target: Target): Channel {
    if (entry.state !== 'connected') this.setState(entry, 'connecting');
    const channel: Channel = { status: 'pending', ready: Promise.resolve() as never };
    channel.ready = (async () => {
      const transport = await openTransport(target, entry.hooks);
      try {
        const agent = await deployAgent(transport, this.agentPath, target.python);
        // Connected once the agent answers; a second target on a connected host has no transport event of its own.
        channel.status = 'ok';
        this.setState(entry, 'connected', target.kind === 'local' ? 'this machine' : undefined);
        return { transport, agent };
      } catch (err) {
        await transport.close().catch(() => undefined);
        throw err;
      }
    })();
    channel.ready.catch((err: unknown) => {
      channel.status = 'failed';
      const message = err instanceof Error ? err.message : String(err);
      this.log.error(`${target.name}: ${message}`);
      // One target's interpreter failing there leaves the host connected for the others.
      if (![...entry.channels.values()].some((c) => c.status === 'ok')) this.setState(entry, 'failed', message);
    });
    return channel;
  }

  private setState(entry: HostEntry, state: TransportState, detail?: string): void {
    if (this.entries.get(entry.key) !== entry) return;
    entry.state = state;
    entry.detail = detail;
    this.fire({ host: entry.key, state, detail });
  }

  private async closeEntry(entry: HostEntry): Promise<void> {
    await Promise.all(
      [...entry.channels.values()].map(async (channel) => {
        try {
          const { transport } = await channel.ready;
          await transport.close();
        } catch {
          // never connected: nothing to close
        }
      }),
    );
  }

  private fire(change: ConnectionStateChange): void {
    this.stateEmitter.fire(change);
  }
}

function abortable<T>(p: Promise<T>, signal?: AbortSignal): Promise<T> {
  if (!signal) return p;
  if (signal.aborted) return Promise.reject(new Error('Cancelled while connecting.'));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new Error('Cancelled while connecting.'));
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e instanceof Error ? e : new Error(String(e)));
      },
    );
  });
}
