// An agent command line from typed options, checked against the agent's own option table.
import { AGENT_OPTIONS, AgentOptionCommand, AgentOptionsByCommand, AgentOptionSpec, ServerAction, ServerAgentOptions } from './agentOptions';

export class AgentOptionError extends Error {}

/**
 * The agent's arguments for `command`, in the order the options are given. The types admit only the
 * flags the agent's argparse defines for that command (both come from agent/infbench_agent/options.py);
 * an option that reaches here untyped is refused by name rather than sent for the agent to reject.
 * Undefined and false options are left out.
 */
export function agentOptionArgs<C extends AgentOptionCommand>(command: C, options: AgentOptionsByCommand[C]): string[] {
  const table = AGENT_OPTIONS[command] as Record<string, AgentOptionSpec | undefined>;
  const argv: string[] = [];
  for (const [name, value] of Object.entries(options) as [string, unknown][]) {
    if (value === undefined || value === false) continue;
    const spec = table[name];
    if (!spec) throw new AgentOptionError(`The agent's ${command} command takes no option "${name}".`);
    if (spec.kind === 'flag') argv.push(spec.flag);
    else if (spec.kind === 'strs') for (const item of value as readonly string[]) argv.push(spec.flag, item);
    else argv.push(spec.flag, String(value));
  }
  return argv;
}

/** The agent's `server` command line: the action, then its options as the table writes them. */
export function serverArgs(action: ServerAction, options: ServerAgentOptions): string[] {
  return [action, ...agentOptionArgs('server', options)];
}

/**
 * The flag that tells the agent's `command` the API key comes on stdin's first line, from its table: the
 * key itself is never an argument (a host's process list shows those). A command without it is refused.
 */
export function apiKeyArgs(command: string): string[] {
  if (!takesApiKey(command)) throw new AgentOptionError(`The agent's ${command} command takes no API key.`);
  return agentOptionArgs(command as AgentOptionCommand, { apiKeyStdin: true });
}

/** Whether the agent's `command` takes the server's API key (over stdin). */
export function takesApiKey(command: string): boolean {
  return command in AGENT_OPTIONS && 'apiKeyStdin' in AGENT_OPTIONS[command as AgentOptionCommand];
}
