/** A recipe the user wrote (a target's `serverRecipe` setting, or `--recipe FILE`): what the tool starts in place of the adopted one. */
export interface UserServerRecipe {
  argv: string[];
  cwd?: string;
  env?: Record<string, string>;
}

/** Checks a recipe the user wrote, so that a mistake is said before anything is stopped; the message names the field. */
export function parseUserRecipe(value: unknown): UserServerRecipe {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new Error('a server recipe is an object: {"argv": [...], "cwd": "...", "env": {...}}.');
  const v = value as Record<string, unknown>;
  if (!Array.isArray(v.argv) || v.argv.length === 0 || !v.argv.every((a) => typeof a === 'string'))
    throw new Error('a server recipe needs "argv": the command line as a list of strings, for example ["vllm", "serve", "moonshotai/Kimi-K2.5"].');
  if (v.cwd !== undefined && typeof v.cwd !== 'string') throw new Error('a server recipe\'s "cwd" is a folder on the host.');
  const env = v.env ?? {};
  if (typeof env !== 'object' || env === null || Array.isArray(env) || Object.values(env).some((x) => typeof x !== 'string'))
    throw new Error('a server recipe\'s "env" maps variable names to string values.');
  return { argv: v.argv as string[], ...(v.cwd ? { cwd: v.cwd as string } : {}), env: env as Record<string, string> };
}
