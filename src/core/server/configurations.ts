// Server configurations compared: the same server started with other flag sets (tensor parallel 8
// against 4 × pipeline 2, expert parallel on, custom all-reduce off), each measured by the same work,
// and the original put back. A configuration is written as one line, `NAME: FLAGS`, where FLAGS
// sets a flag (`--tensor-parallel-size 4`, replacing the value the server runs with), adds a switch
// (`--enable-expert-parallel`) or removes one the server runs with (`!--disable-custom-all-reduce`).
import { shellJoin } from '../../remote/shellQuote';
import { ServerRecipe } from '../../remote/agentProtocol';
import { ServerChangeOptions } from './phaseServer';
import { sameRecipe } from './recipe';
import { argvDifferences } from '../runs/serverConfiguration';
import { ServerChange, ServerContext, ServerControlError } from './serverChange';

/** One flag edit: set (with a value, replacing any the server has), add a switch, or remove a flag and its value. */
export type FlagEdit = { kind: 'set'; flag: string; value: string } | { kind: 'add'; flag: string } | { kind: 'remove'; flag: string };

export interface ServerConfiguration {
  name: string;
  edits: FlagEdit[];
}

// The server must stay where the benchmark reaches it: these are not a configuration's to change.
const FIXED_FLAGS = new Set(['--port', '--host', '--uds']);

/** Parses `NAME: FLAGS` (FLAGS may be empty: the server as it runs). Throws with what is wrong and an example. */
export function parseConfiguration(text: string): ServerConfiguration {
  const colon = text.indexOf(':');
  const name = (colon < 0 ? '' : text.slice(0, colon)).trim();
  if (!name)
    throw new Error(
      `"${text}": a configuration is NAME: FLAGS, for example "tp4pp2: --tensor-parallel-size 4 --pipeline-parallel-size 2" (FLAGS empty for the server as it runs).`,
    );
  const words = text
    .slice(colon + 1)
    .trim()
    .split(/\s+/)
    .filter(Boolean);
  const edits: FlagEdit[] = [];
  for (let i = 0; i < words.length; i++) {
    const word = words[i];
    const removing = word.startsWith('!');
    const [flag, inline] = (removing ? word.slice(1) : word).split(/=(.*)/s, 2);
    if (!/^--?[A-Za-z0-9][\w.-]*$/.test(flag))
      throw new Error(`configuration "${name}": "${word}" is not a flag (flags start with - or --; !--flag removes one).`);
    if (FIXED_FLAGS.has(flag))
      throw new Error(`configuration "${name}": ${flag} is where the benchmark reaches the server and cannot change between configurations.`);
    if (removing) edits.push({ kind: 'remove', flag });
    else if (inline !== undefined) edits.push({ kind: 'set', flag, value: inline });
    else if (i + 1 < words.length && !words[i + 1].startsWith('-') && !words[i + 1].startsWith('!')) edits.push({ kind: 'set', flag, value: words[++i] });
    else edits.push({ kind: 'add', flag });
  }
  return { name, edits };
}

/** Where a flag sits in argv (`--flag value`, `--flag=value` or a switch), and how many words it takes. */
function findFlag(argv: readonly string[], flag: string): { at: number; words: number } | undefined {
  for (let at = 0; at < argv.length; at++) {
    if (argv[at] === flag) return { at, words: at + 1 < argv.length && !argv[at + 1].startsWith('-') ? 2 : 1 };
    if (argv[at].startsWith(`${flag}=`)) return { at, words: 1 };
  }
  return undefined;
}

/** The recipe with the configuration's edits applied to its command line (the process identity dropped: it is a new start). */
export function configuredRecipe(original: ServerRecipe, config: ServerConfiguration): ServerRecipe {
  const argv = [...original.argv];
  for (const edit of config.edits) {
    const found = findFlag(argv, edit.flag);
    if (edit.kind === 'remove') {
      if (!found) throw new Error(`configuration "${config.name}": the server's command line has no ${edit.flag} to remove (${shellJoin(original.argv)}).`);
      argv.splice(found.at, found.words);
    } else if (edit.kind === 'set') {
      if (found) argv.splice(found.at, found.words, edit.flag, edit.value);
      else argv.push(edit.flag, edit.value);
    } else if (!found) argv.push(edit.flag);
  }
  return { ...original, argv, identity: null };
}

/**
 * How a configuration's recipe differs from the original, naming each flag: "sets
 * --max-num-seqs 5 (was 10)", "adds --enforce-eager", "removes --disable-custom-all-reduce";
 * "runs the server as it runs" when nothing differs.
 */
export function configurationChanges(original: ServerRecipe, changed: ServerRecipe): string[] {
  const out = argvDifferences(original.argv, changed.argv);
  return out.length ? out : ['runs the server as it runs'];
}

/** What one configuration gave: the body's value, or why it has none (a start that failed, Cancel). */
export interface ConfigurationOutcome<T> {
  config: ServerConfiguration;
  recipe: ServerRecipe;
  value?: T;
  error?: string;
}

/**
 * Adopts the running server, shows every configuration's command in one consent, then for each:
 * starts the server so (no restart when it already runs so), runs `body`, and goes on to the next;
 * a configuration whose start fails is said and skipped. The original is put back at the end, on
 * Cancel and on any failure. Returns one outcome per configuration, in the order given.
 */
export async function withServerConfigurations<T>(
  ctx: ServerContext,
  configs: readonly ServerConfiguration[],
  options: ServerChangeOptions,
  body: (config: ServerConfiguration, recipe: ServerRecipe) => Promise<T>,
  /** Told the change's folder once the server is adopted, before anything runs. */
  onAdopted?: (changeDir: string) => void,
): Promise<{ outcomes: ConfigurationOutcome<T>[]; change: ServerChange }> {
  if (configs.length < 2) throw new ServerControlError('Comparing configurations needs at least two.', 'usage');
  const names = new Set<string>();
  for (const c of configs) {
    if (names.has(c.name)) throw new ServerControlError(`Two configurations are named "${c.name}": give each its own name.`, 'usage');
    names.add(c.name);
  }
  const { change } = await ServerChange.adopt(ctx, 'configurations compared', { signal: options.signal });
  onAdopted?.(change.dir);
  const original = change.record.original;
  const recipes = configs.map((c) => configuredRecipe(original, c));
  const restarts = recipes.filter((r) => !sameRecipe(r, original)).length;
  const agreed = await options.consent({
    kind: 'restart',
    title: `Restart the server on ${ctx.target.name} (pid ${original.identity?.pid ?? '?'}) ${restarts} time${restarts === 1 ? '' : 's'} to compare ${configs.length} configurations, then put the original back`,
    commands: [
      ...configs.map((c, i) => `${c.name}: ${sameRecipe(recipes[i], original) ? '(the server as it runs)' : change.startCommand(recipes[i])}`),
      `afterwards: ${change.startCommand(original)}`,
    ],
    changes: configs.flatMap((c, i) => configurationChanges(original, recipes[i]).map((d) => `${c.name} ${d}`)),
  });
  if (!agreed) throw new ServerControlError('The server was left as it was: the configurations were not agreed to.', 'declined');
  const outcomes: ConfigurationOutcome<T>[] = [];
  // What serves now: the original as adopted, then each configuration started; nothing after a start that failed.
  let serving: ServerRecipe | undefined = original;
  try {
    for (const [i, config] of configs.entries()) {
      if (options.signal?.aborted) break;
      const recipe = recipes[i];
      try {
        if (!serving || !sameRecipe(serving, recipe)) {
          if (serving) await change.stop(options.onProgress);
          serving = undefined;
          await change.start(recipe, { signal: options.signal, onProgress: options.onProgress });
          serving = recipe;
        }
        if (options.signal?.aborted) break;
        outcomes.push({ config, recipe, value: await body(config, recipe) });
      } catch (err) {
        if (options.signal?.aborted) break;
        if (!(err instanceof ServerControlError)) throw err;
        // This configuration did not start (a flag the server refuses, too little memory): the next may.
        outcomes.push({ config, recipe, error: err.message });
        options.onProgress?.({ stage: 'failed', message: `${config.name}: ${err.message}` });
      }
    }
  } finally {
    await change.restore(options.onProgress);
  }
  return { outcomes, change };
}
