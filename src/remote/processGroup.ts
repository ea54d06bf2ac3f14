import { randomUUID } from 'node:crypto';

// How a transport kills every process of a command where the command runs (host or container):
// the command records its process group in a file named by the run, and cancel runs a second
// command that signals that whole group (children and grandchildren) with one `kill -SIG -pgid`.
// Records are pruned when their group is gone, so runs cut off by a dropped connection leave no litter.
//
// A record decides which processes get killed, so it lives where only the user can write: in the
// agent's private cache folder (0700), used only when the user owns it and it is no symlink (a
// shared /tmp folder can be made in advance, and its records rewritten, by another user). And a
// group is signalled only when one of its processes carries the run's id in its environment
// (INFBENCH_RUN, read from /proc), so that a stale or altered record never reaches a group the run
// does not own, such as the server's.
const RECORDS = 'd="${XDG_CACHE_HOME:-${HOME:-}/.cache}/inference-bench/runs"; f="$d/$0"; ' + 'own() { [ -d "$1" ] && [ ! -L "$1" ] && [ -O "$1" ]; }';
const RECORD_GROUP =
  `${RECORDS}; umask 077; mkdir -p "$d" 2>/dev/null; ` +
  'if ! own "${d%/*}" || ! own "$d"; then echo "infbench: $d is not a folder of your own (it could not be made, or has another owner, or is a link), so the run' +
  '\'s process group cannot be recorded safely there and nothing was started. Remove it, or point XDG_CACHE_HOME at a folder of your own." >&2; exit 125; fi; ' +
  'chmod 700 "$d"; for g in "$d"/*.pg; do [ -e "$g" ] || break; kill -0 "-$(tr -d \' \\n\' < "$g")" 2>/dev/null || rm -f "$g"; done; ' +
  '(cut -d" " -f5 /proc/$$/stat 2>/dev/null || ps -o pgid= -p $$) > "$f"; export INFBENCH_RUN="$0"; exec "$@"';
const REMOVE_RECORD = `${RECORDS}; own "$d" && rm -f "$f"; exit 0`;
// `grp P` sets $pg to the process group of /proc/P (the field after the name, which may hold
// spaces); `mine P` is true when P was started with this run's INFBENCH_RUN. The walk over /proc,
// needed only once the group's leader has gone, uses builtins alone for every process it passes.
const VERIFY =
  'grp() { pg=; read -r s 2>/dev/null < "/proc/$1/stat" || return 1; s=${s##*) }; set -f; set -- $s; set +f; pg=$3; }; ' +
  'mine() { tr "\\0" "\\n" 2>/dev/null < "/proc/$1/environ" | grep -qxF "INFBENCH_RUN=$id"; }; ' +
  'ours() { grp "$1"; [ "$pg" = "$1" ] && mine "$1" && return 0; for p in /proc/[0-9]*; do p=${p#/proc/}; ' +
  'grp "$p"; [ "$pg" = "$1" ] && mine "$p" && return 0; done; return 1; }';
// `kill -SIG -pgid` without `--`: dash's kill does not take `--`.
const KILL_SCRIPT =
  `${RECORDS}; ${VERIFY}; id="$0"; sig="$1"; last="$2"; ` +
  'if own "$d" && [ -s "$f" ] && [ -O "$f" ]; then g=$(tr -d \' \\n\' < "$f"); ' +
  'case "$g" in ""|*[!0-9]*) ;; *) if ours "$g"; then kill -"$sig" "-$g" 2>/dev/null; fi ;; esac; fi; ' +
  'if [ "$last" = last ]; then own "$d" && rm -f "$f"; fi; exit 0';

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
