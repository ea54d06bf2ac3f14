import * as vscode from 'vscode';

/**
 * Passphrases of encrypted SSH keys: asked once, kept in VS Code's SecretStorage (the OS keychain),
 * keyed by the key file's path. A stored passphrase the key rejects is forgotten and asked again.
 */
export class PassphraseStore {
  // What was last offered per key file, and whether it came from storage (to store or forget it).
  private readonly offered = new Map<string, { value: string; stored: boolean }>();

  constructor(private readonly secrets: vscode.SecretStorage) {}

  async ask(keyFile: string, previousWasWrong: boolean): Promise<string | undefined> {
    if (!previousWasWrong) {
      const stored = await this.secrets.get(secretKey(keyFile));
      if (stored !== undefined) {
        this.offered.set(keyFile, { value: stored, stored: true });
        return stored;
      }
    }
    const value = await vscode.window.showInputBox({
      title: `Inference Bench: passphrase for ${keyFile}`,
      prompt: previousWasWrong
        ? 'That passphrase did not unlock the key; try again.'
        : 'The SSH key is encrypted. The passphrase is kept in the OS keychain (VS Code SecretStorage).',
      password: true,
      ignoreFocusOut: true,
    });
    if (value !== undefined) this.offered.set(keyFile, { value, stored: false });
    return value;
  }

  /** Called by the connection once the key was tried with the passphrase last offered. */
  async result(keyFile: string, accepted: boolean): Promise<void> {
    const offered = this.offered.get(keyFile);
    this.offered.delete(keyFile);
    if (!offered) return;
    if (accepted && !offered.stored) await this.secrets.store(secretKey(keyFile), offered.value);
    if (!accepted && offered.stored) await this.secrets.delete(secretKey(keyFile));
  }

  forget(keyFile: string): Thenable<void> {
    return this.secrets.delete(secretKey(keyFile));
  }
}

function secretKey(keyFile: string): string {
  return `inferenceBench.sshPassphrase:${keyFile}`;
}
