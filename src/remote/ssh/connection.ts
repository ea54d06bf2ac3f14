import { EventEmitter } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { Duplex } from 'node:stream';
import { AnyAuthMethod, Client, ClientChannel, ParsedKey, SFTPWrapper, utils } from 'ssh2';
import { TransportState } from '../transport';
import { resolveSshConfig, ResolvedSshConfig } from './config';
import { SshError } from './errors';
import { addKnownHost, checkHostKey, fingerprint, keyTypeOf, knownKeyTypes, removeKeyCommand } from './knownHosts';

/** Where to connect: what a target names, before ~/.ssh/config is applied. */
export interface SshEndpoint {
  /** A Host alias from the ssh config, or a host name / address. */
  host: string;
  port?: number;
  user?: string;
  /** The ssh config file; defaults to ~/.ssh/config. */
  configFile?: string;
  /** Home folder for `~` (tests point it elsewhere). */
  home?: string;
  /** Overrides ConnectTimeout: how long to wait for the handshake and login, prompts excluded. */
  connectTimeoutMs?: number;
}

export interface UnknownHostKeyPrompt {
  /** The name as known_hosts stores it: `host` or `[host]:port`. */
  hostName: string;
  alias: string;
  keyType: string;
  fingerprint: string;
  /** Where the key will be written if accepted. */
  knownHostsFile: string;
}

/** How the front end takes part in connecting: host-key trust, passphrases, state for the sidebar. */
export interface SshHooks {
  /** Unknown host key: resolve true to trust it (it is then appended to known_hosts). Absent: refuse. */
  onUnknownHostKey?(prompt: UnknownHostKeyPrompt): Promise<boolean>;
  /** An encrypted identity file needs its passphrase; undefined means the user declined. */
  askPassphrase?(keyFile: string, previousWasWrong: boolean): Promise<string | undefined>;
  /** Tells a front end that keeps passphrases whether the one it gave worked (to forget wrong ones). */
  onPassphraseResult?(keyFile: string, accepted: boolean): void;
  onStateChange?(state: TransportState, detail?: string): void;
  log?(level: 'debug' | 'info' | 'warn' | 'error', message: string): void;
}

const DEFAULT_CONNECT_TIMEOUT_MS = 20_000;
const DEFAULT_KEEPALIVE_MS = 15_000;
const RECONNECT_DELAYS_MS = [1000, 2000, 4000, 8000, 16000];
// The host-key algorithms ssh2 speaks, in its default order; those known_hosts holds go first.
const HOST_KEY_ALGORITHMS = [
  'ssh-ed25519',
  'ecdsa-sha2-nistp256',
  'ecdsa-sha2-nistp384',
  'ecdsa-sha2-nistp521',
  'rsa-sha2-512',
  'rsa-sha2-256',
  'ssh-rsa',
] as const;

/**
 * One SSH connection to one target, shared by every command run there. Resolves the alias through
 * the ssh config, dials ProxyJump hops in order, checks host keys against known_hosts and logs in
 * with the agent and identity files. When an established connection drops it reconnects with
 * backoff; every state change is reported for the sidebar.
 */
/** OpenSSH's sshd allows this many session channels (commands, SFTP) on one connection: MaxSessions, 10 unless set. */
const DEFAULT_MAX_SESSIONS = 10;

/** ssh2's words for a channel the server refused to open. */
const isChannelRefused = (err: unknown) => err instanceof Error && /channel open failure/i.test(err.message);

export class SshConnection extends EventEmitter {
  private stateValue: TransportState = 'disconnected';
  /** Session channels open now, who waits for one under the limit, and who waits for any to close (after a refusal). */
  private sessionsOpen = 0;
  private readonly maxSessions = DEFAULT_MAX_SESSIONS;
  private readonly sessionWaiters: (() => void)[] = [];
  private readonly releaseListeners: (() => void)[] = [];
  private client?: Client;
  private hops: Client[] = [];
  private pending?: Promise<Client>;
  private sftpPromise?: Promise<SFTPWrapper>;
  private closed = false;
  private reconnectTimer?: NodeJS.Timeout;
  readonly label: string;

  constructor(
    readonly endpoint: SshEndpoint,
    private readonly hooks: SshHooks = {},
  ) {
    super();
    // Every transport sharing this connection listens for state changes.
    this.setMaxListeners(0);
    this.label = `ssh ${endpoint.user ? `${endpoint.user}@` : ''}${endpoint.host}${endpoint.port ? `:${endpoint.port}` : ''}`;
  }

  get state(): TransportState {
    return this.stateValue;
  }

  /** The connected client, connecting first if needed; concurrent callers share one attempt. */
  connect(): Promise<Client> {
    if (this.closed) return Promise.reject(this.closedError());
    if (this.client) return Promise.resolve(this.client);
    if (!this.pending) {
      const reconnecting = this.stateValue === 'reconnecting';
      if (!reconnecting) this.setState('connecting');
      this.pending = this.connectChain().then(
        (client) => {
          this.pending = undefined;
          if (this.closed) {
            // close() came while this attempt (a first connect or a reconnect) was under way: nothing
            // may outlive it, or a session to the host stays open after the run has ended.
            client.end();
            this.endHops();
            throw this.closedError();
          }
          this.client = client;
          this.setState('connected');
          client.on('close', () => this.onDropped(client));
          return client;
        },
        (err: unknown) => {
          this.pending = undefined;
          if (!reconnecting && !this.closed) this.setState('failed', err instanceof Error ? err.message : String(err));
          throw err;
        },
      );
    }
    return this.pending;
  }

  /** Ends the ProxyJump hops the current connection went through. */
  private endHops(): void {
    for (const hop of this.hops.splice(0)) hop.end();
  }

  private closedError(): SshError {
    return new SshError('unreachable', `The connection to ${this.endpoint.host} was closed.`, this.endpoint.host);
  }

  /**
   * Runs `command` in a session channel of its own. sshd refuses channels past its MaxSessions, and every
   * target on one host shares this connection: their health checks, runs and transfers wait here for a
   * channel to close instead of failing with "open failed". A refusal while others are open (a host set
   * lower) is tried again when one of them closes; one with none open is the host's answer, passed on.
   */
  async exec(command: string): Promise<ClientChannel> {
    for (;;) {
      const client = await this.connect();
      await this.sessionSlot();
      try {
        const stream = await new Promise<ClientChannel>((resolve, reject) => client.exec(command, (err, ch) => (err ? reject(err) : resolve(ch))));
        this.releaseOnClose(stream);
        return stream;
      } catch (err) {
        this.releaseSession();
        if (!(isChannelRefused(err) && this.sessionsOpen > 0)) throw err;
        // A lower MaxSessions, or a channel sshd has not finished closing: try again once another closes.
        await new Promise<void>((resolve) => this.releaseListeners.push(resolve));
      }
    }
  }

  /** A session channel free under the limit, counted as taken. */
  private sessionSlot(): Promise<void> {
    if (this.sessionsOpen < this.maxSessions) {
      this.sessionsOpen++;
      return Promise.resolve();
    }
    return new Promise((resolve) =>
      this.sessionWaiters.push(() => {
        this.sessionsOpen++;
        resolve();
      }),
    );
  }

  private releaseSession(): void {
    this.sessionsOpen = Math.max(0, this.sessionsOpen - 1);
    for (const listener of this.releaseListeners.splice(0)) listener();
    if (this.sessionsOpen < this.maxSessions) this.sessionWaiters.shift()?.();
  }

  private releaseOnClose(channel: EventEmitter): void {
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.releaseSession();
    };
    channel.once('close', release);
  }

  /** One SFTP session per connection, opened on first use (a session channel like any command's). */
  sftp(): Promise<SFTPWrapper> {
    if (!this.sftpPromise) {
      const attempt = this.connect().then(async (client) => {
        await this.sessionSlot();
        return new Promise<SFTPWrapper>((resolve, reject) => {
          client.sftp((err, sftp) => {
            if (err) {
              this.releaseSession();
              reject(
                new Error(`Could not start SFTP on ${this.endpoint.host}: ${err.message}. Check that the server's sshd_config has a "Subsystem sftp" line.`),
              );
              return;
            }
            this.releaseOnClose(sftp);
            resolve(sftp);
          });
        });
      });
      this.sftpPromise = attempt;
      attempt.catch(() => {
        if (this.sftpPromise === attempt) this.sftpPromise = undefined;
      });
    }
    return this.sftpPromise;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    const client = this.client;
    this.client = undefined;
    this.sftpPromise = undefined;
    if (client) {
      await new Promise<void>((resolve) => {
        client.once('close', () => resolve());
        client.end();
        setTimeout(resolve, 2000).unref();
      });
    }
    this.endHops();
    this.setState('disconnected');
  }

  private setState(state: TransportState, detail?: string): void {
    if (state === this.stateValue && state !== 'failed') return;
    this.stateValue = state;
    this.hooks.log?.(state === 'failed' ? 'error' : 'info', `${this.label}: ${state}${detail ? ` (${detail})` : ''}`);
    this.hooks.onStateChange?.(state, detail);
    this.emit('state', state, detail);
  }

  private onDropped(client: Client): void {
    if (this.client !== client) return;
    this.client = undefined;
    this.sftpPromise = undefined;
    this.endHops();
    if (this.closed) return;
    this.hooks.log?.('warn', `${this.label}: the connection dropped`);
    this.setState('reconnecting', 'the connection dropped');
    void this.reconnect();
  }

  private async reconnect(): Promise<void> {
    for (const [attempt, delay] of RECONNECT_DELAYS_MS.entries()) {
      await new Promise<void>((resolve) => {
        this.reconnectTimer = setTimeout(resolve, delay);
        this.reconnectTimer.unref();
      });
      if (this.closed || this.client) return;
      try {
        await this.connect();
        return;
      } catch (err) {
        if (this.closed) return; // closed while this attempt was under way: nothing to report
        const retryable = err instanceof SshError && err.retryable;
        this.hooks.log?.('warn', `${this.label}: reconnect attempt ${attempt + 1} failed: ${err instanceof Error ? err.message : String(err)}`);
        if (!retryable) {
          this.setState('failed', err instanceof Error ? err.message : String(err));
          return;
        }
      }
    }
    this.setState('failed', `gave up after ${RECONNECT_DELAYS_MS.length} attempts to reconnect`);
  }

  private async connectChain(): Promise<Client> {
    const base = { configFile: this.endpoint.configFile, home: this.endpoint.home };
    let cfg: ResolvedSshConfig;
    try {
      cfg = resolveSshConfig(this.endpoint.host, { ...base, user: this.endpoint.user, port: this.endpoint.port });
    } catch (err) {
      throw new SshError(
        'config',
        `Could not read the ssh config for ${this.endpoint.host}: ${err instanceof Error ? err.message : String(err)}`,
        this.endpoint.host,
      );
    }
    const hops: Client[] = [];
    try {
      let sock: Duplex | undefined;
      let via: string | undefined;
      const chain = cfg.proxyJump.map((jump) => resolveSshConfig(jump.host, { ...base, user: jump.user, port: jump.port }));
      for (let i = 0; i < chain.length; i++) {
        const hop = await this.dial(chain[i], sock, via);
        hops.push(hop);
        sock = await forward(hop, chain[i + 1] ?? cfg, chain[i]);
        via = chain[i].alias;
      }
      const client = await this.dial(cfg, sock, via);
      this.hops = hops;
      return client;
    } catch (err) {
      for (const hop of hops) hop.end();
      throw err;
    }
  }

  /** Opens one SSH session (directly, or over a stream forwarded by the previous hop). */
  private dial(cfg: ResolvedSshConfig, sock: Duplex | undefined, via: string | undefined): Promise<Client> {
    const where = `${cfg.user}@${cfg.hostName}:${cfg.port}${cfg.alias !== cfg.hostName ? ` (${cfg.alias})` : ''}${via ? ` via ${via}` : ''}`;
    if (cfg.proxyCommand && !sock) {
      return Promise.reject(
        new SshError(
          'config',
          `"${cfg.alias}" uses ProxyCommand (${cfg.proxyCommand}) in the ssh config, which Inference Bench does not run. Reach it with ProxyJump instead, or run VS Code on a machine that reaches ${cfg.hostName} directly.`,
          cfg.alias,
        ),
      );
    }
    const timeoutMs = this.endpoint.connectTimeoutMs ?? (cfg.connectTimeout ? cfg.connectTimeout * 1000 : DEFAULT_CONNECT_TIMEOUT_MS);
    return new Promise<Client>((resolve, reject) => {
      const client = new Client();
      const tried: string[] = [];
      let failure: SshError | undefined;
      let settled = false;
      const timer = new PausableTimer(timeoutMs, () => {
        failure ??= new SshError(
          'timeout',
          `No SSH answer from ${where} within ${Math.round(timeoutMs / 1000)} s. The host may be down or behind a firewall, or need a ProxyJump in ~/.ssh/config; \`ssh -v ${cfg.alias}\` shows where it stops.`,
          cfg.alias,
        );
        client.destroy();
      });
      const finish = (err?: SshError) => {
        if (settled) return;
        settled = true;
        timer.stop();
        if (err) {
          client.destroy();
          reject(err);
        } else resolve(client);
      };
      client.on('ready', () => finish());
      client.on('error', (err: Error & { level?: string; code?: string }) => {
        if (settled) {
          this.hooks.log?.('warn', `${this.label}: ${err.message}`);
          return;
        }
        finish(failure ?? translateError(err, cfg, where, tried));
      });
      client.on('close', () =>
        finish(
          failure ??
            new SshError(
              'unreachable',
              `The SSH server at ${where} closed the connection before login. Check that it accepts connections from here (\`ssh -v ${cfg.alias}\`).`,
              cfg.alias,
            ),
        ),
      );

      const methods = this.authMethods(cfg, tried, timer);
      const knownTypes = knownKeyTypes([...cfg.userKnownHostsFiles, ...cfg.globalKnownHostsFiles], cfg.hostName, cfg.port);
      const preferred = HOST_KEY_ALGORITHMS.filter((a) => knownTypes.some((t) => t === a || (t === 'ssh-rsa' && a.startsWith('rsa-'))));
      try {
        client.connect({
          host: cfg.hostName,
          port: cfg.port,
          username: cfg.user,
          sock,
          // Our own timer covers the handshake and login, paused while a prompt waits for the user.
          readyTimeout: 24 * 3600 * 1000,
          keepaliveInterval: cfg.serverAliveInterval > 0 ? cfg.serverAliveInterval * 1000 : DEFAULT_KEEPALIVE_MS,
          keepaliveCountMax: cfg.serverAliveCountMax,
          algorithms: preferred.length ? { serverHostKey: [...preferred, ...HOST_KEY_ALGORITHMS.filter((a) => !preferred.includes(a))] } : undefined,
          hostVerifier: ((key: Buffer, verify: (ok: boolean) => void) => {
            void this.verifyHostKey(cfg, key, timer).then(
              () => verify(true),
              (err: SshError) => {
                failure = err;
                verify(false);
              },
            );
          }) as (key: Buffer, verify: (ok: boolean) => void) => void,
          authHandler: (_methodsLeft, _partial, next) => {
            void methods.next().then((r) => next(r.done ? (false as unknown as AnyAuthMethod) : r.value));
          },
        });
      } catch (err) {
        finish(new SshError('config', `Could not start an SSH connection to ${where}: ${err instanceof Error ? err.message : String(err)}`, cfg.alias));
      }
    });
  }

  private async verifyHostKey(cfg: ResolvedSshConfig, blob: Buffer, timer: PausableTimer): Promise<void> {
    const key = { type: keyTypeOf(blob), blob };
    const check = checkHostKey([...cfg.userKnownHostsFiles, ...cfg.globalKnownHostsFiles], cfg.hostName, cfg.port, key);
    const knownHostsFile = cfg.userKnownHostsFiles[0];
    switch (check.status) {
      case 'known':
        return;
      case 'revoked':
        throw new SshError(
          'host-key-revoked',
          `The host key of ${check.hostName} (${check.fingerprint}) is marked @revoked in ${check.file} line ${check.line}; refusing to connect. Ask the machine's administrator for its current key.`,
          cfg.alias,
        );
      case 'changed': {
        const known = check.known.map((k) => `${k.keyType} ${k.fingerprint} (${k.file} line ${k.line})`).join(', ');
        throw new SshError(
          'host-key-changed',
          `The host key of ${check.hostName} has CHANGED: the server now offers ${check.keyType} ${check.fingerprint}, but known_hosts holds ${known}. ` +
            'Someone may be intercepting the connection, or the host was reinstalled. Refusing to connect. ' +
            `If you know why it changed, remove the old key with \`${removeKeyCommand(check.known[0].file, cfg.hostName, cfg.port)}\` and connect again.`,
          cfg.alias,
          {
            hostName: cfg.hostName,
            port: cfg.port,
            knownHostsName: check.hostName,
            offered: { keyType: check.keyType, fingerprint: check.fingerprint },
            known: check.known,
          },
        );
      }
      case 'unknown': {
        const policy = cfg.strictHostKeyChecking;
        let trusted = policy === 'no' || policy === 'off' || policy === 'accept-new';
        if (!trusted && policy !== 'yes' && this.hooks.onUnknownHostKey) {
          timer.pause();
          try {
            trusted = await this.hooks.onUnknownHostKey({
              hostName: check.hostName,
              alias: cfg.alias,
              keyType: check.keyType,
              fingerprint: check.fingerprint,
              knownHostsFile,
            });
          } finally {
            timer.resume();
          }
        }
        if (!trusted) {
          throw new SshError(
            'host-key-unknown',
            `The host key of ${check.hostName} is not in ${cfg.userKnownHostsFiles.join(' or ')} (${check.keyType} ${check.fingerprint}). ` +
              `Check the fingerprint with the machine's owner, then trust it (the CLI: --accept-new-host-key; or connect once with \`ssh ${cfg.alias}\` and answer yes).`,
            cfg.alias,
          );
        }
        addKnownHost(knownHostsFile, cfg.hostName, cfg.port, key);
        this.hooks.log?.('info', `${this.label}: added ${check.hostName} ${check.keyType} ${fingerprint(blob)} to ${knownHostsFile}`);
        return;
      }
    }
  }

  /** The login attempts in ssh's order: the agent's keys, then each identity file that exists. */
  private async *authMethods(cfg: ResolvedSshConfig, tried: string[], timer: PausableTimer): AsyncGenerator<AnyAuthMethod> {
    const username = cfg.user;
    if (cfg.identityAgent && existsSync(cfg.identityAgent)) {
      tried.push(`the keys in ssh-agent (${cfg.identityAgent})`);
      yield { type: 'agent', username, agent: cfg.identityAgent };
    }
    for (const file of cfg.identityFiles) {
      if (!existsSync(file)) {
        if (cfg.identityFilesExplicit) tried.push(`${file} (missing)`);
        continue;
      }
      let data: Buffer;
      try {
        data = readFileSync(file);
      } catch (err) {
        tried.push(`${file} (unreadable: ${err instanceof Error ? err.message : String(err)})`);
        continue;
      }
      let parsed = utils.parseKey(data);
      if (parsed instanceof Error && /encrypted|passphrase/i.test(parsed.message)) {
        parsed = await this.unlock(file, data, timer);
        if (parsed instanceof Error) {
          tried.push(`${file} (${parsed.message})`);
          continue;
        }
      }
      if (parsed instanceof Error) {
        tried.push(`${file} (not a usable key: ${parsed.message})`);
        continue;
      }
      const key: ParsedKey = Array.isArray(parsed) ? parsed[0] : parsed;
      tried.push(file);
      yield { type: 'publickey', username, key };
    }
  }

  private async unlock(file: string, data: Buffer, timer: PausableTimer): Promise<ParsedKey | Error> {
    if (!this.hooks.askPassphrase) return new Error('encrypted, and there is no terminal to ask for its passphrase: load it into ssh-agent with `ssh-add`');
    let wrong = false;
    for (let attempt = 0; attempt < 3; attempt++) {
      timer.pause();
      let passphrase: string | undefined;
      try {
        passphrase = await this.hooks.askPassphrase(file, wrong);
      } finally {
        timer.resume();
      }
      if (passphrase === undefined) return new Error('encrypted; no passphrase given');
      const parsed = utils.parseKey(data, passphrase);
      if (!(parsed instanceof Error)) {
        this.hooks.onPassphraseResult?.(file, true);
        return Array.isArray(parsed) ? parsed[0] : parsed;
      }
      this.hooks.onPassphraseResult?.(file, false);
      wrong = true;
    }
    return new Error('wrong passphrase, 3 times');
  }
}

function forward(hop: Client, to: ResolvedSshConfig, hopCfg: ResolvedSshConfig): Promise<Duplex> {
  return new Promise((resolve, reject) => {
    hop.forwardOut('127.0.0.1', 0, to.hostName, to.port, (err, stream) => {
      if (err)
        reject(
          new SshError(
            'unreachable',
            `The jump host ${hopCfg.alias} could not open a connection to ${to.hostName}:${to.port}: ${err.message}. Check the HostName and Port of ${to.alias} as seen from ${hopCfg.alias}, and that AllowTcpForwarding is on there.`,
            to.alias,
          ),
        );
      else resolve(stream);
    });
  });
}

function translateError(err: Error & { level?: string; code?: string }, cfg: ResolvedSshConfig, where: string, tried: string[]): SshError {
  if (err.level === 'client-authentication') {
    const keys = tried.length
      ? `Tried: ${tried.join('; ')}.`
      : `No key was available: no ssh-agent (SSH_AUTH_SOCK is unset) and none of ${cfg.identityFiles.join(', ')} exists.`;
    return new SshError(
      'auth',
      `Could not log in to ${where}: the server refused every key offered. ${keys} ` +
        `Next: add your public key to ~${cfg.user}/.ssh/authorized_keys on the host, or name the right key with IdentityFile for "${cfg.alias}" in ~/.ssh/config; \`ssh -v ${cfg.alias}\` shows what ssh itself offers.`,
      cfg.alias,
    );
  }
  switch (err.code) {
    case 'ECONNREFUSED':
      return new SshError(
        'unreachable',
        `Could not reach ${where}: connection refused, so nothing listens on port ${cfg.port}. Check HostName and Port for "${cfg.alias}" in ~/.ssh/config and that sshd runs on the host.`,
        cfg.alias,
      );
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return new SshError(
        'unreachable',
        `Could not reach ${where}: the name ${cfg.hostName} does not resolve. Check HostName for "${cfg.alias}" in ~/.ssh/config, or your DNS / VPN.`,
        cfg.alias,
      );
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return new SshError(
        'unreachable',
        `Could not reach ${where}: no route to the host. Check your network or VPN, or whether it needs a ProxyJump.`,
        cfg.alias,
      );
    case 'ETIMEDOUT':
      return new SshError(
        'timeout',
        `Could not reach ${where}: the TCP connection timed out. The host may be down or behind a firewall; \`ssh -v ${cfg.alias}\` shows where it stops.`,
        cfg.alias,
      );
    case 'ECONNRESET':
      return new SshError(
        'unreachable',
        `The connection to ${where} was reset during the handshake. The server may limit connections (MaxStartups) or block this address.`,
        cfg.alias,
      );
    default:
      return new SshError('unreachable', `SSH to ${where} failed: ${err.message}. \`ssh -v ${cfg.alias}\` may say more.`, cfg.alias);
  }
}

/** A timeout that does not count the time a prompt waits for the user. */
class PausableTimer {
  private timer?: NodeJS.Timeout;
  private remaining: number;
  private startedAt = 0;
  private stopped = false;

  constructor(
    ms: number,
    private readonly onTimeout: () => void,
  ) {
    this.remaining = ms;
    this.resume();
  }

  pause(): void {
    if (!this.timer) return;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.remaining -= Date.now() - this.startedAt;
  }

  resume(): void {
    if (this.stopped || this.timer) return;
    this.startedAt = Date.now();
    this.timer = setTimeout(
      () => {
        this.stopped = true;
        this.onTimeout();
      },
      Math.max(0, this.remaining),
    );
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}
