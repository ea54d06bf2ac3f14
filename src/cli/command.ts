import { parseArgs, ParseArgsConfig } from 'node:util';

/** One `infbench` subcommand. Each lives in its own file under src/cli/commands/. */
export interface CliCommand {
  name: string;
  summary: string;
  usage: string;
  run(argv: string[]): Promise<number>;
}

/** A failure the user can act on: printed without a stack trace. */
export class UsageError extends Error {}

/** node:util's parseArgs, its complaint about a flag turned into a UsageError that points at the command's --help. */
export function parseCommandArgs<T extends ParseArgsConfig>(command: string, config: T): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs(config);
  } catch (err) {
    throw new UsageError(`${err instanceof Error ? err.message : String(err)}. See infbench ${command} --help.`);
  }
}
