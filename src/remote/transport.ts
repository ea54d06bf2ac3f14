import { Readable, Writable } from 'node:stream';

/** How a remote command ended. `signal` is set when it was killed; `lostConnection` when we never learned. */
export interface ExecResult {
  code: number | null;
  signal: string | null;
  lostConnection?: boolean;
  /** Set when the command never started: the connection could not be made (the message says why). */
  error?: Error;
}

export interface ExecOptions {
  /** Extra environment for the command (passed through `env NAME=value`, so it survives any prefix). */
  env?: Record<string, string>;
  /** Data written to the command's stdin, which is then closed (unless keepStdinOpen). */
  stdin?: Buffer | string;
  /** Leave stdin open after `stdin`, for more to be written through ExecHandle.stdin (the agent's heartbeat). */
  keepStdinOpen?: boolean;
  /** Aborting kills the whole process group of the command on the host. */
  signal?: AbortSignal;
}

export interface ExecHandle {
  /** The command's stdin; already ended unless the command was started with keepStdinOpen. Writes after the command ended are dropped. */
  readonly stdin: Writable;
  readonly stdout: Readable;
  readonly stderr: Readable;
  readonly done: Promise<ExecResult>;
  /** Kills the command and every process it started on the host; resolves when they are gone. */
  cancel(): Promise<void>;
}

export type TransportState = 'connecting' | 'connected' | 'reconnecting' | 'disconnected' | 'failed';

/**
 * How every phase reaches the GPU machine: SSH (ssh2) or a local child process.
 * Commands are argv arrays; a transport quotes them for the shell it hands them to.
 */
export interface Transport {
  /** For messages: "ssh gpu-box" or "local". */
  readonly label: string;
  exec(argv: readonly string[], options?: ExecOptions): ExecHandle;
  upload(localPath: string, remotePath: string): Promise<void>;
  download(remotePath: string, localPath: string): Promise<void>;
  close(): Promise<void>;
}

/** Runs a command to the end and collects its output; for short commands such as probes. */
export async function execText(
  transport: Transport,
  argv: readonly string[],
  options?: ExecOptions,
): Promise<{ stdout: string; stderr: string; result: ExecResult }> {
  const handle = transport.exec(argv, options);
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  handle.stdout.on('data', (b: Buffer) => out.push(b));
  handle.stderr.on('data', (b: Buffer) => err.push(b));
  const result = await handle.done;
  return { stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8'), result };
}

/**
 * Cancels `handle` when `signal` aborts, until the command is done: a run's one signal serves every command
 * it starts, so a listener left behind by each finished one would pile up on it.
 */
export function cancelOnAbort(signal: AbortSignal | undefined, handle: ExecHandle): void {
  if (!signal) return;
  if (signal.aborted) {
    void handle.cancel();
    return;
  }
  const onAbort = () => void handle.cancel();
  signal.addEventListener('abort', onAbort, { once: true });
  const forget = () => signal.removeEventListener('abort', onAbort);
  handle.done.then(forget, forget);
}
