import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname, posix } from 'node:path';
import { PassThrough } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ClientChannel, SFTPWrapper } from 'ssh2';
import { groupRecordingArgv, killGroupArgv, newRunId, removeRecordArgv, settlesWithin } from '../processGroup';
import { shellJoin } from '../shellQuote';
import { cancelOnAbort, ExecHandle, ExecOptions, ExecResult, Transport } from '../transport';
import { SshConnection } from './connection';

// SFTP tuned on loopback (see docs/BENCHMARKS.md): 16 requests in flight of the largest size
// OpenSSH's sftp-server serves in one reply (255 KiB, its SFTP_MAX_READ_LENGTH). 256 KiB would split
// every request into 255 KiB plus a 1 KiB remainder.
export const SFTP_CONCURRENCY = 16;
export const SFTP_CHUNK_BYTES = 255 * 1024;

/**
 * Runs commands on an SSH host (optionally inside a container through a command prefix such as
 * `docker exec -i vllm`), over one shared connection. Files go over SFTP, or through the command's
 * stdin/stdout when a prefix puts the command somewhere SFTP cannot reach.
 */
export class SshTransport implements Transport {
  private readonly running = new Set<ExecHandle>();
  private readonly housekeeping = new Set<Promise<void>>();

  constructor(
    readonly connection: SshConnection,
    private readonly prefix: readonly string[] = [],
    private readonly onClose: () => Promise<void> = () => connection.close(),
    /** Called as close() begins, before it waits for the commands it cancels: the share is given up from then on. */
    private readonly onClosing: () => void = () => undefined,
  ) {
    connection.on('state', this.onState);
  }

  // Commands cut off by a dropped connection keep running on the host (no terminal, no SIGHUP);
  // once the connection is back they are killed, so that a lost run does not hold the GPUs or load
  // the server behind the user's back.
  private readonly orphans = new Set<string>();
  private readonly onState = (state: string) => {
    if (state !== 'connected' || this.orphans.size === 0) return;
    const runIds = [...this.orphans];
    this.orphans.clear();
    void (async () => {
      for (const runId of runIds) await this.killGroup(runId, 'TERM');
      await new Promise((r) => setTimeout(r, 2000).unref());
      for (const runId of runIds) await this.killGroup(runId, 'KILL', true);
    })();
  };

  get label(): string {
    return this.prefix.length ? `${this.connection.label} (in: ${this.prefix.join(' ')})` : this.connection.label;
  }

  /** Connects now, so that a wrong key or host key shows up before any work starts. */
  async connect(): Promise<void> {
    await this.connection.connect();
  }

  exec(argv: readonly string[], options: ExecOptions = {}): ExecHandle {
    const stdin = new PassThrough();
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    if (options.stdin !== undefined) stdin.write(options.stdin);
    if (!options.keepStdinOpen) stdin.end();
    const runId = newRunId();
    const envArgs = Object.entries(options.env ?? {}).map(([k, v]) => `${k}=${v}`);
    const command = shellJoin(groupRecordingArgv(this.prefix, runId, [...(envArgs.length ? ['env', ...envArgs] : []), ...argv], this.prefix.length > 0));
    let channel: ClientChannel | undefined;
    let started: () => void = () => undefined;
    const startedPromise = new Promise<void>((r) => (started = r));

    const done = new Promise<ExecResult>((resolve) => {
      this.connection.connect().then(
        () => {
          this.connection.exec(command).then(
            (stream) => {
              started();
              channel = stream;
              let exit: { code: number | null; signal: string | null } | undefined;
              stream.on('exit', (code: number | null, signal?: string) => {
                exit = { code: code ?? null, signal: signal ? (signal.startsWith('SIG') ? signal : `SIG${signal}`) : null };
              });
              stream.pipe(stdout);
              stream.stderr.pipe(stderr);
              stream.on('close', () => {
                // Whatever is written to stdin from now on goes nowhere.
                stdin.unpipe(stream);
                stdin.resume();
                // ssh2 closes every channel when the connection goes; without an exit status we never learned how it ended.
                if (!exit) this.orphans.add(runId);
                resolve(exit ?? { code: null, signal: null, lostConnection: true });
              });
              stream.on('error', () => undefined);
              stdin.pipe(stream);
            },
            (err: Error) => {
              started();
              stdin.resume();
              stderr.end(`${err.message}\n`);
              stdout.end();
              resolve({ code: 255, signal: null, error: new Error(`Could not run a command on ${this.connection.label}: ${err.message}`) });
            },
          );
        },
        (err: Error) => {
          started();
          stdin.resume();
          stderr.end(`${err.message}\n`);
          stdout.end();
          resolve({ code: 255, signal: null, error: err });
        },
      );
    });

    let cancelling: Promise<void> | undefined;
    const handle: ExecHandle = {
      stdin,
      stdout,
      stderr,
      done,
      cancel: () => {
        cancelling ??= this.track(
          (async () => {
            await startedPromise;
            if (!channel) return;
            await this.killGroup(runId, 'TERM');
            const finished = await settlesWithin(done, 3000);
            if (!finished) await this.killGroup(runId, 'KILL');
            await settlesWithin(done, 5000);
            // Children that ignored SIGTERM or outlived the leader still share the group.
            await this.killGroup(runId, 'KILL', true);
          })(),
        );
        return cancelling;
      },
    };
    cancelOnAbort(options.signal, handle);
    this.running.add(handle);
    void done.then((result) => {
      this.running.delete(handle);
      if (channel && !result.lostConnection && !cancelling) void this.track(this.runQuiet(removeRecordArgv(this.prefix, runId)));
    });
    return handle;
  }

  private killGroup(runId: string, signal: 'TERM' | 'KILL', last = false): Promise<void> {
    return this.runQuiet(killGroupArgv(this.prefix, runId, signal, last));
  }

  /** Work that close() waits for, so that a cancel's last kill and its record's removal still reach the host. */
  private track(work: Promise<void>): Promise<void> {
    this.housekeeping.add(work);
    const done = () => void this.housekeeping.delete(work);
    work.then(done, done);
    return work;
  }

  /**
   * A housekeeping command whose output nobody needs; skipped when the connection is down. It never
   * throws: it runs from cancel and cleanup, often while the connection is going away.
   */
  private async runQuiet(argv: readonly string[]): Promise<void> {
    if (this.connection.state !== 'connected') return;
    try {
      const stream = await this.connection.exec(shellJoin(argv));
      await new Promise<void>((resolve) => {
        stream.resume();
        stream.stderr.resume();
        stream.on('close', () => resolve());
        stream.end();
      });
    } catch {
      // the connection went away meanwhile; the records are pruned by the next run on the host
    }
  }

  async upload(localPath: string, remotePath: string): Promise<void> {
    if (this.prefix.length) {
      await this.streamThroughCommand(['sh', '-c', 'mkdir -p "$(dirname "$1")" && cat > "$1"', 'sh', remotePath], 'upload', localPath, remotePath);
      return;
    }
    const sftp = await this.connection.sftp();
    await sftpMkdirP(sftp, posix.dirname(remotePath), this.connection.label);
    await new Promise<void>((resolve, reject) => {
      sftp.fastPut(localPath, remotePath, { concurrency: SFTP_CONCURRENCY, chunkSize: SFTP_CHUNK_BYTES }, (err) =>
        err ? reject(new Error(`Upload of ${localPath} to ${this.connection.label}:${remotePath} failed: ${err.message}`)) : resolve(),
      );
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
        err
          ? reject(new Error(`Download of ${this.connection.label}:${remotePath} failed: ${err.message}. Check that the file exists and is readable there.`))
          : resolve(),
      );
    });
  }

  async close(): Promise<void> {
    this.onClosing();
    this.connection.off('state', this.onState);
    await Promise.all([...this.running].map((h) => h.cancel()));
    // Cancels begun before (Ctrl-C) may still be on their last kill; bounded, for a host that stopped answering.
    await settlesWithin(Promise.all([...this.housekeeping]), 15_000);
    await this.onClose();
  }

  /** Through a container prefix the file travels on the command's stdin or stdout. */
  private async streamThroughCommand(argv: string[], direction: 'upload' | 'download', localPath: string, remotePath: string): Promise<void> {
    const stream = await this.connection.exec(shellJoin([...this.prefix, ...argv]));
    await new Promise<void>((resolve, reject) => {
      const errText: Buffer[] = [];
      stream.stderr.on('data', (b: Buffer) => errText.push(b));
      let code: number | null = null;
      stream.on('exit', (c: number | null) => (code = c));
      const transfer =
        direction === 'upload'
          ? (stream.resume(), pipeline(createReadStream(localPath), stream))
          : (stream.end(), pipeline(stream, createWriteStream(localPath)));
      Promise.all([transfer, new Promise<void>((r) => stream.on('close', () => r()))]).then(() => {
        if (code === 0) resolve();
        else
          reject(
            new Error(`The ${direction} of ${remotePath} on ${this.label} failed (exit code ${code ?? 'none'}): ${Buffer.concat(errText).toString().trim()}`),
          );
      }, reject);
    });
  }
}

/** `mkdir -p` over SFTP: no process started on the host for it. */
async function sftpMkdirP(sftp: SFTPWrapper, dir: string, where: string): Promise<void> {
  const isDir = (p: string) => new Promise<boolean>((resolve) => sftp.stat(p, (err, st) => resolve(!err && st.isDirectory())));
  if (dir === '' || dir === '.' || dir === '/' || (await isDir(dir))) return;
  await sftpMkdirP(sftp, posix.dirname(dir), where);
  await new Promise<void>((resolve, reject) =>
    sftp.mkdir(dir, (err) => {
      if (!err) return resolve();
      // Made by someone else meanwhile is fine.
      void isDir(dir).then((ok) =>
        ok ? resolve() : reject(new Error(`Could not create ${dir} on ${where}: ${err.message}. Check that the folder above it exists and is writable.`)),
      );
    }),
  );
}
