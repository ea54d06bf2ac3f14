// A private OpenSSH server on 127.0.0.1 for the integration tests: its own host key, its own
// authorized keys, a free port, stopped by its PID. Nothing of the machine's own sshd is touched.
import { ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, Socket } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';

export interface KeyPair {
  privateFile: string;
  /** `ssh-ed25519 AAAA... comment` */
  publicLine: string;
}

export function makeKey(dir: string, name: string, passphrase = ''): KeyPair {
  const privateFile = join(dir, name);
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', passphrase, '-C', name, '-f', privateFile]);
  return { privateFile, publicLine: readFileSync(`${privateFile}.pub`, 'utf8').trim() };
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

export interface Sshd {
  port: number;
  dir: string;
  hostKey: KeyPair;
  /** The line a known_hosts file needs to trust this server. */
  knownHostsLine: string;
  process: ChildProcess;
  /** PIDs of the per-connection sshd processes (children of the listener). */
  sessionPids(): number[];
  stop(): Promise<void>;
}

export async function startSshd(options: { authorizedKeys: string[]; hostKey?: KeyPair; extraConfig?: string[] }): Promise<Sshd> {
  const dir = mkdtempSync(join(tmpdir(), 'ib-sshd-'));
  const hostKey = options.hostKey ?? makeKey(dir, 'host_ed25519');
  const port = await freePort();
  writeFileSync(join(dir, 'authorized_keys'), `${options.authorizedKeys.join('\n')}\n`);
  const config = join(dir, 'sshd_config');
  writeFileSync(
    config,
    [
      `Port ${port}`,
      'ListenAddress 127.0.0.1',
      `HostKey ${hostKey.privateFile}`,
      `PidFile ${join(dir, 'sshd.pid')}`,
      `AuthorizedKeysFile ${join(dir, 'authorized_keys')}`,
      'StrictModes no',
      'UsePAM no',
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'PermitRootLogin prohibit-password',
      'AllowTcpForwarding yes',
      'Subsystem sftp internal-sftp',
      'LogLevel ERROR',
      ...(options.extraConfig ?? []),
      '',
    ].join('\n'),
  );
  // The privilege-separation folder sshd insists on when started as root.
  if (userInfo().uid === 0 && !existsSync('/run/sshd')) mkdirSync('/run/sshd', { recursive: true, mode: 0o755 });
  const child = spawn('/usr/sbin/sshd', ['-D', '-e', '-f', config], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (b: Buffer) => (stderr += b.toString()));
  const deadline = Date.now() + 10_000;
  while (!(await accepts(port))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`sshd did not start on 127.0.0.1:${port}: ${stderr.trim() || 'no output'}`);
    }
    await new Promise((r) => setTimeout(r, 30));
  }
  const pub = hostKey.publicLine.split(' ');
  return {
    port,
    dir,
    hostKey,
    knownHostsLine: `[127.0.0.1]:${port} ${pub[0]} ${pub[1]}`,
    process: child,
    sessionPids: () => {
      try {
        return execFileSync('pgrep', ['-P', String(child.pid)], { encoding: 'utf8' })
          .trim()
          .split('\n')
          .filter(Boolean)
          .map(Number);
      } catch {
        return [];
      }
    },
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 2000))]);
      if (child.exitCode === null) child.kill('SIGKILL');
    },
  };
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = new Socket();
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
    s.connect(port, '127.0.0.1');
  });
}

/** A client side: an ssh config with one alias per entry, a known_hosts, all in a scratch folder. */
export interface ClientSetup {
  dir: string;
  configFile: string;
  knownHosts: string;
}

export function writeClientConfig(dir: string, hosts: Record<string, string[]>, knownHostsLines: string[]): ClientSetup {
  mkdirSync(dir, { recursive: true });
  const knownHosts = join(dir, 'known_hosts');
  writeFileSync(knownHosts, knownHostsLines.length ? `${knownHostsLines.join('\n')}\n` : '');
  const lines: string[] = [];
  for (const [alias, body] of Object.entries(hosts)) {
    lines.push(`Host ${alias}`, ...body.map((l) => `  ${l}`), `  UserKnownHostsFile ${knownHosts}`, '');
  }
  const configFile = join(dir, 'config');
  writeFileSync(configFile, lines.join('\n'));
  return { dir, configFile, knownHosts };
}

/** The sshd processes below the listener (per-connection monitors and their session children). */
export function sshdSessionTree(server: Sshd): number[] {
  const out: number[] = [];
  const walk = (pid: number) => {
    const r = spawnSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' });
    for (const child of r.stdout.trim().split('\n').filter(Boolean).map(Number)) {
      const comm = spawnSync('ps', ['-o', 'comm=', '-p', String(child)], { encoding: 'utf8' }).stdout.trim();
      if (comm === 'sshd') {
        out.push(child);
        walk(child);
      }
    }
  };
  walk(server.process.pid!);
  return out;
}

/**
 * How many client ends of established TCP connections lead to this port on loopback (read from
 * /proc/net/tcp: state 01 is ESTABLISHED). A connection the kernel accepted into a stopped listener's
 * backlog counts too, before sshd has said a word on it.
 */
export function connectionsTo(port: number): number {
  const rows = readFileSync('/proc/net/tcp', 'utf8').trim().split('\n').slice(1);
  const wanted = `:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  return rows.map((row) => row.trim().split(/\s+/)).filter(([, , remote, state]) => remote.endsWith(wanted) && state === '01').length;
}
