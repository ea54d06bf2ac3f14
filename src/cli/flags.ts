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

/**
 * A value for a flag the CLI hands to the agent, checked against the choices of the agent's own option
 * table (agent/infbench_agent/options.py), so the CLI never keeps a second list of them.
 */
export function agentChoice<C extends AgentOptionCommand, K extends keyof AgentOptionsByCommand[C] & string>(
  command: C,
  name: K,
  value: string | undefined,
): AgentOptionsByCommand[C][K] | undefined {
  return agentValue(command, name, { [specOf(command, name).flag.slice(2)]: value });
}

/** The flags' values as parseArgs gives them: strings, and booleans for the switches. */
export type FlagValues = Readonly<Record<string, string | boolean | readonly string[] | undefined>>;

type Value<C extends AgentOptionCommand, K extends keyof AgentOptionsByCommand[C]> = AgentOptionsByCommand[C][K] | undefined;

function specOf(command: AgentOptionCommand, name: string): AgentOptionSpec {
  return (AGENT_OPTIONS[command] as Record<string, AgentOptionSpec>)[name];
}

/** The flag the user gave a row under, its own or an alias, with its text; undefined when neither was given. */
function givenText(spec: AgentOptionSpec, values: FlagValues): { flag: string; text: string } | undefined {
  const flag = [spec.flag, ...(spec.aliases ?? [])].find((f) => typeof values[f.slice(2)] === 'string');
  return flag === undefined ? undefined : { flag, text: values[flag.slice(2)] as string };
}

/**
 * The value of a flag the CLI hands to the agent, read under its flag or an alias and checked as the
 * agent's option table says: one of its choices; a number, whole for an int; at least its minimum. The
 * message names the flag as typed, so the CLI keeps no second list of flag names or checks; undefined
 * when the flag was not given (a switch: true when given; a repeatable flag: its values).
 */
export function agentValue<C extends AgentOptionCommand, K extends keyof AgentOptionsByCommand[C] & string>(
  command: C,
  name: K,
  values: FlagValues,
): Value<C, K> {
  const spec = specOf(command, name);
  if (spec.kind === 'flag') return ([spec.flag, ...(spec.aliases ?? [])].some((f) => values[f.slice(2)] === true) || undefined) as Value<C, K>;
  if (spec.kind === 'strs') {
    const given = [spec.flag, ...(spec.aliases ?? [])].flatMap((f) => (Array.isArray(values[f.slice(2)]) ? (values[f.slice(2)] as readonly string[]) : []));
    return (given.length ? given : undefined) as Value<C, K>;
  }
  const given = givenText(spec, values);
  return given && (checkedValue(spec, given.flag, given.text) as Value<C, K>);
}

/**
 * The value of a flag of the CLI's own name, `cliName` as typed, that it hands to the agent's row `name`
 * (`infbench server --profiler-delay-iterations` is the agent's `server --profile-delay-iterations`):
 * checked as that row says, the message naming the CLI's flag.
 */
export function agentValueAs<C extends AgentOptionCommand, K extends keyof AgentOptionsByCommand[C] & string>(
  command: C,
  name: K,
  cliName: string,
  values: FlagValues,
): Value<C, K> {
  const text = values[cliName];
  return typeof text === 'string' ? (checkedValue(specOf(command, name), `--${cliName}`, text) as Value<C, K>) : undefined;
}

/** `text` as a row of the table takes it: one of its choices, or a number of its kind and minimum. */
function checkedValue(spec: AgentOptionSpec, flag: string, text: string): string | number {
  if (spec.choices && !spec.choices.includes(text)) throw new UsageError(`${flag} must be one of ${spec.choices.join(', ')}; got "${text}".`);
  if (spec.kind !== 'int' && spec.kind !== 'float') return text;
  return checkedNumber(spec, flag, text);
}

/** `text` as the number an int or float row takes, at least its minimum; the words name `flag`. */
function checkedNumber(spec: AgentOptionSpec, flag: string, text: string): number {
  const v = Number(text);
  const whole = spec.kind === 'int';
  const min = spec.minimum;
  if (Number.isFinite(v) && (!whole || Number.isInteger(v)) && (min === undefined || v >= min)) return v;
  throw new UsageError(`${flag} takes ${numberWords(whole, min)}; got "${text}".`);
}

/** What a number must be, in words: "a positive whole number", "a number of at least 1"... */
function numberWords(whole: boolean, min: number | undefined): string {
  if (whole && min === 1) return 'a positive whole number';
  if (!whole && min === 0) return 'a non-negative number';
  return `${whole ? 'a whole number' : 'a number'}${min === undefined ? '' : ` of at least ${min}`}`;
}

/** What each item of a comma-separated row holds (the table types the row as text: the agent splits it). */
interface ListItems {
  readonly whole: boolean;
  readonly minimum?: number;
  /** `inf` counts as Infinity (request rates: all at once). */
  readonly infinity?: boolean;
}

type ListRows = { readonly [C in AgentOptionCommand]?: { readonly [K in keyof AgentOptionsByCommand[C]]?: ListItems } };

// The rows that take comma-separated numbers; their flag, aliases and example come from the table.
const NUMBER_LISTS: ListRows = {
  micro: { m: { whole: true, minimum: 1 } },
  macro: { concurrency: { whole: true, minimum: 1 }, requestRate: { whole: false, infinity: true }, percentiles: { whole: false } },
};

/**
 * `1,8,64`: the numbers of a comma-separated row (micro's --m, macro's --concurrency), read under its flag
 * or an alias and each checked as NUMBER_LISTS says; the message names the flag as typed and gives the
 * table's example. Undefined when the flag was not given.
 */
export function agentNumberList<C extends AgentOptionCommand, K extends keyof AgentOptionsByCommand[C] & string>(
  command: C,
  name: K,
  values: FlagValues,
): number[] | undefined {
  const items = (NUMBER_LISTS[command] as Record<string, ListItems> | undefined)?.[name];
  if (!items) throw new Error(`the agent's ${command} --${name} is not a list of numbers`);
  const spec = specOf(command, name);
  const given = givenText(spec, values);
  if (!given) return undefined;
  const numbers = listItems(given.text).map((s) => (items.infinity && s.toLowerCase() === 'inf' ? Infinity : Number(s)));
  const fits = (v: number) =>
    (Number.isFinite(v) || (items.infinity && v === Infinity)) && (!items.whole || Number.isInteger(v)) && (items.minimum === undefined || v >= items.minimum);
  if (numbers.length && numbers.every(fits)) return numbers;
  const words = numberWords(items.whole, items.minimum).replace(/^an? /, '').replace('number', 'numbers');
  throw new UsageError(`${given.flag} takes a comma-separated list of ${words}, for example ${given.flag} ${spec.metavar ?? '1,8,32'}; got "${given.text}".`);
}

/** The words of a comma-separated row whose every item is one of `choices` (micro's --skip of its parts); an empty text is none. */
export function agentChoiceList<C extends AgentOptionCommand, K extends keyof AgentOptionsByCommand[C] & string, T extends string>(
  command: C,
  name: K,
  values: FlagValues,
  choices: readonly T[],
): T[] | undefined {
  const given = givenText(specOf(command, name), values);
  if (!given) return undefined;
  const words = listItems(given.text);
  const unknown = words.filter((w) => !(choices as readonly string[]).includes(w));
  if (unknown.length) throw new UsageError(`${given.flag} takes a comma-separated list of ${choices.join(', ')}; got "${unknown.join(',')}".`);
  return words as T[];
}

/** The items of `a, b,,c`: trimmed, the empty ones left out. */
function listItems(text: string): string[] {
  return text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}
