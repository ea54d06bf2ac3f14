// A user's own inference server for the tests that stop, restart and put it back: the simulator
// started as from their shell (`python3 -u simulator/vllm_sim.py ... > server.log 2>&1` through bash,
// a session of its own, not the test's child in any way the tool could lean on), and what serves a
// port as a user would read it with ss and /proc.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, readlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { shellJoin, shellQuote } from '../../src/remote/shellQuote';
import { freePort } from './sshd';

/** The process listening on a port and its command line, as `ss -ltnp` and /proc show them. */
export function listening(port: number): { pid: number; argv: string[] } | undefined {
  const pid = /pid=(\d+)/.exec(execFileSync('ss', ['-ltnpH', `sport = :${port}`], { encoding: 'utf8' }))?.[1];
  return pid ? { pid: Number(pid), argv: readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean) } : undefined;
}

export interface UserServer {
  port: number;
  url: string;
  /** The file its stdout and stderr go to. */
  log: string;
  /** The process as started, before the tool touched it. */
  original: { pid: number; argv: string[] };
  /** Kills whatever serves the port now (the original or the tool's restart of it). */
  kill(): void;
}

/** What a user compares of a process in /proc: its command line, folder, environment (as a set) and where fd 1 and 2 go. */
export interface ProcessAsSeen {
  cmdline: string[];
  cwd: string;
  environ: string[];
  fd1: string;
  fd2: string;
}

export function processAsSeen(pid: number): ProcessAsSeen {
  const split = (file: string) => readFileSync(`/proc/${pid}/${file}`, 'utf8').split('\0').filter(Boolean);
  return {
    cmdline: split('cmdline'),
    cwd: readlinkSync(`/proc/${pid}/cwd`),
    environ: split('environ').sort(),
    fd1: readlinkSync(`/proc/${pid}/fd/1`),
    fd2: readlinkSync(`/proc/${pid}/fd/2`),
  };
}

export interface UserServerOptions {
  /** The shell's whole environment (default: this process's). */
  env?: Record<string, string>;
  /** Where the shell sends its stdout and stderr (default: server.log in a new temporary folder). */
  log?: string;
  /** The simulator's path as typed (default `simulator/vllm_sim.py`, relative to `cwd`). */
  simulator?: string;
}

/**
 * Starts `python3 -u simulator/vllm_sim.py --port PORT ...args > LOG 2>&1` from a shell in `cwd` (the
 * repository root by default, so that the relative path is what a restart runs again), detached, and
 * waits until /health answers.
 */
export async function startUserServer(args: string[], cwd?: string, timeoutMs = 30_000, options: UserServerOptions = {}): Promise<UserServer> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const log = options.log ?? join(mkdtempSync(join(tmpdir(), 'ib-user-server-')), 'server.log');
  const command = shellJoin(['python3', '-u', options.simulator ?? 'simulator/vllm_sim.py', '--port', String(port), ...args]);
  spawn('/bin/bash', ['-c', `exec ${command} > ${shellQuote(log)} 2>&1`], {
    cwd,
    env: options.env ?? process.env,
    stdio: 'ignore',
    detached: true,
  }).unref();
  for (const deadline = Date.now() + timeoutMs; !(await fetch(`${url}/health`).catch(() => undefined))?.ok;) {
    if (Date.now() > deadline) throw new Error(`the simulator did not answer ${url}/health within ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const original = listening(port);
  if (!original) throw new Error(`nothing listens on port ${port} though ${url}/health answered`);
  return {
    port,
    url,
    log,
    original,
    kill: () => {
      const left = listening(port);
      if (left) process.kill(left.pid, 'SIGKILL');
    },
  };
}
