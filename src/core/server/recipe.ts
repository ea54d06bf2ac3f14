import { ServerOutput, ServerRecipe } from '../../remote/agentProtocol';
import { shellJoin, shellQuote } from '../../remote/shellQuote';
import { UserServerRecipe } from '../config/serverRecipe';

export type { ServerRecipe } from '../../remote/agentProtocol';
export { parseUserRecipe, type UserServerRecipe } from '../config/serverRecipe';

// The environment every shell and login session has; a command shown without the shell it is typed
// into (no `shellEnv`) names only the variables that say something about the server.
const SHELL_ENV = new Set([
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'SHELL',
  'LANG',
  'TERM',
  'PWD',
  'OLDPWD',
  'SHLVL',
  '_',
  'MAIL',
  'HOSTNAME',
  'LS_COLORS',
  'LESSOPEN',
  'LESSCLOSE',
  'MOTD_SHOWN',
  'DISPLAY',
  'LD_LIBRARY_PATH',
  'PYTHONPATH',
  'VIRTUAL_ENV',
  'CONDA_PREFIX',
  'TMPDIR',
]);
const SESSION_ENV = /^(SSH_|XDG_|DBUS_|LC_)/;
// A name a shell takes as an assignment before a command; others (BASH_FUNC_f%%) go through `env`.
const ASSIGNABLE = /^[A-Za-z_][A-Za-z0-9_]*$/;
const REDACTED = 'REDACTED';

/**
 * How a recipe's environment differs from the shell a command is typed into on the host: what it sets
 * (a value the shell lacks or has otherwise) and what it unsets. A secret reads REDACTED on both sides,
 * so it is always said as set: its real value is filled in on the host.
 */
export function envAgainstShell(env: Record<string, string>, shellEnv: Record<string, string>): { set: [string, string][]; unset: string[] } {
  const set = Object.entries(env)
    .filter(([k, v]) => shellEnv[k] !== v || v.includes(REDACTED))
    .sort(([a], [b]) => a.localeCompare(b));
  const unset = Object.keys(shellEnv)
    .filter((k) => !(k in env))
    .sort();
  return { set, unset };
}

/** The redirections that send stdout and stderr where the recipe says (a file appended to, /dev/null); empty where the agent picks (the tool's log). */
function outputRedirect(recipe: ServerRecipe): string {
  const out = recipe.stdout;
  const err = recipe.stderr;
  const one = (fd: '' | '2', o: ServerOutput | null | undefined): string =>
    o?.kind === 'file' && o.path ? ` ${fd}>> ${shellQuote(o.path)}` : o?.kind === 'null' ? ` ${fd}> /dev/null` : '';
  const first = one('', out);
  if (!first) return '';
  return first + (err && out && err.target === out.target ? ' 2>&1' : one('2', err));
}

function journalBoth(recipe: ServerRecipe): boolean {
  return recipe.stdout?.kind === 'journal' && recipe.stderr?.kind === 'journal';
}

/**
 * The command that starts a recipe, as a user would type it on the host: `cd DIR && VAR=... setsid argv >> LOG 2>&1`.
 * With `shellEnv` (the environment of a shell on the host, from the agent) and a recipe that holds the
 * process's whole environment, the variables are exactly those that differ from that shell, with
 * `env -u` for the ones it must not have: typed into that shell, the command gives the same environment.
 */
export function startCommand(recipe: ServerRecipe, shellEnv?: Record<string, string>): string {
  const manager = recipe.manager;
  if (manager.kind === 'systemd') return `sudo systemctl start ${shellQuote(manager.unit ?? '')}`;
  if (manager.kind === 'docker' || manager.kind === 'podman') return `${manager.kind} start ${shellQuote(manager.container ?? '')}`;
  const { set, unset } =
    shellEnv && recipe.env_complete
      ? envAgainstShell(recipe.env, shellEnv)
      : { set: Object.entries(recipe.env).filter(([k]) => !SHELL_ENV.has(k) && !SESSION_ENV.test(k)), unset: [] as string[] };
  let env: string;
  if (unset.length || set.some(([k]) => !ASSIGNABLE.test(k)))
    env = `env ${[...unset.map((k) => `-u ${shellQuote(k)}`), ...set.map(([k, v]) => shellQuote(`${k}=${v}`))].join(' ')} `;
  else env = set.map(([k, v]) => `${k}=${shellQuote(v)} `).join('');
  const run = `${env}setsid ${journalBoth(recipe) ? 'systemd-cat ' : ''}${shellJoin(recipe.argv)}${outputRedirect(recipe)}`;
  return `${recipe.cwd ? `cd ${shellQuote(recipe.cwd)} && ` : ''}${run}`;
}

function outputInWords(o: ServerOutput): string {
  switch (o.kind) {
    case 'file':
      return `the file ${o.path ?? o.target}${o.deleted ? ' (deleted since; made again)' : ''}`;
    case 'null':
      return '/dev/null';
    case 'tty':
      return `the terminal ${o.path ?? o.target}`;
    case 'pipe':
      return o.peer ? `a pipe to ${o.peer}` : 'a pipe';
    case 'journal':
      return 'the systemd journal';
    case 'container':
      return "the container's log";
    case 'socket':
      return o.peer ? `a socket to ${o.peer}` : 'a socket';
    default:
      return o.target;
  }
}

/** Where a start of the recipe sends its stdout and stderr, and how that compares with where the adopted process sent them. */
export function outputTarget(recipe: ServerRecipe): string {
  const out = recipe.stdout;
  const err = recipe.stderr;
  const toolLog = "the tool's log on the host (~/.cache/inference-bench/server/server-PORT-TIME.log)";
  if (recipe.manager.kind === 'systemd') return 'stdout and stderr: where the unit sends them (systemd keeps them; journalctl -u shows the journal)';
  if (recipe.manager.kind === 'docker' || recipe.manager.kind === 'podman')
    return `stdout and stderr: the container's log (${recipe.manager.kind} logs ${recipe.manager.container ?? ''})`;
  if (!out) return `stdout and stderr: ${toolLog}; where the adopted process sent them was not recorded (an older version adopted it)`;
  const putBack = (o: ServerOutput) => o.kind === 'file' || o.kind === 'null' || (o.kind === 'journal' && journalBoth(recipe));
  const one = (o: ServerOutput) =>
    putBack(o)
      ? `${o.kind === 'file' ? 'appended to ' : ''}${outputInWords(o)}, as before`
      : `${toolLog}: it went to ${outputInWords(o)}, ${o.kind === 'tty' ? 'and a restarted server has no terminal' : 'which a new process cannot be connected to'}`;
  if (!err || err.target === out.target) return `stdout and stderr: ${one(out)}`;
  return `stdout: ${one(out)}; stderr: ${one(err)}`;
}

/** The environment a start gives the server, in words, beside its command. */
export function environmentInWords(recipe: ServerRecipe, shellEnv?: Record<string, string>): string {
  const n = Object.keys(recipe.env).length;
  if (recipe.manager.kind !== 'process') return `environment: the ${recipe.manager.kind === 'systemd' ? "unit's" : "container's"} own`;
  if (!recipe.env_complete) return `environment: only the ${n} variables an older version kept when it adopted the server (not the whole environment)`;
  const secret = Object.values(recipe.env).some((v) => v.includes(REDACTED));
  const against = shellEnv ? envAgainstShell(recipe.env, shellEnv) : undefined;
  return (
    `environment: all ${n} variables the process had` +
    (against ? ` (${against.set.length} set and ${against.unset.length} unset against the shell on the host, as the command shows)` : '') +
    (secret ? '; REDACTED values are filled in on the host from where the tool keeps them' : '')
  );
}

/** What stopping the recipe's process does, as the exact signal to the exact pid. */
export function stopCommand(recipe: ServerRecipe, stopTimeoutS: number): string {
  const manager = recipe.manager;
  if (manager.kind === 'systemd') return `sudo systemctl stop ${shellQuote(manager.unit ?? '')}`;
  if (manager.kind === 'docker' || manager.kind === 'podman') return `${manager.kind} stop ${shellQuote(manager.container ?? '')}`;
  const pid = recipe.identity?.pid ?? '?';
  return `kill -TERM ${pid}   (only if pid ${pid} still has start time ${recipe.identity?.start_ticks ?? '?'} and this command line; kill -KILL ${pid} after ${stopTimeoutS} s)`;
}

/**
 * Whether two recipes start the same server (command line, folder, environment); the process does not
 * count. A recipe adopted by an older version holds a few variables only: it is compared on those.
 */
export function sameRecipe(a: ServerRecipe, b: ServerRecipe): boolean {
  const keys = !a.env_complete !== !b.env_complete ? Object.keys((a.env_complete ? b : a).env) : undefined;
  const env = (r: ServerRecipe) =>
    JSON.stringify(
      Object.entries(r.env)
        .filter(([k]) => !keys || keys.includes(k))
        .sort(([x], [y]) => x.localeCompare(y)),
    );
  return JSON.stringify(a.argv) === JSON.stringify(b.argv) && a.cwd === b.cwd && env(a) === env(b);
}

/** How `changed` differs from `original`, one line per difference, for the consent prompt. */
export function recipeDifferences(original: ServerRecipe, changed: ServerRecipe): string[] {
  const out: string[] = [];
  const before = new Set(original.argv);
  const after = new Set(changed.argv);
  const added = changed.argv.filter((a) => !before.has(a));
  const removed = original.argv.filter((a) => !after.has(a));
  if (added.length) out.push(`adds ${shellJoin(added)}`);
  if (removed.length) out.push(`removes ${shellJoin(removed)}`);
  for (const [k, v] of Object.entries(changed.env)) if (original.env[k] !== v) out.push(`sets ${k}=${shellQuote(v)}`);
  for (const k of Object.keys(original.env)) if (!(k in changed.env)) out.push(`unsets ${k}`);
  if (original.cwd !== changed.cwd) out.push(`runs in ${changed.cwd ?? 'the home folder'}`);
  return out;
}

/** The adopted recipe with the user's laid over it: their command line and folder, their variables over the adopted environment. */
export function withUserRecipe(adopted: ServerRecipe, user: UserServerRecipe): ServerRecipe {
  return { ...adopted, argv: user.argv, cwd: user.cwd ?? adopted.cwd, env: { ...adopted.env, ...(user.env ?? {}) } };
}
