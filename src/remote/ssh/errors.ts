/** Why an SSH connection could not be made; the front ends pick wording and buttons from `kind`. */
export type SshErrorKind = 'unreachable' | 'timeout' | 'auth' | 'host-key-unknown' | 'host-key-changed' | 'host-key-revoked' | 'passphrase' | 'config';

/** What a changed host key looks like, so a front end can show both keys and offer to remove the old one. */
export interface HostKeyChange {
  /** The host and port connected to, and the name known_hosts stores them under (`[host]:port`). */
  hostName: string;
  port: number;
  knownHostsName: string;
  offered: { keyType: string; fingerprint: string };
  /** Each key on file for the host, where it was found. */
  known: { keyType: string; fingerprint: string; file: string; line: number }[];
}

/**
 * A connection failure with a message that names the host, the likely cause and the next step.
 * `retryable` tells reconnect logic whether trying again could help (a refused port may come back;
 * a wrong key will not).
 */
export class SshError extends Error {
  constructor(
    readonly kind: SshErrorKind,
    message: string,
    readonly host: string,
    /** Set for `host-key-changed`. */
    readonly hostKeyChange?: HostKeyChange,
  ) {
    super(message);
    this.name = 'SshError';
  }

  get retryable(): boolean {
    return this.kind === 'unreachable' || this.kind === 'timeout';
  }
}
