import { randomUUID } from 'node:crypto';

// How a transport kills every process of a command where the command runs (host or container):
// the command records its process group in a file named by the run, and cancel runs a second
// command that signals that whole group (children and grandchildren) with one `kill -SIG -pgid`.
// Records are pruned when their group is gone, so runs cut off by a dropped connection leave no litter.
const RECORDS = 'd="${TMPDIR:-/tmp}/infbench-runs-$(id -u)"; f="$d/$0"';
const RECORD_GROUP = `${RECORDS}; mkdir -p -m 700 "$d"; for g in "$d"/*.pg; do [ -e "$g" ] || break; kill -0 "-$(tr -d ' \\n' < "$g")" 2>/dev/null || rm -f "$g"; done; ` +
  '(cut -d" " -f5 /proc/$$/stat 2>/dev/null || ps -o pgid= -p $$) > "$f"; exec "$@"';
const REMOVE_RECORD = `${RECORDS}; rm -f "$f"`;
// `kill -SIG -pgid` without `--`: dash's kill does not take `--`.
const KILL_SCRIPT = `${RECORDS}; if [ -s "$f" ]; then kill -"$1" "-$(tr -d ' \\n' < "$f")" 2>/dev/null; fi; if [ "$2" = last ]; then rm -f "$f"; fi; exit 0`;

export function newRunId(): string {
  return `${randomUUID()}.pg`;
}

/**
 * The argv that runs `argv` (after `prefix`) with its process group recorded. `newSession` puts it
 * in a group of its own first (`setsid -w` waits, so the exit status stays the command's): needed
 * inside a container prefix, where the group it would inherit is not ours and could hold the
 * server. sshd already gives every session its own group, so plain SSH commands keep theirs, and
 * `exec` keeps their exit signal.
 */
export function groupRecordingArgv(prefix: readonly string[], runId: string, argv: readonly string[], newSession: boolean): string[] {
  const inner = ['sh', '-c', RECORD_GROUP, runId, ...argv];
  return [...prefix, ...(newSession ? ['setsid', '-w'] : []), ...inner];
}

export function killGroupArgv(prefix: readonly string[], runId: string, signal: 'TERM' | 'KILL', last: boolean): string[] {
  return [...prefix, 'sh', '-c', KILL_SCRIPT, runId, signal, last ? 'last' : ''];
}

export function removeRecordArgv(prefix: readonly string[], runId: string): string[] {
  return [...prefix, 'sh', '-c', REMOVE_RECORD, runId];
}

export async function settlesWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const result = await Promise.race([p.then(() => true), new Promise<boolean>((r) => (timer = setTimeout(() => r(false), ms)))]);
  clearTimeout(timer);
  return result;
}
