// Flag values several commands parse the same way, with the same message when one is wrong.
import { UsageError } from './command';
import { KernelFamilySpec } from '../core/trace/types';
import { AGENT_OPTIONS, AgentOptionCommand, AgentOptionsByCommand, AgentOptionSpec } from '../remote/agentOptions';

/** `--family CATEGORY=REGEX`: a kernel family tried before the built-in ones. */
export function kernelFamilyFlag(text: string): KernelFamilySpec {
  const eq = text.indexOf('=');
  if (eq <= 0) throw new UsageError(`--family takes CATEGORY=REGEX, got "${text}".`);
  return { category: text.slice(0, eq), pattern: text.slice(eq + 1) };
}

/** A flag that takes a count: 1, 2, 3, ...; undefined when the flag was not given. */
export function positiveWholeNumber(text: string | undefined, flag: string): number | undefined {
  if (text === undefined) return undefined;
  const v = Number(text);
  if (!Number.isInteger(v) || v < 1) throw new UsageError(`${flag} takes a positive whole number; got "${text}".`);
  return v;
}

/** A flag that takes any finite number; undefined when the flag was not given. */
export function finiteNumber(text: string | undefined, flag: string): number | undefined {
  if (text === undefined) return undefined;
  const v = Number(text);
  if (!Number.isFinite(v)) throw new UsageError(`${flag} takes a number; got "${text}".`);
  return v;
}

/** A flag that takes a number above 0. */
export function positiveNumber(text: string | undefined, flag: string): number | undefined {
  if (text === undefined) return undefined;
  const v = Number(text);
  if (!(v > 0)) throw new UsageError(`${flag} takes a positive number; got "${text}".`);
  return v;
}

/** A flag that takes a finite number of 0 or more. */
export function nonNegativeNumber(text: string | undefined, flag: string): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!Number.isFinite(n) || n < 0) throw new UsageError(`${flag} takes a non-negative number; got "${text}".`);
  return n;
}

/** A flag that takes seconds: a finite number above 0. */
export function positiveSeconds(text: string | undefined, flag: string): number | undefined {
  if (text === undefined) return undefined;
  const v = Number(text);
  if (!(v > 0) || !Number.isFinite(v)) throw new UsageError(`${flag} takes a number of seconds above 0, for example ${flag} 60; got "${text}".`);
  return v;
}

/** `1,8,32`: a comma-separated list of numbers; `inf` counts as Infinity where allowed (request rates). */
export function numberList(text: string | undefined, flag: string, allowInfinity = false): number[] | undefined {
  if (text === undefined) return undefined;
  const values = text
    .split(',')
    .filter((s) => s.trim())
    .map((s) => (allowInfinity && s.trim().toLowerCase() === 'inf' ? Infinity : Number(s)));
  if (!values.length || values.some((v) => Number.isNaN(v)))
    throw new UsageError(`${flag} takes a comma-separated list of numbers, for example ${flag} 1,8,32; got "${text}".`);
  return values;
}

/** `1,8,64`: a comma-separated list of positive whole numbers. */
export function positiveWholeNumberList(text: string | undefined, flag: string): number[] | undefined {
  if (text === undefined) return undefined;
  const values = text
    .split(',')
    .filter((s) => s.trim())
    .map(Number);
  if (!values.length || values.some((v) => !Number.isInteger(v) || v < 1)) {
    throw new UsageError(`${flag} takes a comma-separated list of positive whole numbers, for example ${flag} 1,8,64; got "${text}".`);
  }
  return values;
}

/**
 * A value for a flag the CLI hands to the agent, checked against the choices of the agent's own option
 * table (agent/infbench_agent/options.py), so the CLI never keeps a second list of them.
 */
export function agentChoice<C extends AgentOptionCommand, K extends keyof AgentOptionsByCommand[C] & string>(
  command: C,
  name: K,
  value: string | undefined,
): AgentOptionsByCommand[C][K] | undefined {
  const spec = (AGENT_OPTIONS[command] as Record<string, AgentOptionSpec>)[name];
  return agentValue(command, name, { [spec.flag.slice(2)]: value });
}

/** The flags' values as parseArgs gives them: strings, and booleans for the switches. */
export type FlagValues = Readonly<Record<string, string | boolean | readonly string[] | undefined>>;

/**
 * The value of a flag the CLI hands to the agent, read under its flag or an alias and checked as the
 * agent's option table says: one of its choices; a number, whole for an int; at least its minimum. The
 * message names the flag as typed, so the CLI keeps no second list of flag names or checks; undefined
 * when the flag was not given.
 */
export function agentValue<C extends AgentOptionCommand, K extends keyof AgentOptionsByCommand[C] & string>(
  command: C,
  name: K,
  values: FlagValues,
): AgentOptionsByCommand[C][K] | undefined {
  const spec = (AGENT_OPTIONS[command] as Record<string, AgentOptionSpec>)[name];
  const flag = [spec.flag, ...(spec.aliases ?? [])].find((f) => typeof values[f.slice(2)] === 'string');
  if (flag === undefined) return undefined;
  const text = values[flag.slice(2)] as string;
  if (spec.choices && !spec.choices.includes(text)) throw new UsageError(`${flag} must be one of ${spec.choices.join(', ')}; got "${text}".`);
  if (spec.kind !== 'int' && spec.kind !== 'float') return text as AgentOptionsByCommand[C][K];
  return checkedNumber(spec, flag, text) as AgentOptionsByCommand[C][K];
}

/** `text` as the number an int or float row takes, at least its minimum; the words name `flag`. */
function checkedNumber(spec: AgentOptionSpec, flag: string, text: string): number {
  const v = Number(text);
  const whole = spec.kind === 'int';
  const min = spec.minimum;
  if (Number.isFinite(v) && (!whole || Number.isInteger(v)) && (min === undefined || v >= min)) return v;
  const kind =
    whole && min === 1
      ? 'a positive whole number'
      : !whole && min === 0
        ? 'a non-negative number'
        : `${whole ? 'a whole number' : 'a number'}${min === undefined ? '' : ` of at least ${min}`}`;
  throw new UsageError(`${flag} takes ${kind}; got "${text}".`);
}
