import { readFileSync, readlinkSync } from 'node:fs';
import { hostname } from 'node:os';

/**
 * The process that writes a run folder: the CLI, or the extension host for runs started in VS Code.
 * A run still marked running whose owner is gone was killed (SIGKILL, the out-of-memory killer, a
 * power cut) before it could mark itself.
 */
export interface RunOwner {
  pid: number;
  /**
   * The process's start time as /proc/<pid>/stat field 22 gives it (clock ticks since boot), so
   * that another process that got the same pid later is not taken for the owner. Absent where
   * there is no /proc (macOS, Windows): there the pid alone decides.
   */
  startTime?: string;
  /** The machine it ran on: a workspace on a shared disk may be read from another one, where the pid means nothing. */
  host: string;
  /**
   * Its pid namespace on Linux (`pid:[4026531836]`): a container sharing the host's name and the
   * workspace numbers its processes apart, so its pids are not looked up here.
   */
  pidNamespace?: string;
}

/** This process's pid namespace; undefined where there is no /proc. */
function pidNamespace(): string | undefined {
  try {
    return readlinkSync('/proc/self/ns/pid');
  } catch {
    return undefined;
  }
}

/** What /proc/<pid>/stat says of a process: its state letter and its start time; undefined where it cannot be read. */
export function procStat(pid: number | 'self'): { state: string; startTime: string } | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // Field 2 is the command name in parentheses, which may itself hold spaces and ')': the fields
  // after it start after the last ')'. The rest then begins with field 3 (the state).
  const close = text.lastIndexOf(')');
  if (close < 0) return undefined;
  const rest = text
    .slice(close + 1)
    .trim()
    .split(/\s+/);
  const state = rest[0];
  const startTime = rest[22 - 3];
  return state && startTime && /^\d+$/.test(startTime) ? { state, startTime } : undefined;
}

/** This process as a run's owner. */
export function currentOwner(): RunOwner {
  return { pid: process.pid, startTime: procStat('self')?.startTime, host: hostname(), pidNamespace: pidNamespace() };
}

export type Liveness = 'alive' | 'dead' | 'unknown';

/** Whether a process with `pid` exists; a process of another user still counts (EPERM). */
function pidExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Whether the run's owner is still running: 'dead' when its pid is gone, a zombie, or now belongs
 * to a process that started at another time; 'unknown' when the owner ran on another machine or in
 * another container's pid namespace, or the record is unreadable, which is never taken for dead.
 */
export function ownerLiveness(owner: Partial<RunOwner> | undefined, thisHost = hostname()): Liveness {
  if (!owner || !Number.isInteger(owner.pid) || (owner.pid as number) <= 0) return 'unknown';
  if (owner.host !== undefined && owner.host !== thisHost) return 'unknown';
  if (owner.pidNamespace !== undefined && owner.pidNamespace !== pidNamespace()) return 'unknown';
  const pid = owner.pid as number;
  if (pid === process.pid) return owner.startTime === undefined || owner.startTime === procStat('self')?.startTime ? 'alive' : 'dead';
  if (!pidExists(pid)) return 'dead';
  const now = procStat(pid);
  // A killed process whose parent has not collected it yet is a zombie: it runs no more.
  if (now && (now.state === 'Z' || now.state === 'X')) return 'dead';
  if (owner.startTime !== undefined && now && now.startTime !== owner.startTime) return 'dead';
  return 'alive';
}
