// The server configuration a run measured: the adopted recipe's command line and environment,
// hashed, with a short name. Two runs of one configuration may be set side by side (a budget, a
// comparison); two of different configurations may not, unless that is the point (configs).
//
// What counts, and why:
// - argv, every word, in order, with secret values as the agent sends them (REDACTED: a secret's
//   value never leaves the host, so a changed key is the same configuration);
// - the environment, every variable, except those that describe the shell or session the server was
//   started from rather than the server (SESSION_ENV: two starts of one server from two shells or by
//   systemd differ in them, and nothing in vLLM or SGLang reads them);
// - not the profiler's own switches (PROFILER_FLAGS, PROFILER_ENV): a server restarted with the
//   profiler on is the configuration it profiles, so its profile stands beside its macro runs;
// - not the working folder, the user or the process: restore keeps them, and a configuration
//   comparison never changes them.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { RunConfiguration } from '../../shared/results';
import { RunFolder } from './runFolder';

export const UNKNOWN_CONFIGURATION = 'unknown';
/** The name of the server as its user runs it: the recipe adopted before any change the tool made. */
export const PRODUCTION = 'production';

/** What a configuration is made from: a server recipe's command line and environment. */
export interface RecipeWords {
  argv: readonly string[];
  env: Readonly<Record<string, string>>;
}

// Set by a login shell, a terminal, tmux/screen, the SSH client (its locale: SendEnv LANG LC_*) or
// systemd for each start; nothing in the server's work reads them.
const SESSION_ENV =
  /^(SSH_[A-Z_]*|TERM|TERM_[A-Z_]*|COLORTERM|PWD|OLDPWD|SHLVL|_|LS_COLORS|LESSOPEN|LESSCLOSE|MAIL|MOTD_SHOWN|DISPLAY|XAUTHORITY|LANG|LANGUAGE|LC_[A-Z_]*|XDG_SESSION_[A-Z_]*|XDG_RUNTIME_DIR|XDG_DATA_DIRS|XDG_CONFIG_DIRS|DBUS_SESSION_BUS_ADDRESS|TMUX|TMUX_PANE|STY|WINDOW|PS1|PROMPT_COMMAND|HIST[A-Z_]*|INVOCATION_ID|JOURNAL_STREAM|SYSTEMD_EXEC_PID|MANAGERPID|NOTIFY_SOCKET|LISTEN_PID|LISTEN_FDS|LISTEN_FDNAMES|WATCHDOG_PID|WATCHDOG_USEC)$/;
// vLLM >= 0.13 takes --profiler-config (and its dotted --profiler-config.KEY forms); the simulator --profiler-dir.
const PROFILER_FLAGS = ['--profiler-config', '--profiler-dir'];
// The layerwise NVTX ranges an Nsight Systems profile turns on (vLLM's flag, SGLang's): switches without a value.
const PROFILER_SWITCHES = ['--enable-layerwise-nvtx-tracing', '--enable-layerwise-nvtx-marker'];
// vLLM before 0.13 and SGLang: where the torch profiler writes, and its recording options; vLLM's CUDA-profiler switch for nsys.
// A process under nsys also carries what nsys sets for its child (its NSYS_* and the CUDA injection library; the
// tests' stand-in nsys its report path for the simulator): the profile's, not the server's.
const PROFILER_ENV =
  /^(VLLM_TORCH_PROFILER_[A-Z_]*|SGLANG_TORCH_PROFILER_[A-Z_]*|VLLM_TORCH_CUDA_PROFILE|NSYS_[A-Z0-9_]*|CUDA_INJECTION64_PATH|INFBENCH_SIMULATOR_NSYS_REPORT)$/;
// A flag or variable whose value is a secret, as the agent's auth.is_secret_name says (a path to one is not).
const SECRET_NAME = /(^|[-_])(api[-_]?key|key|token|secret|password|passwd|pass|credentials?)$|secret|password/i;
const REDACTED = 'REDACTED';

function isSecretName(name: string): boolean {
  const bare = name.replace(/^-+/, '');
  return !/(file|path|dir)$/i.test(bare) && SECRET_NAME.test(bare);
}

/** argv with every secret flag's value redacted, as the agent sends a recipe (a user's own recipe may hold the value). */
export function redactedArgv(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const eq = a.indexOf('=');
    if (a.startsWith('-') && eq > 0 && isSecretName(a.slice(0, eq))) out.push(`${a.slice(0, eq)}=${REDACTED}`);
    else if (a.startsWith('-') && eq < 0 && isSecretName(a) && i + 1 < argv.length && !argv[i + 1].startsWith('-')) {
      out.push(a, REDACTED);
      i++;
    } else out.push(a);
  }
  return out;
}

/** The command line as it counts for a configuration: secrets redacted, the profilers' switches (torch's, nsys's NVTX ranges) left out. */
export function configurationArgv(argv: readonly string[]): string[] {
  const out: string[] = [];
  const words = redactedArgv(argv);
  for (let i = 0; i < words.length; i++) {
    const a = words[i];
    if (PROFILER_SWITCHES.includes(a)) continue;
    const flag = PROFILER_FLAGS.find((f) => a === f || a.startsWith(`${f}=`) || a.startsWith(`${f}.`));
    if (!flag) {
      out.push(a);
      continue;
    }
    // `--flag VALUE` and `--flag.key VALUE` take the next word; `--flag=VALUE` and `--flag.key=VALUE` do not.
    if (!a.includes('=') && i + 1 < words.length && !words[i + 1].startsWith('--')) i++;
  }
  return out;
}

/** The environment as it counts for a configuration: no session variables, no profiler switches, secrets redacted. */
export function configurationEnv(env: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of Object.keys(env).sort()) {
    if (SESSION_ENV.test(k) || PROFILER_ENV.test(k)) continue;
    out[k] = isSecretName(k) ? REDACTED : env[k];
  }
  return out;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** The configuration's id: 12 hex digits of a sha256 over the canonical JSON of what counts. */
export function configurationId(recipe: RecipeWords): string {
  return sha256(JSON.stringify({ argv: configurationArgv(recipe.argv), env: Object.entries(configurationEnv(recipe.env)) })).slice(0, 12);
}

/**
 * A run's configuration record: the id, the name given, the command line (secrets redacted) and each
 * variable's value as a hash, so that two configurations can be told apart without keeping a value.
 */
export function configurationOf(recipe: RecipeWords, name: string, extra: Partial<RunConfiguration> = {}): RunConfiguration {
  const env = Object.fromEntries(Object.entries(configurationEnv(recipe.env)).map(([k, v]) => [k, sha256(v).slice(0, 8)]));
  return { id: configurationId(recipe), name, argv: configurationArgv(recipe.argv), env, ...extra };
}

/** The record of a run whose configuration could not be known, with why. */
export function unknownConfiguration(reason: string): RunConfiguration {
  return { id: UNKNOWN_CONFIGURATION, name: UNKNOWN_CONFIGURATION, unknownReason: reason };
}

/** A run's configuration; runs made before runs recorded one are unknown. */
export function configurationOfRun(info: { configuration?: RunConfiguration }): RunConfiguration {
  return info.configuration ?? unknownConfiguration('the run was made before runs recorded their server configuration');
}

export const isKnown = (c: RunConfiguration): boolean => c.id !== UNKNOWN_CONFIGURATION;

/** "'slow' (3f2a91c0d7e4)", or "an unknown configuration (why)", for sentences. */
export function describeConfiguration(c: RunConfiguration): string {
  return isKnown(c) ? `'${c.name}' (${c.id})` : `an unknown configuration (${c.unknownReason ?? 'no recipe adopted'})`;
}

/**
 * How configuration `b` differs from `a`, flag by flag and variable by variable: "sets
 * --max-num-seqs 5 (was 10)", "adds --enforce-eager", "removes --disable-custom-all-reduce",
 * "VLLM_ATTENTION_BACKEND differs". Empty when either is unknown or they are the same.
 */
export function configurationDifferences(a: RunConfiguration, b: RunConfiguration): string[] {
  if (!a.argv || !b.argv) return [];
  const out = argvDifferences(a.argv, b.argv);
  const envA = a.env ?? {};
  const envB = b.env ?? {};
  for (const k of Object.keys(envB).sort()) {
    if (!(k in envA)) out.push(`sets ${k}`);
    else if (envA[k] !== envB[k]) out.push(`${k} differs`);
  }
  for (const k of Object.keys(envA).sort()) if (!(k in envB)) out.push(`unsets ${k}`);
  return out;
}

/** The flags of a command line with their values: `--flag VALUE`, `--flag=VALUE`, or a switch (value undefined). */
function flagsOf(argv: readonly string[]): { flags: Map<string, string | undefined>; rest: string[] } {
  const flags = new Map<string, string | undefined>();
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith('-') || a === '-' || /^-\d/.test(a)) {
      rest.push(a);
      continue;
    }
    const eq = a.indexOf('=');
    if (eq > 0) flags.set(a.slice(0, eq), a.slice(eq + 1));
    else if (i + 1 < argv.length && (!argv[i + 1].startsWith('-') || /^-\d/.test(argv[i + 1]))) flags.set(a, argv[++i]);
    else flags.set(a, undefined);
  }
  return { flags, rest };
}

/** How command line `b` differs from `a`, naming each flag: sets (with the value it had), adds, removes. */
export function argvDifferences(a: readonly string[], b: readonly string[]): string[] {
  const before = flagsOf(a);
  const after = flagsOf(b);
  const out: string[] = [];
  if (JSON.stringify(before.rest) !== JSON.stringify(after.rest)) out.push(`runs ${after.rest.join(' ')} (was ${before.rest.join(' ')})`);
  for (const [flag, value] of after.flags) {
    if (!before.flags.has(flag)) out.push(value === undefined ? `adds ${flag}` : `sets ${flag} ${value}`);
    else if (before.flags.get(flag) !== value) {
      const was = before.flags.get(flag);
      out.push(value === undefined ? `sets ${flag} (was ${flag} ${was})` : `sets ${flag} ${value} (was ${was ?? 'a switch'})`);
    }
  }
  for (const flag of before.flags.keys()) if (!after.flags.has(flag)) out.push(`removes ${flag}`);
  return out;
}

/**
 * The short name of configuration `id` of `target`: "production" for the recipe a server change
 * adopted before changing anything (the server as its user runs it), else the name an earlier run of
 * the same configuration carries (a comparison's flag-set name), "production" for the first
 * configuration measured on a target, and otherwise one made from the id.
 */
export function configurationName(workspace: string, target: string, id: string): string {
  const originals = adoptedOriginals(workspace, target);
  if (originals.some((recipe) => configurationId(recipe) === id)) return PRODUCTION;
  let anyKnown = false;
  for (const run of RunFolder.list(workspace)) {
    const c = run.info.configuration;
    if (run.info.target !== target || !c || !isKnown(c)) continue;
    if (c.id === id) return c.name;
    anyKnown = true;
  }
  return anyKnown || originals.length ? `config-${id.slice(0, 6)}` : PRODUCTION;
}

/**
 * The recipes server changes of `target` adopted before they changed anything, from their records
 * (`.inference-bench/server/<change>/change.json`, as src/core/server/serverChange.ts keeps them).
 */
function adoptedOriginals(workspace: string, target: string): RecipeWords[] {
  const root = join(workspace, '.inference-bench', 'server');
  if (!existsSync(root)) return [];
  const out: RecipeWords[] = [];
  for (const name of readdirSync(root)) {
    try {
      const record = JSON.parse(readFileSync(join(root, name, 'change.json'), 'utf8')) as { target?: string; original?: RecipeWords };
      if (record.target === target && Array.isArray(record.original?.argv) && record.original.env) out.push(record.original);
    } catch {
      // not a change folder, or one being written
    }
  }
  return out;
}
