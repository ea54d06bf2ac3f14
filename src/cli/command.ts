/** One `infbench` subcommand. Each lives in its own file under src/cli/commands/. */
export interface CliCommand {
  name: string;
  summary: string;
  usage: string;
  run(argv: string[]): Promise<number>;
}

/** A failure the user can act on: printed without a stack trace. */
export class UsageError extends Error {}
