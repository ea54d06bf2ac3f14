import { randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { PassThrough } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ClientChannel } from 'ssh2';
import { shellJoin } from '../shellQuote';
import { ExecHandle, ExecOptions, ExecResult, Transport } from '../transport';
import { SshConnection } from './connection';

// SFTP tuned on loopback (see docs/BENCHMARKS.md): ssh2's defaults (64 outstanding 32 KiB reads)
// reach about half of what 16 outstanding 256 KiB requests do.
export const SFTP_CONCURRENCY = 16;
export const SFTP_CHUNK_BYTES = 256 * 1024;

// Records the command's process group in a file named by the run, where the command runs (host or
// container), so that cancel can kill the whole group (children and grandchildren) with one
// `kill -- -pgid`. sshd makes every session its own group, so on the host the command keeps it and
// `exec` keeps the exit signal. Inside a container prefix the group is not ours (it could hold the
// server), so there `setsid -w` starts a new one and waits for it.
// Records are pruned when their group is gone, so runs cut off by a dropped connection leave no litter.
const RECORDS = 'd="${TMPDIR:-/tmp}/infbench-runs-$(id -u)"; f="$d/$0"';
const RECORD_GROUP = `${RECORDS}; mkdir -p -m 700 "$d"; for g in "$d"/*.pg; do [ -e "$g" ] || break; kill -0 "-$(tr -d ' \\n' < "$g")" 2>/dev/null || rm -f "$g"; done; ` +
  '(cut -d" " -f5 /proc/$$/stat 2>/dev/null || ps -o pgid= -p $$) > "$f"; exec "$@"';
const REMOVE_RECORD = `${RECORDS}; rm -f "$f"`;
// `kill -SIG -pgid` without `--`: dash's kill does not take `--`.
const KILL_SCRIPT = `${RECORDS}; if [ -s "$f" ]; then kill -"$1" "-$(tr -d ' \\n' < "$f")" 2>/dev/null; fi; if [ "$2" = last ]; then rm -f "$f"; fi; exit 0`;

/**
 * Runs commands on an SSH host (optionally inside a container through a command prefix such as
 * `docker exec -i vllm`), over one shared connection. Files go over SFTP, or through the command's
 * stdin/stdout when a prefix puts the command somewhere SFTP cannot reach.
 */
export class SshTransport implements Transport {
  private readonly running = new Set<ExecHandle>();

  constructor(
    readonly connection: SshConnection,
    private readonly prefix: readonly string[] = [],
    private readonly onClose: () => Promise<void> = () => connection.close(),
  ) {}

  get label(): string {
    return this.prefix.length ? `${this.connection.label} (in: ${this.prefix.join(' ')})` : this.connection.label;
  }

  /** Connects now, so that a wrong key or host key shows up before any work starts. */
  async connect(): Promise<void> {
    await this.connection.connect();
  }

  exec(argv: readonly string[], options: ExecOptions = {}): ExecHandle {
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    const runId = `${randomUUID()}.pg`;
    const envArgs = Object.entries(options.env ?? {}).map(([k, v]) => `${k}=${v}`);
    const inner = ['sh', '-c', RECORD_GROUP, runId, ...(envArgs.length ? ['env', ...envArgs] : []), ...argv];
    const command = shellJoin(this.prefix.length ? [...this.prefix, 'setsid', '-w', ...inner] : inner);
    let channel: ClientChannel | undefined;
    let started: () => void = () => undefined;
    const startedPromise = new Promise<void>((r) => (started = r));

    const done = new Promise<ExecResult>((resolve) => {
      this.connection.connect().then(
        (client) => {
          client.exec(command, (err, stream) => {
            started();
            if (err) {
              stderr.end(`${err.message}\n`);
              stdout.end();
              resolve({ code: 255, signal: null, error: new Error(`Could not run a command on ${this.connection.label}: ${err.message}`) });
              return;
            }
            channel = stream;
            let exit: { code: number | null; signal: string | null } | undefined;
            stream.on('exit', (code: number | null, signal?: string) => {
              exit = { code: code ?? null, signal: signal ? (signal.startsWith('SIG') ? signal : `SIG${signal}`) : null };
            });
            stream.pipe(stdout);
            stream.stderr.pipe(stderr);
            stream.on('close', () => {
              // ssh2 closes every channel when the connection goes; without an exit status we never learned how it ended.
              resolve(exit ?? { code: null, signal: null, lostConnection: true });
            });
            if (options.stdin !== undefined) stream.end(options.stdin);
            else stream.end();
          });
        },
        (err: Error) => {
          started();
          stderr.end(`${err.message}\n`);
          stdout.end();
          resolve({ code: 255, signal: null, error: err });
        },
      );
    });

    let cancelling: Promise<void> | undefined;
    const handle: ExecHandle = {
      stdout,
      stderr,
      done,
      cancel: () => {
        cancelling ??= (async () => {
          await startedPromise;
          if (!channel) return;
          await this.killGroup(runId, 'TERM');
          const finished = await settlesWithin(done, 3000);
          if (!finished) await this.killGroup(runId, 'KILL');
          await settlesWithin(done, 5000);
          // Children that ignored SIGTERM or outlived the leader still share the group.
          await this.killGroup(runId, 'KILL', true);
        })();
        return cancelling;
      },
    };
    if (options.signal) {
      if (options.signal.aborted) void handle.cancel();
      else options.signal.addEventListener('abort', () => void handle.cancel(), { once: true });
    }
    this.running.add(handle);
    void done.then((result) => {
      this.running.delete(handle);
      if (channel && !result.lostConnection && !cancelling) void this.runQuiet([...this.prefix, 'sh', '-c', REMOVE_RECORD, runId]);
    });
    return handle;
  }

  private killGroup(runId: string, signal: 'TERM' | 'KILL', last = false): Promise<void> {
    return this.runQuiet([...this.prefix, 'sh', '-c', KILL_SCRIPT, runId, signal, last ? 'last' : '']);
  }

  /** A housekeeping command whose output nobody needs; skipped when the connection is down. */
  private async runQuiet(argv: readonly string[]): Promise<void> {
    if (this.connection.state !== 'connected') return;
    const client = await this.connection.connect();
    await new Promise<void>((resolve) => {
      client.exec(shellJoin(argv), (err, stream) => {
        if (err) return resolve();
        stream.resume();
        stream.stderr.resume();
        stream.on('close', () => resolve());
        stream.end();
      });
    });
  }

  async upload(localPath: string, remotePath: string): Promise<void> {
    if (this.prefix.length) {
      await this.streamThroughCommand(['sh', '-c', 'mkdir -p "$(dirname "$1")" && cat > "$1"', 'sh', remotePath], 'upload', localPath, remotePath);
      return;
    }
    await this.mkdirRemote(dirname(remotePath));
    const sftp = await this.connection.sftp();
    await new Promise<void>((resolve, reject) => {
      sftp.fastPut(localPath, remotePath, { concurrency: SFTP_CONCURRENCY, chunkSize: SFTP_CHUNK_BYTES }, (err) =>
        err ? reject(new Error(`Upload of ${localPath} to ${this.connection.label}:${remotePath} failed: ${err.message}`)) : resolve());
    });
  }

  async download(remotePath: string, localPath: string): Promise<void> {
    await mkdir(dirname(localPath), { recursive: true });
    if (this.prefix.length) {
      await this.streamThroughCommand(['cat', '--', remotePath], 'download', localPath, remotePath);
      return;
    }
    const sftp = await this.connection.sftp();
    await new Promise<void>((resolve, reject) => {
      sftp.fastGet(remotePath, localPath, { concurrency: SFTP_CONCURRENCY, chunkSize: SFTP_CHUNK_BYTES }, (err) =>
        err ? reject(new Error(`Download of ${this.connection.label}:${remotePath} failed: ${err.message}. Check that the file exists and is readable there.`)) : resolve());
    });
  }

  async close(): Promise<void> {
    await Promise.all([...this.running].map((h) => h.cancel()));
    await this.onClose();
  }

  private async mkdirRemote(dir: string): Promise<void> {
    const handle = this.exec(['mkdir', '-p', '--', dir]);
    const err: Buffer[] = [];
    handle.stdout.resume();
    handle.stderr.on('data', (b: Buffer) => err.push(b));
    const r = await handle.done;
    if (r.error) throw r.error;
    if (r.code !== 0) throw new Error(`Could not create ${dir} on ${this.connection.label}: ${Buffer.concat(err).toString().trim()}`);
  }

  /** Through a container prefix the file travels on the command's stdin or stdout. */
  private async streamThroughCommand(argv: string[], direction: 'upload' | 'download', localPath: string, remotePath: string): Promise<void> {
    const client = await this.connection.connect();
    const command = shellJoin([...this.prefix, ...argv]);
    await new Promise<void>((resolve, reject) => {
      client.exec(command, (err, stream) => {
        if (err) return reject(err);
        const errText: Buffer[] = [];
        stream.stderr.on('data', (b: Buffer) => errText.push(b));
        let code: number | null = null;
        stream.on('exit', (c: number | null) => (code = c));
        const transfer = direction === 'upload'
          ? (stream.resume(), pipeline(createReadStream(localPath), stream))
          : (stream.end(), pipeline(stream, createWriteStream(localPath)));
        Promise.all([transfer, new Promise<void>((r) => stream.on('close', () => r()))]).then(() => {
          if (code === 0) resolve();
          else reject(new Error(`The ${direction} of ${remotePath} on ${this.label} failed (exit code ${code ?? 'none'}): ${Buffer.concat(errText).toString().trim()}`));
        }, reject);
      });
    });
  }
}

async function settlesWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const result = await Promise.race([p.then(() => true), new Promise<boolean>((r) => (timer = setTimeout(() => r(false), ms)))]);
  clearTimeout(timer);
  return result;
}
