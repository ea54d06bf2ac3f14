import { ServerRecipe } from '../../remote/agentProtocol';
import { shellJoin, shellQuote } from '../../remote/shellQuote';
import { UserServerRecipe } from '../config/serverRecipe';

export type { ServerRecipe } from '../../remote/agentProtocol';
export { parseUserRecipe, type UserServerRecipe } from '../config/serverRecipe';

// The environment every shell has; a command shown to the user names only the variables that say
// something about the server (VLLM_*, CUDA_VISIBLE_DEVICES, NCCL_*, ...).
const SHELL_ENV = new Set(['PATH', 'HOME', 'USER', 'LANG', 'LD_LIBRARY_PATH', 'PYTHONPATH', 'VIRTUAL_ENV', 'CONDA_PREFIX', 'TMPDIR']);

/** The command that starts a recipe, as a user would type it on the host: `cd DIR && VAR=... argv`. */
export function startCommand(recipe: ServerRecipe): string {
  const manager = recipe.manager;
  if (manager.kind === 'systemd') return `sudo systemctl start ${shellQuote(manager.unit ?? '')}`;
  if (manager.kind === 'docker' || manager.kind === 'podman') return `${manager.kind} start ${shellQuote(manager.container ?? '')}`;
  const env = Object.entries(recipe.env)
    .filter(([k]) => !SHELL_ENV.has(k))
    .map(([k, v]) => `${k}=${shellQuote(v)}`);
  const run = `${env.length ? `${env.join(' ')} ` : ''}${shellJoin(recipe.argv)}`;
  return `${recipe.cwd ? `cd ${shellQuote(recipe.cwd)} && ` : ''}setsid ${run}`;
}

/** What stopping the recipe's process does, as the exact signal to the exact pid. */
export function stopCommand(recipe: ServerRecipe, stopTimeoutS: number): string {
  const manager = recipe.manager;
  if (manager.kind === 'systemd') return `sudo systemctl stop ${shellQuote(manager.unit ?? '')}`;
  if (manager.kind === 'docker' || manager.kind === 'podman') return `${manager.kind} stop ${shellQuote(manager.container ?? '')}`;
  const pid = recipe.identity?.pid ?? '?';
  return `kill -TERM ${pid}   (only if pid ${pid} still has start time ${recipe.identity?.start_ticks ?? '?'} and this command line; kill -KILL ${pid} after ${stopTimeoutS} s)`;
}

/** Whether two recipes start the same server (command line, folder, environment); the process does not count. */
export function sameRecipe(a: ServerRecipe, b: ServerRecipe): boolean {
  const env = (r: ServerRecipe) => JSON.stringify(Object.entries(r.env).sort(([x], [y]) => x.localeCompare(y)));
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
