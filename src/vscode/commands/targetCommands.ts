import * as vscode from 'vscode';
import { describeTarget, parseTarget, Target } from '../../core/config/target';
import { showConnectionFailure } from '../connections/connectionFailure';
import { ConnectionManager } from '../connections/connectionManager';
import { RunController } from '../runs/runController';
import { readSettings, replaceTargetInSettings, SECTION } from '../settings';
import { openSshConfigFile, splitSshAddress } from './addTarget';
import { pickTarget } from './pickers';

type Field = 'host' | 'serverUrl' | 'python' | 'commandPrefix' | 'nsys' | 'name' | 'json' | 'sshConfig';

/** The target's entry as saved: only the fields it sets. */
function saved(target: Target): Record<string, unknown> {
  return Object.fromEntries(Object.entries(target).filter(([, v]) => v !== undefined));
}

/**
 * Edit Target: pick a field, change it, saved back into the same settings entry. A change of host,
 * Python or prefix makes the next phase open a new connection (the connection manager compares).
 */
export async function editTargetCommand(arg: unknown): Promise<Target | undefined> {
  const target = await pickTarget(arg, 'Edit which target?');
  if (!target) return undefined;
  const items: (vscode.QuickPickItem & { field: Field })[] = [
    ...(target.kind === 'ssh' ? [{ label: 'SSH host', description: describeTarget(target), field: 'host' as const }] : []),
    { label: 'Server URL', description: target.serverUrl, field: 'serverUrl' },
    { label: 'Python', description: target.python, field: 'python' },
    {
      label: 'Command prefix',
      description: target.commandPrefix?.join(' ') ?? 'none',
      detail: 'put before every command there, for example docker exec -i vllm',
      field: 'commandPrefix',
    },
    {
      label: 'Nsight Systems (nsys)',
      description: target.nsys ?? 'found on the host',
      detail: 'the nsys there, for the profiler phase with Nsight Systems',
      field: 'nsys',
    },
    { label: 'Name', description: target.name, field: 'name' },
    { label: '$(json) Edit in settings.json', field: 'json' },
    ...(target.kind === 'ssh' ? [{ label: '$(gear) Open SSH Config File', field: 'sshConfig' as const }] : []),
  ];
  const pick = await vscode.window.showQuickPick(items, { title: `Edit Target: ${target.name}`, placeHolder: 'What to change?', ignoreFocusOut: true });
  if (!pick) return undefined;
  if (pick.field === 'json') {
    await vscode.commands.executeCommand('workbench.action.openWorkspaceSettingsFile');
    return undefined;
  }
  if (pick.field === 'sshConfig') {
    await openSshConfigFile();
    return undefined;
  }
  const next: Record<string, unknown> = saved(target);
  const ask = (prompt: string, value: string, validate?: (v: string) => string | undefined) =>
    vscode.window.showInputBox({ title: `Edit Target: ${target.name} · ${pick.label}`, prompt, value, ignoreFocusOut: true, validateInput: validate });
  if (pick.field === 'host') {
    const v = await ask('A Host alias from ~/.ssh/config, or user@host[:port]', describeTarget(target), (x) => (x.trim() ? undefined : 'Enter a host'));
    if (v === undefined) return undefined;
    delete next.user;
    delete next.port;
    Object.assign(next, splitSshAddress(v));
  } else if (pick.field === 'serverUrl') {
    const v = await ask("The inference server's URL as seen from that machine", target.serverUrl);
    if (v === undefined) return undefined;
    next.serverUrl = v.trim();
  } else if (pick.field === 'python') {
    const v = await ask('The Python interpreter there (the one with PyTorch and vLLM)', target.python);
    if (v === undefined) return undefined;
    next.python = v.trim();
  } else if (pick.field === 'commandPrefix') {
    const v = await ask('Words put before every command, separated by spaces (empty for none)', target.commandPrefix?.join(' ') ?? '');
    if (v === undefined) return undefined;
    const words = v.trim().split(/\s+/).filter(Boolean);
    if (words.length) next.commandPrefix = words;
    else delete next.commandPrefix;
  } else if (pick.field === 'nsys') {
    const v = await ask(
      'The path of nsys on that machine (empty: look on PATH, in /usr/local/cuda*, /opt/nvidia/nsight-systems* and Nsight Compute installs)',
      target.nsys ?? '',
    );
    if (v === undefined) return undefined;
    if (v.trim()) next.nsys = v.trim();
    else delete next.nsys;
  } else {
    const others = new Set(
      readSettings()
        .targets.map((t) => t.name)
        .filter((n) => n !== target.name),
    );
    const v = await ask('The name the sidebar, the runs and the findings use (runs already made keep the old name)', target.name, (x) =>
      !x.trim() ? 'Enter a name' : others.has(x.trim()) ? `A target named "${x.trim()}" exists already` : undefined,
    );
    if (v === undefined) return undefined;
    next.name = v.trim();
  }
  try {
    const updated = parseTarget(next, `${SECTION}.targets`);
    await replaceTargetInSettings(target.name, saved(updated));
    return updated;
  } catch (err) {
    void vscode.window.showErrorMessage(`Inference Bench: ${err instanceof Error ? err.message : String(err)}`);
    return undefined;
  }
}

/** Remove Target: after a modal that says what stays (its runs), out of settings and disconnected. */
export async function removeTargetCommand(arg: unknown, controller: RunController, connections: ConnectionManager): Promise<boolean> {
  const target = await pickTarget(arg, 'Remove which target?');
  if (!target) return false;
  const running = controller.isRunning(target.name);
  const answer = await vscode.window.showWarningMessage(
    `Remove the target "${target.name}" (${describeTarget(target)})?`,
    {
      modal: true,
      detail: `${running ? 'Its running phase is stopped. ' : ''}Its runs stay in the workspace, listed under "Other runs"; the SSH config is not touched.`,
    },
    'Remove',
  );
  if (answer !== 'Remove') return false;
  if (running) controller.stop(target.name);
  try {
    await replaceTargetInSettings(target.name, undefined);
  } catch (err) {
    void vscode.window.showErrorMessage(`Inference Bench: could not remove "${target.name}": ${err instanceof Error ? err.message : String(err)}`);
    return false;
  }
  // The host's connection goes with its last target; another target on the same host keeps it.
  const others = connections.targetsSharing(target, readSettings().targets).filter((t) => t.name !== target.name);
  if (!others.length) await connections.disconnectTarget(target);
  return true;
}

/** Connect: opens (or reuses) the host's connection, which stays open until Disconnect, as a run's does. Returns whether it connected. */
export async function connectTargetCommand(arg: unknown, connections: ConnectionManager): Promise<boolean> {
  const target = await pickTarget(arg, 'Connect to which target?');
  if (!target) return false;
  try {
    const connection = await vscode.window.withProgress({ location: vscode.ProgressLocation.Window, title: `Connecting to ${target.name}` }, () =>
      connections.connect(target),
    );
    await connection.release();
    return true;
  } catch (err) {
    void showConnectionFailure(target, err, `could not connect to ${target.name}`);
    return false;
  }
}

/** Disconnect: closes the host's connection now; a phase still running on it is stopped first. */
export async function disconnectTargetCommand(arg: unknown, controller: RunController, connections: ConnectionManager): Promise<void> {
  const target = await pickTarget(arg, 'Disconnect which target?');
  if (!target) return;
  const sharing = connections.targetsSharing(target, readSettings().targets).filter((t) => controller.isRunning(t.name));
  if (sharing.length) {
    const answer = await vscode.window.showWarningMessage(
      `${sharing.map((t) => t.name).join(', ')} ${sharing.length === 1 ? 'is' : 'are'} running over this connection. Disconnect and stop ${sharing.length === 1 ? 'it' : 'them'}?`,
      { modal: true },
      'Disconnect',
    );
    if (answer !== 'Disconnect') return;
    for (const t of sharing) controller.stop(t.name);
  }
  await connections.disconnectTarget(target);
}
