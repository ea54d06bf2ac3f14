// A user's own inference server for the tests that stop, restart and put it back: the simulator
// started as from their shell (a session of its own, not the test's child in any way the tool could
// lean on), and what serves a port as a user would read it with ss and /proc.
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { freePort } from './sshd';

/** The process listening on a port and its command line, as `ss -ltnp` and /proc show them. */
export function listening(port: number): { pid: number; argv: string[] } | undefined {
  const pid = /pid=(\d+)/.exec(execFileSync('ss', ['-ltnpH', `sport = :${port}`], { encoding: 'utf8' }))?.[1];
  return pid ? { pid: Number(pid), argv: readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean) } : undefined;
}

export interface UserServer {
  port: number;
  url: string;
  /** The process as started, before the tool touched it. */
  original: { pid: number; argv: string[] };
  /** Kills whatever serves the port now (the original or the tool's restart of it). */
  kill(): void;
}

/**
 * Starts `python3 -u simulator/vllm_sim.py --port PORT ...args` from `cwd` (the repository root, so
 * that the relative path is what a restart runs again), detached, and waits until /health answers.
 */
export async function startUserServer(args: string[], cwd?: string, timeoutMs = 30_000): Promise<UserServer> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  spawn('python3', ['-u', 'simulator/vllm_sim.py', '--port', String(port), ...args], { cwd, stdio: 'ignore', detached: true }).unref();
  for (const deadline = Date.now() + timeoutMs; !(await fetch(`${url}/health`).catch(() => undefined))?.ok;) {
    if (Date.now() > deadline) throw new Error(`the simulator did not answer ${url}/health within ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const original = listening(port);
  if (!original) throw new Error(`nothing listens on port ${port} though ${url}/health answered`);
  return {
    port,
    url,
    original,
    kill: () => {
      const left = listening(port);
      if (left) process.kill(left.pid, 'SIGKILL');
    },
  };
}
