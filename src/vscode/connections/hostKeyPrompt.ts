import * as vscode from 'vscode';
import { UnknownHostKeyPrompt } from '../../remote/ssh/connection';

/**
 * Asks whether to trust a host key seen for the first time, as ssh does on the terminal: modal,
 * with the SHA256 fingerprint to compare with the one the machine's owner reads with
 * `ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub`. Trusting appends it to known_hosts.
 */
export async function askTrustHostKey(prompt: UnknownHostKeyPrompt, targetName: string): Promise<boolean> {
  const trust = 'Trust';
  const pick = await vscode.window.showWarningMessage(
    `Inference Bench: the authenticity of host "${prompt.alias}" (${prompt.hostName}) can't be established.`,
    {
      modal: true,
      detail: [
        `Target: ${targetName}`,
        `${prompt.keyType} key fingerprint: ${prompt.fingerprint}`,
        '',
        `Compare it with the host's own key (on the host: ssh-keygen -lf /etc/ssh/ssh_host_${keyFileStem(prompt.keyType)}_key.pub) before trusting it.`,
        `Trust adds the key to ${prompt.knownHostsFile}, as ssh would.`,
      ].join('\n'),
    },
    trust,
  );
  return pick === trust;
}

/** The host key file's name part for a key type: ssh_host_<stem>_key.pub. */
export function keyFileStem(keyType: string): string {
  if (keyType.includes('ed25519')) return 'ed25519';
  if (keyType.includes('ecdsa')) return 'ecdsa';
  return 'rsa';
}
