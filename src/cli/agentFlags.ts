// The flags a CLI command hands to the agent, parsed and explained from the agent's own table
// (agent/infbench_agent/options.py, generated into src/remote/agentOptions.ts): the CLI keeps no second
// list of their names, value types, defaults or help.
import { AGENT_CLI_FLAGS, AGENT_OPTIONS, AgentOptionCommand, AgentOptionsByCommand, AgentOptionSpec } from '../remote/agentOptions';

type CliFlagsOf<C extends AgentOptionCommand> = (typeof AGENT_CLI_FLAGS)[C];
export type AgentCliFlag<C extends AgentOptionCommand> = keyof CliFlagsOf<C> & string;

/** parseArgs' options for the named agent flags of `command` (an alias is named on its own). */
export function agentFlags<C extends AgentOptionCommand, K extends AgentCliFlag<C>>(command: C, names: readonly K[]): Pick<CliFlagsOf<C>, K> {
  const table = AGENT_CLI_FLAGS[command];
  return Object.fromEntries(names.map((name) => [name, table[name]])) as Pick<CliFlagsOf<C>, K>;
}

/** The spec of a flag named as on the command line, or of the flag it is an alias of. */
function specOf(command: AgentOptionCommand, name: string): AgentOptionSpec {
  const flag = `--${name}`;
  const spec = Object.values(AGENT_OPTIONS[command] as Record<string, AgentOptionSpec>).find((s) => s.flag === flag || s.aliases?.includes(flag));
  if (!spec) throw new Error(`the agent's ${command} has no ${flag}`);
  return spec;
}

const HELP_COLUMN = 28;
const WIDTH = 108;

/** What a flag's value looks like in its usage line: the table's metavar, its choices, else by type. */
function valueWord(spec: AgentOptionSpec): string {
  if (spec.kind === 'flag') return '';
  if (spec.metavar) return spec.metavar;
  if (spec.choices) return spec.choices.join('|');
  return spec.kind === 'int' ? 'N' : spec.kind === 'float' ? 'X' : 'VALUE';
}

/** The default as the usage says it, where the help does not say it already; none for an empty one. */
function defaultWords(spec: AgentOptionSpec): string {
  const d = spec.default;
  if (d === null || d === false || d === '' || d === 0 || (Array.isArray(d) && !d.length) || /\bdefault\b/.test(spec.help)) return '';
  return ` (default ${Array.isArray(d) ? d.join(',') : String(d)})`;
}

/** `text` in lines of at most WIDTH characters, each after the first indented to the help column. */
function wrap(first: string, text: string): string[] {
  const lines: string[] = [];
  let line = first.length < HELP_COLUMN ? first.padEnd(HELP_COLUMN) : `${first}\n${' '.repeat(HELP_COLUMN)}`;
  let room = WIDTH - (line.length - line.lastIndexOf('\n') - 1);
  for (const word of text.split(' ')) {
    if (word.length + 1 > room && line.trim()) {
      lines.push(line.trimEnd());
      line = ' '.repeat(HELP_COLUMN);
      room = WIDTH - HELP_COLUMN;
    }
    line += `${word} `;
    room -= word.length + 1;
  }
  lines.push(line.trimEnd());
  return lines;
}

/**
 * The usage lines of the named agent flags of `command`, each `  --flag VALUE   help (default X)`
 * from the agent's table. `campaign` gives the help where the campaign's default is not the agent's
 * own (macro's sweep of 1,8,32,64 where the agent alone runs 1). An alias is said on its flag's line.
 */
export function agentFlagUsage<C extends AgentOptionCommand>(
  command: C,
  names: readonly AgentCliFlag<C>[],
  campaign: Partial<Record<AgentCliFlag<C>, string>> = {},
): string {
  const lines: string[] = [];
  for (const name of names) {
    const spec = specOf(command, name);
    if (spec.flag !== `--${name}`) continue;
    const value = valueWord(spec);
    const aliases = spec.aliases?.length ? ` (also ${spec.aliases.join(', ')})` : '';
    const help = campaign[name] ?? `${spec.help}${defaultWords(spec)}`;
    lines.push(...wrap(`  ${spec.flag}${value ? ` ${value}` : ''}`, `${help}${aliases}`));
  }
  return lines.join('\n');
}

/**
 * The flag of an agent option as a message names it, from its row: `flagOf('profile', 'numSteps')` is
 * `--num-steps`, so that no message keeps a copy of a flag the table may rename.
 */
export function flagOf<C extends AgentOptionCommand>(command: C, name: keyof AgentOptionsByCommand[C] & string): string {
  return (AGENT_OPTIONS[command] as Record<string, AgentOptionSpec>)[name].flag;
}
