import { homedir } from 'node:os';
import { join } from 'node:path';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import * as vscode from 'vscode';
import { parseTarget, Target } from '../../core/config/target';
import { listSshHosts, resolveSshConfig } from '../../remote/ssh/config';
import { addTargetToSettings, readSettings } from '../settings';

type HostPick = vscode.QuickPickItem & { value: 'alias' | 'manual' | 'local' | 'config'; alias?: string };

/** The user's SSH config, the file Remote-SSH opens too. */
export function sshConfigFile(): string {
  return join(homedir(), '.ssh', 'config');
}

/** Opens ~/.ssh/config in an editor (created empty, with its folder, when there is none yet). */
export async function openSshConfigFile(): Promise<void> {
  const file = sshConfigFile();
  if (!existsSync(file)) {
    mkdirSync(join(homedir(), '.ssh'), { recursive: true, mode: 0o700 });
    writeFileSync(file, '', { mode: 0o600 });
  }
  await vscode.window.showTextDocument(vscode.Uri.file(file), { preview: false });
}

/**
 * Where the server runs, as Remote-SSH asks it: the Host aliases of ~/.ssh/config (Includes
 * followed), user@host[:port] typed in, this machine, or the config file to add a Host to.
 */
async function pickHost(): Promise<HostPick | undefined> {
  let aliases: string[] = [];
  try {
    aliases = listSshHosts();
  } catch (err) {
    void vscode.window.showWarningMessage(`Inference Bench: could not read ${sshConfigFile()}: ${err instanceof Error ? err.message : String(err)}`);
  }
  const taken = new Set(readSettings().targets.map((t) => t.host));
  const hostItems = aliases.map((alias): HostPick => {
    let where = '';
    try {
      const r = resolveSshConfig(alias);
      where = `${r.user}@${r.hostName}${r.port === 22 ? '' : `:${r.port}`}`;
    } catch {
      // shown without its address
    }
    return { label: `$(remote) ${alias}`, description: where, detail: taken.has(alias) ? 'already a target' : undefined, value: 'alias', alias };
  });
  const items: HostPick[] = [
    ...(hostItems.length ? [{ label: 'SSH config hosts', kind: vscode.QuickPickItemKind.Separator, value: 'alias' } as HostPick, ...hostItems] : []),
    { label: 'other', kind: vscode.QuickPickItemKind.Separator, value: 'manual' },
    { label: '$(edit) Enter user@host[:port]…', description: 'an SSH host not in the config', value: 'manual' },
    { label: '$(vm) This machine', description: 'VS Code already runs on the GPU box', value: 'local' },
    { label: '$(gear) Open SSH Config File', description: sshConfigFile(), value: 'config' },
  ];
  return vscode.window.showQuickPick(items, {
    title: stepTitle('Add Target', 1, ADD_TARGET_STEPS),
    placeHolder: hostItems.length
      ? 'Select an SSH host from ~/.ssh/config, or another machine'
      : 'Where does the inference server run? (~/.ssh/config names no Host yet)',
    matchOnDescription: true,
    ignoreFocusOut: true,
  });
}

/** Add Target's prompts: where, server URL, Python, name (and the address, for a host typed by hand). */
const ADD_TARGET_STEPS = 4;

/** A prompt's title with where it stands, as VS Code's own multi-step inputs show it: "Add Target: name (4/4)". */
export function stepTitle(title: string, step: number, total: number): string {
  return `${title} (${step}/${total})`;
}

/** Splits `user@host:port` the way ssh reads it. */
export function splitSshAddress(text: string): { user?: string; host: string; port?: number } {
  const m = /^(?:([^@]+)@)?([^:]+)(?::(\d+))?$/.exec(text.trim());
  if (!m) return { host: text.trim() };
  return { user: m[1], host: m[2], ...(m[3] ? { port: Number(m[3]) } : {}) };
}

/**
 * Asks for a target step by step, saves it in settings and checks it (the probe connects, finds
 * the GPUs and asks the server what it is; the sidebar shows what it saw). Returns the target added.
 */
export async function addTargetCommand(log: vscode.LogOutputChannel): Promise<Target | undefined> {
  const where = await pickHost();
  if (!where) return undefined;
  if (where.value === 'config') {
    await openSshConfigFile();
    return undefined;
  }
  const raw: Record<string, unknown> = { kind: where.value === 'local' ? 'local' : 'ssh' };
  // A host typed by hand takes one step more.
  const total = ADD_TARGET_STEPS + (where.value === 'manual' ? 1 : 0);
  let step = 1;
  if (where.value === 'alias') raw.host = where.alias;
  if (where.value === 'manual') {
    const host = await vscode.window.showInputBox({
      title: stepTitle('Add Target: SSH host', ++step, total),
      prompt: 'user@host[:port] (a Host alias from ~/.ssh/config works too)',
      ignoreFocusOut: true,
      validateInput: (v) => (v.trim() ? undefined : 'Enter a host'),
    });
    if (!host) return undefined;
    Object.assign(raw, splitSshAddress(host));
  }
  const serverUrl = await vscode.window.showInputBox({
    title: stepTitle('Add Target: server URL', ++step, total),
    prompt: "The inference server's URL as seen from that machine",
    value: 'http://127.0.0.1:8000',
    ignoreFocusOut: true,
  });
  if (serverUrl === undefined) return undefined;
  raw.serverUrl = serverUrl;
  const python = await vscode.window.showInputBox({
    title: stepTitle('Add Target: Python', ++step, total),
    prompt: 'The Python interpreter there (the one with PyTorch and vLLM)',
    value: 'python3',
    ignoreFocusOut: true,
  });
  if (python === undefined) return undefined;
  raw.python = python;
  const names = new Set(readSettings().targets.map((t) => t.name));
  const name = await vscode.window.showInputBox({
    title: stepTitle('Add Target: name', ++step, total),
    prompt: 'The name the sidebar, the runs and the findings use',
    value: (raw.host as string | undefined) ?? 'local',
    ignoreFocusOut: true,
    validateInput: (v) => (!v.trim() ? 'Enter a name' : names.has(v.trim()) ? `A target named "${v.trim()}" exists already` : undefined),
  });
  if (!name) return undefined;
  raw.name = name.trim();
  try {
    const target = parseTarget(raw);
    await addTargetToSettings(Object.fromEntries(Object.entries(target).filter(([, v]) => v !== undefined)));
    log.info(`target added: ${target.name}`);
    return target;
  } catch (err) {
    void vscode.window.showErrorMessage(`Inference Bench: ${err instanceof Error ? err.message : String(err)}`);
    return undefined;
  }
}
