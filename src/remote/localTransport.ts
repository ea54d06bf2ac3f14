import { spawn } from 'node:child_process';
import { copyFile, mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { ExecHandle, ExecOptions, ExecResult, Transport } from './transport';

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
    const full = [...this.prefix, ...(envArgs.length ? ['env', ...envArgs] : []), ...argv];
    const child = spawn(full[0], full.slice(1), { detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
    const done = new Promise<ExecResult>((resolve) => {
      child.on('error', (err) => {
        child.stderr.push(`${err.message}\n`);
        resolve({ code: 127, signal: null });
      });
      child.on('close', (code, signal) => resolve({ code, signal }));
    });
    const killGroup = (sig: NodeJS.Signals) => {
      try {
        if (child.pid) process.kill(-child.pid, sig);
      } catch {
        // already gone
      }
    };
    const handle: ExecHandle = {
      stdout: child.stdout,
      stderr: child.stderr,
      done,
      cancel: async () => {
        killGroup('SIGTERM');
        const timer = setTimeout(() => killGroup('SIGKILL'), 3000);
        await done;
        clearTimeout(timer);
        // Children that ignored SIGTERM or outlived the leader still share the group.
        killGroup('SIGKILL');
      },
    };
    if (options.stdin !== undefined) child.stdin.end(options.stdin);
    else child.stdin.end();
    if (options.signal) {
      if (options.signal.aborted) void handle.cancel();
      else options.signal.addEventListener('abort', () => void handle.cancel(), { once: true });
    }
    this.running.add(handle);
    void done.then(() => this.running.delete(handle));
    return handle;
  }

  async upload(localPath: string, remotePath: string): Promise<void> {
    await mkdir(dirname(remotePath), { recursive: true });
    await copyFile(localPath, remotePath);
  }

  async download(remotePath: string, localPath: string): Promise<void> {
    await mkdir(dirname(localPath), { recursive: true });
    await copyFile(remotePath, localPath);
  }

  async close(): Promise<void> {
    await Promise.all([...this.running].map((h) => h.cancel()));
  }
}
