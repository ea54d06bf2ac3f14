/** Why an SSH connection could not be made; the front ends pick wording and buttons from `kind`. */
export type SshErrorKind = 'unreachable' | 'timeout' | 'auth' | 'host-key-unknown' | 'host-key-changed' | 'host-key-revoked' | 'passphrase' | 'config';

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
  ) {
    super(message);
    this.name = 'SshError';
  }

  get retryable(): boolean {
    return this.kind === 'unreachable' || this.kind === 'timeout';
  }
}
