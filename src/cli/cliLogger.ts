import { Logger } from '../core/log';

/** Logs to stderr so that stdout stays clean for tables and JSON; debug lines only with --verbose. */
export function stderrLogger(verbose = false): Logger {
  const write = (level: string) => (message: string) => process.stderr.write(`[${level}] ${message}\n`);
  const quiet = () => undefined;
  return { trace: verbose ? write('trace') : quiet, debug: verbose ? write('debug') : quiet, info: write('info'), warn: write('warn'), error: write('error') };
}
