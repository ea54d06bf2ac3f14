import { Logger } from '../core/log';
import { printableLines } from '../shared/printable';

/**
 * Logs to stderr so that stdout stays clean for tables and JSON; debug lines only with --verbose. Messages
 * quote what servers and traces wrote: their control characters are shown, never sent to the terminal.
 */
export function stderrLogger(verbose = false): Logger {
  const write = (level: string) => (message: string) => process.stderr.write(`[${level}] ${printableLines(message)}\n`);
  const quiet = () => undefined;
  return { trace: verbose ? write('trace') : quiet, debug: verbose ? write('debug') : quiet, info: write('info'), warn: write('warn'), error: write('error') };
}
