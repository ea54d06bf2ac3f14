import { spawn, spawnSync } from 'node:child_process';
import { createReadStream, createWriteStream } from 'node:fs';
import { copyFile, mkdir } from 'node:fs/promises';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { dirname } from 'node:path';
import { groupRecordingArgv, killGroupArgv, newRunId, removeRecordArgv } from './processGroup';
import { cancelOnAbort, ExecHandle, ExecOptions, ExecResult, Transport } from './transport';

/**
 * Runs commands as child processes of this machine: for when VS Code already sits on the GPU box,
 * and for the demo. Each command gets its own process group so that cancel reaches its children.
 */
export class LocalTransport implements Transport {
  readonly label = 'local';
  private readonly running = new Set<ExecHandle>();

  /** @param prefix argv put before every command, for example `['docker', 'exec', '-i', 'vllm']`. */
  constructor(private readonly prefix: readonly string[] = []) {}

  exec(argv: readonly string[], options: ExecOptions = {}): ExecHandle {
    const envArgs = Object.entries(options.env ?? {}).map(([k, v]) => `${k}=${v}`);
    const command = [...(envArgs.length ? ['env', ...envArgs] : []), ...argv];
    // Behind a prefix (a container) the command's processes are not our children: they get a group
    // of their own there, recorded, so that cancel can reach them (killing `docker exec` would not).
    const runId = this.prefix.length ? newRunId() : undefined;
    const full = runId ? groupRecordingArgv(this.prefix, runId, command, true) : command;
    const child = spawn(full[0], full.slice(1), { detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
    const done = new Promise<ExecResult>((resolve) => {
      child.on('error', (err) => {
        child.stderr.push(`${err.message}\n`);
        resolve({ code: 127, signal: null });
      });
      child.on('close', (code, signal) => resolve({ code, signal }));
    });
    const killGroup = (sig: NodeJS.Signals, last = false) => {
      if (runId)
        spawnSync(this.prefix[0], killGroupArgv(this.prefix, runId, sig === 'SIGKILL' ? 'KILL' : 'TERM', last).slice(1), { stdio: 'ignore', timeout: 10_000 });
      try {
        if (child.pid) process.kill(-child.pid, sig);
      } catch {
        // already gone
      }
    };
    // A command that exits before reading its stdin would make our next write fail with EPIPE.
    child.stdin.on('error', () => undefined);
    const handle: ExecHandle = {
      stdin: child.stdin,
      stdout: child.stdout,
      stderr: child.stderr,
      done,
      cancel: async () => {
        killGroup('SIGTERM');
        const timer = setTimeout(() => killGroup('SIGKILL'), 3000);
        await done;
        clearTimeout(timer);
        // Children that ignored SIGTERM or outlived the leader still share the group.
        killGroup('SIGKILL', true);
      },
    };
    if (options.stdin !== undefined) child.stdin.write(options.stdin);
    if (!options.keepStdinOpen) child.stdin.end();
    cancelOnAbort(options.signal, handle);
    this.running.add(handle);
    void done.then(() => {
      this.running.delete(handle);
      if (runId) spawn(this.prefix[0], removeRecordArgv(this.prefix, runId).slice(1), { stdio: 'ignore' }).on('error', () => undefined);
    });
    return handle;
  }

  async upload(localPath: string, remotePath: string): Promise<void> {
    if (this.prefix.length) {
      // Into the container: through the command's stdin.
      await this.throughPrefix(['sh', '-c', 'mkdir -p "$(dirname "$1")" && cat > "$1"', 'sh', remotePath], createReadStream(localPath), undefined, remotePath);
      return;
    }
    await mkdir(dirname(remotePath), { recursive: true });
    await copyFile(localPath, remotePath);
  }

  async download(remotePath: string, localPath: string): Promise<void> {
    await mkdir(dirname(localPath), { recursive: true });
    if (this.prefix.length) {
      await this.throughPrefix(['cat', '--', remotePath], undefined, createWriteStream(localPath), remotePath);
      return;
    }
    await copyFile(remotePath, localPath);
  }

  private async throughPrefix(argv: string[], input: Readable | undefined, output: Writable | undefined, remotePath: string): Promise<void> {
    const child = spawn(this.prefix[0], [...this.prefix.slice(1), ...argv], { stdio: ['pipe', 'pipe', 'pipe'] });
    const err: Buffer[] = [];
    child.stderr.on('data', (b: Buffer) => err.push(b));
    const exited = new Promise<number | null>((resolve, reject) => {
      child.on('error', reject);
      child.on('close', (code) => resolve(code));
    });
    await Promise.all([
      input ? pipeline(input, child.stdin) : Promise.resolve(child.stdin.end()),
      output ? pipeline(child.stdout, output) : Promise.resolve(child.stdout.resume()),
    ]);
    const code = await exited;
    if (code !== 0)
      throw new Error(`Copying ${remotePath} through "${this.prefix.join(' ')}" failed (exit code ${code}): ${Buffer.concat(err).toString().trim()}`);
  }

  async close(): Promise<void> {
    await Promise.all([...this.running].map((h) => h.cancel()));
  }
}
