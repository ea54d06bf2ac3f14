import { accessSync, constants, existsSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { parseArgs, ParseArgsConfig } from 'node:util';
import { RunStatus, storageProblem, writeAtomic } from '../core/runs/runFolder';
import { printableLines } from '../shared/printable';

/** One `infbench` subcommand. Each lives in its own file under src/cli/commands/. */
export interface CliCommand {
  name: string;
  summary: string;
  usage: string;
  /** The flags it parses, where they are one table (checked against the usage text by the unit tests). */
  options?: ParseArgsConfig['options'];
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
  // The reason may quote a server's text: its control characters are shown, not sent to the terminal.
  process.stderr.write(`infbench ${command}: ${status}: ${printableLines(reason ?? '')}\n`);
  return status === 'cancelled' ? 130 : 1;
}

/** Refuses an --out that cannot be written before the work runs, rather than after it; `otherwise` says what to do instead. */
export function checkOutPath(out: string, otherwise = 'drop --out'): void {
  const dir = dirname(resolve(out));
  if (existsSync(out) && statSync(out).isDirectory())
    throw new UsageError(`--out ${out} is a folder: give a file name, for example ${join(out, 'result.json')}.`);
  if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new UsageError(`--out ${out}: the folder ${dir} does not exist. Create it, or write elsewhere.`);
  try {
    // The file is written beside itself and renamed: the folder must be writable, not only the file.
    accessSync(dir, constants.W_OK);
  } catch {
    throw new UsageError(`--out ${out}: no permission to write in ${dir}. Write elsewhere, or ${otherwise}.`);
  }
}

/**
 * Writes an output file the user asked for (--out) through a temporary file renamed over it, so a
 * full disk never leaves an empty or partial file. A failure is said on stderr with where the result
 * is (the run folder's result.json, when it could be written there) and returns false.
 */
export function writeOutputFile(command: string, path: string, text: string, runDir?: string): boolean {
  try {
    writeAtomic(path, text);
    return true;
  } catch (err) {
    const kept =
      runDir && existsSync(join(runDir, 'result.json')) ? `The result is in ${join(runDir, 'result.json')}` : 'The events received are in the run folder';
    process.stderr.write(
      `infbench ${command}: ${storageProblem(err, path).message} ${kept}; ${existsSync(path) ? `${path} was left as it was` : `no ${path} was made`}.\n`,
    );
    return false;
  }
}
