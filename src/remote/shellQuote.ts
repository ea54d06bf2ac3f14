/**
 * Quotes one argument for a POSIX shell. Everything goes inside single quotes, where the shell
 * expands nothing; a single quote itself is closed, escaped and reopened.
 */
export function shellQuote(arg: string): string {
  if (arg === '') return "''";
  if (/^[A-Za-z0-9_./:=@%+,-]+$/.test(arg)) return arg;
  return `'${arg.replace(/'/g, `'\\''`)}'`;
}

export function shellJoin(argv: readonly string[]): string {
  return argv.map(shellQuote).join(' ');
}
