import { parseArgs, ParseArgsConfig } from 'node:util';
import { writeFileSync } from 'node:fs';
import { RunStatus, storageProblem } from '../core/runs/runFolder';

/** One `infbench` subcommand. Each lives in its own file under src/cli/commands/. */
export interface CliCommand {
  name: string;
  summary: string;
  usage: string;
  run(argv: string[]): Promise<number>;
}

/** Printed above the figures of a run against the bundled simulator, so nobody mistakes them for a model's. */
export const SIMULATOR_BANNER = "SIMULATOR: the server is the inference-bench simulator; these are not a real model's numbers.\n";

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

/** How a phase command exits once its run ended: 0 completed, 130 cancelled (as Ctrl-C), 1 otherwise, saying why on stderr. */
export function phaseExitCode(command: string, status: RunStatus, reason: string | undefined): number {
  if (status === 'completed') return 0;
  process.stderr.write(`infbench ${command}: ${status}: ${reason ?? ''}\n`);
  return status === 'cancelled' ? 130 : 1;
}

/**
 * Writes an output file the user asked for (--out). A full disk or a read-only folder is said on
 * stderr in those words and returns false, so the command still reports its run (and exits non-zero).
 */
export function writeOutputFile(command: string, path: string, text: string): boolean {
  try {
    writeFileSync(path, text);
    return true;
  } catch (err) {
    process.stderr.write(`infbench ${command}: ${storageProblem(err, path).message} The run folder has the result either way.\n`);
    return false;
  }
}
