import * as vscode from 'vscode';
import { Target } from '../../core/config/target';
import { bundledAgentPath, deployAgent, DeployedAgent } from '../../remote/agentDeploy';
import { openTransport } from '../../remote/openTransport';
import { SshHooks } from '../../remote/ssh/connection';
import { Transport, TransportState } from '../../remote/transport';
import { Connection, Connector } from '../runs/connect';
import { askTrustHostKey } from './hostKeyPrompt';
import { PassphraseStore } from './passphraseStore';

export interface ConnectionStateChange {
  target: string;
  state: TransportState;
  /** Why, in words (the error message for `failed`). */
  detail?: string;
}

interface Entry {
  /** The settings the connection was made with; a change in settings means a new connection. */
  spec: string;
  ready: Promise<{ transport: Transport; agent: DeployedAgent }>;
  users: number;
  idleTimer?: NodeJS.Timeout;
  state: TransportState;
}

// A connection nobody uses stays open this long, so that the next phase starts at once.
const IDLE_CLOSE_MS = 5 * 60_000;

/**
 * The extension's SSH (and local) connections: one per target, shared by every phase that runs
 * there and counted; the last user's release starts an idle timer that closes it. Unknown host
 * keys are asked about in a modal with the fingerprint; key passphrases are asked once and kept in
 * SecretStorage. State changes are events the sidebar shows.
 */
export class ConnectionManager implements vscode.Disposable {
  private readonly entries = new Map<string, Entry>();
  private readonly stateEmitter = new vscode.EventEmitter<ConnectionStateChange>();
  readonly onDidChangeState = this.stateEmitter.event;
  private readonly passphrases: PassphraseStore;

  constructor(secrets: vscode.SecretStorage, private readonly log: vscode.LogOutputChannel, private readonly agentPath: string = bundledAgentPath()) {
    this.passphrases = new PassphraseStore(secrets);
  }

  /** For the run controller: a Connector that shares this manager's connections. */
  readonly connector: Connector = (target, signal) => this.connect(target, signal);

  state(targetName: string): TransportState {
    return this.entries.get(targetName)?.state ?? 'disconnected';
  }

  /** How many phases hold the target's connection now (0 when idle or closed). */
  users(targetName: string): number {
    return this.entries.get(targetName)?.users ?? 0;
  }

  async connect(target: Target, signal?: AbortSignal): Promise<Connection> {
    const spec = JSON.stringify([target.kind, target.host, target.port, target.user, target.commandPrefix, target.python]);
    let entry = this.entries.get(target.name);
    if (entry && entry.spec !== spec) {
      // The target's settings changed: the old connection goes once its users are done.
      this.log.info(`${target.name}: settings changed, opening a new connection`);
      const old = entry;
      this.entries.delete(target.name);
      if (old.users === 0) void this.closeEntry(old);
      entry = undefined;
    }
    if (!entry) entry = this.open(target, spec);
    const mine = entry;
    mine.users++;
    if (mine.idleTimer) clearTimeout(mine.idleTimer);
    mine.idleTimer = undefined;
    let released = false;
    const release = async () => {
      if (released) return;
      released = true;
      mine.users--;
      if (mine.users > 0) return;
      if (this.entries.get(target.name) !== mine) {
        await this.closeEntry(mine);
        return;
      }
      mine.idleTimer = setTimeout(() => void this.disconnect(target.name), IDLE_CLOSE_MS);
    };
    try {
      const { transport, agent } = await abortable(mine.ready, signal);
      return { transport, agent, release };
    } catch (err) {
      await release();
      if (this.entries.get(target.name) === mine && mine.state === 'failed') {
        // A failed attempt is not kept: the next phase tries again (perhaps after the user fixed it).
        this.entries.delete(target.name);
      }
      throw err;
    }
  }

  /** Closes a target's connection now (phases still using it see their commands end). */
  async disconnect(targetName: string): Promise<void> {
    const entry = this.entries.get(targetName);
    if (!entry) return;
    this.entries.delete(targetName);
    await this.closeEntry(entry);
    this.fire({ target: targetName, state: 'disconnected' });
  }

  dispose(): void {
    for (const name of [...this.entries.keys()]) void this.disconnect(name);
    this.stateEmitter.dispose();
  }

  private open(target: Target, spec: string): Entry {
    const entry: Entry = { spec, users: 0, state: 'connecting', ready: Promise.resolve() as never };
    this.entries.set(target.name, entry);
    const setState = (state: TransportState, detail?: string) => {
      if (this.entries.get(target.name) !== entry) return;
      entry.state = state;
      this.fire({ target: target.name, state, detail });
    };
    const hooks: SshHooks = {
      onUnknownHostKey: (prompt) => askTrustHostKey(prompt, target.name),
      askPassphrase: (keyFile, previousWasWrong) => this.passphrases.ask(keyFile, previousWasWrong),
      onPassphraseResult: (keyFile, accepted) => void this.passphrases.result(keyFile, accepted),
      onStateChange: (state, detail) => setState(state, detail),
      log: (level, message) => this.log[level](`${target.name}: ${message}`),
    };
    setState('connecting');
    entry.ready = (async () => {
      const transport = await openTransport(target, hooks);
      try {
        const agent = await deployAgent(transport, this.agentPath, target.python);
        if (target.kind === 'local') setState('connected', 'this machine');
        return { transport, agent };
      } catch (err) {
        await transport.close().catch(() => undefined);
        throw err;
      }
    })();
    entry.ready.catch((err: unknown) => {
      const message = err instanceof Error ? err.message : String(err);
      this.log.error(`${target.name}: ${message}`);
      setState('failed', message);
    });
    return entry;
  }

  private async closeEntry(entry: Entry): Promise<void> {
    if (entry.idleTimer) clearTimeout(entry.idleTimer);
    try {
      const { transport } = await entry.ready;
      await transport.close();
    } catch {
      // never connected: nothing to close
    }
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
