import * as vscode from 'vscode';
import { parseTarget } from '../../core/config/target';
import { addTargetToSettings } from '../settings';

/** Asks for a target step by step and saves it in settings. Returns whether one was added. */
export async function addTargetCommand(log: vscode.LogOutputChannel): Promise<boolean> {
  const where = await vscode.window.showQuickPick(
    [
      { label: '$(remote) SSH host', description: 'an alias from ~/.ssh/config or user@host[:port]', value: 'ssh' as const },
      { label: '$(vm) This machine', description: 'VS Code already runs on the GPU box', value: 'local' as const },
    ],
    { title: 'Add Target', placeHolder: 'Where does the inference server run?' },
  );
  if (!where) return false;
  const raw: Record<string, unknown> = { kind: where.value };
  if (where.value === 'ssh') {
    const host = await vscode.window.showInputBox({ title: 'Add Target: SSH host', prompt: 'A Host alias from ~/.ssh/config, or user@host[:port]', ignoreFocusOut: true, validateInput: (v) => (v.trim() ? undefined : 'Enter a host') });
    if (!host) return false;
    const m = /^(?:([^@]+)@)?([^:]+)(?::(\d+))?$/.exec(host.trim());
    if (m) {
      raw.user = m[1];
      raw.host = m[2];
      if (m[3]) raw.port = Number(m[3]);
    } else raw.host = host.trim();
  }
  const serverUrl = await vscode.window.showInputBox({ title: 'Add Target: server URL', prompt: "The inference server's URL as seen from that machine", value: 'http://127.0.0.1:8000', ignoreFocusOut: true });
  if (serverUrl === undefined) return false;
  raw.serverUrl = serverUrl;
  const python = await vscode.window.showInputBox({ title: 'Add Target: Python', prompt: 'The Python interpreter there (the one with PyTorch and vLLM)', value: 'python3', ignoreFocusOut: true });
  if (python === undefined) return false;
  raw.python = python;
  const name = await vscode.window.showInputBox({ title: 'Add Target: name', value: (raw.host as string | undefined) ?? 'local', ignoreFocusOut: true });
  if (!name) return false;
  raw.name = name;
  try {
    const target = parseTarget(raw);
    await addTargetToSettings(Object.fromEntries(Object.entries(target).filter(([, v]) => v !== undefined)));
    log.info(`target added: ${name}`);
    void vscode.window.showInformationMessage(`Inference Bench: target "${name}" added.`);
    return true;
  } catch (err) {
    void vscode.window.showErrorMessage(`Inference Bench: ${err instanceof Error ? err.message : String(err)}`);
    return false;
  }
}
