/** What the core needs of a log: VS Code's LogOutputChannel and the CLI's stderr logger both fit. */
export interface Logger {
  trace(message: string): void;
  debug(message: string): void;
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

export const silentLogger: Logger = { trace() {}, debug() {}, info() {}, warn() {}, error() {} };
