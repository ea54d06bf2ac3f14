import * as vscode from 'vscode';
import { describeTarget, Target } from '../../core/config/target';
import { HostKeyChange, SshError } from '../../remote/ssh/errors';
import { removeKeyCommand, removeKnownHost } from '../../remote/ssh/knownHosts';
import { keyFileStem } from './hostKeyPrompt';

/**
 * Says why a target could not be reached, with the buttons that act on the cause: a changed host
 * key gets its fingerprints, known_hosts opened at the old key, and removing that key (after a yes
 * that shows the exact command); anything else gets Edit Target.
 */
export async function showConnectionFailure(target: Target, err: unknown, what: string): Promise<void> {
  const message = err instanceof Error ? err.message : String(err);
  if (err instanceof SshError && err.kind === 'host-key-changed' && err.hostKeyChange) return showHostKeyChanged(target, err.hostKeyChange, what);
  const pick = await vscode.window.showErrorMessage(`Inference Bench: ${what} (${describeTarget(target)}): ${message}`, 'Edit Target');
  if (pick) await vscode.commands.executeCommand('inferenceBench.editTarget', target.name);
}

const REMOVE = 'Remove Old Key...';
const OPEN = 'Open known_hosts';

async function showHostKeyChanged(target: Target, change: HostKeyChange, what: string): Promise<void> {
  const old = change.known[0];
  const pick = await vscode.window.showErrorMessage(
    `Inference Bench: ${what}: the host key of ${change.knownHostsName} has CHANGED, so the connection was refused. ` +
      `It now offers ${change.offered.keyType} ${change.offered.fingerprint}; ${old.file} line ${old.line} holds ${old.keyType} ${old.fingerprint}. ` +
      'Someone may be intercepting the connection, or the host was reinstalled: check with its owner before removing the old key.',
    REMOVE,
    OPEN,
  );
  if (pick === OPEN) await openKnownHosts(old.file, old.line);
  if (pick === REMOVE) await removeOldKey(target, change);
}

async function openKnownHosts(file: string, line: number): Promise<void> {
  const at = new vscode.Position(line - 1, 0);
  await vscode.window.showTextDocument(vscode.Uri.file(file), { selection: new vscode.Range(at, at), preview: false });
}

/** Removes the old key with the user's yes, then connects again, which asks to trust the new key as ssh would. */
async function removeOldKey(target: Target, change: HostKeyChange): Promise<void> {
  const files = [...new Set(change.known.map((k) => k.file))];
  const commands = files.map((f) => removeKeyCommand(f, change.hostName, change.port));
  const confirm = 'Remove and Connect';
  const answer = await vscode.window.showWarningMessage(
    `Remove the old host key of ${change.knownHostsName}?`,
    {
      modal: true,
      detail: [
        `Target: ${target.name}`,
        `The host now offers: ${change.offered.keyType} ${change.offered.fingerprint}`,
        ...change.known.map((k) => `On file: ${k.keyType} ${k.fingerprint} (${k.file} line ${k.line})`),
        '',
        `Compare the new fingerprint with the host's own (on the host: ssh-keygen -lf /etc/ssh/ssh_host_${keyFileStem(change.offered.keyType)}_key.pub).`,
        `This runs: ${commands.join(' ; ')}`,
        'ssh-keygen keeps the previous file as known_hosts.old. Connecting then asks you to trust the new key.',
      ].join('\n'),
    },
    confirm,
  );
  if (answer !== confirm) return;
  try {
    for (const file of files) await removeKnownHost(file, change.hostName, change.port);
  } catch (err) {
    void vscode.window.showErrorMessage(`Inference Bench: ${err instanceof Error ? err.message : String(err)}`);
    return;
  }
  // A key still on file (a line ssh-keygen did not match) shows this notification again, with Open known_hosts.
  await vscode.commands.executeCommand('inferenceBench.connectTarget', target.name);
}
