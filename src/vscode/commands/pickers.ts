import * as vscode from 'vscode';
import { describeTarget, Target } from '../../core/config/target';
import { RunSummary } from '../../shared/results';
import { readSettings } from '../settings';
import type { TreeNode } from '../views/targetsTree';

/** The target a command acts on: the tree node it was invoked on, the only one, or the user's pick. */
export async function pickTarget(arg: unknown, title: string): Promise<Target | undefined> {
  const node = arg as TreeNode | undefined;
  if (node && typeof node === 'object' && 'target' in node && node.target) return node.target;
  const settings = readSettings();
  if (typeof arg === 'string') {
    const named = settings.targets.find((t) => t.name === arg);
    if (named) return named;
  }
  if (!settings.targets.length) {
    const pick = await vscode.window.showWarningMessage(
      `Inference Bench: no target configured${settings.problems.length ? ` (${settings.problems[0]})` : ''}. Add the machine where the inference server runs first.`,
      'Add Target',
    );
    if (pick) await vscode.commands.executeCommand('inferenceBench.addTarget');
    return undefined;
  }
  if (settings.targets.length === 1) return settings.targets[0];
  // Every step of a command's questions stays open when focus leaves it (ignoreFocusOut), as its input
  // boxes do: when a quick input closes, VS Code gives focus back to the webview that had it, and the
  // webview takes it a moment later (src/vs/workbench/contrib/webview/browser/pre/index.html, the
  // 'focus' message), which would close the next step as soon as it opened.
  const picked = await vscode.window.showQuickPick(
    settings.targets.map((t) => ({ label: t.name, description: describeTarget(t), detail: t.serverUrl, target: t })),
    { title, placeHolder: 'Which target?', ignoreFocusOut: true },
  );
  return picked?.target;
}

/** The run a command acts on: the tree node, a run id, or the user's pick among `candidates`. */
export async function pickRun(arg: unknown, candidates: RunSummary[], title: string): Promise<RunSummary | undefined> {
  const node = arg as TreeNode | undefined;
  if (node && typeof node === 'object' && 'run' in node && node.run) return node.run;
  if (typeof arg === 'string') return candidates.find((r) => r.id === arg);
  if (!candidates.length) {
    void vscode.window.showInformationMessage('Inference Bench: no runs yet. Run a phase first (Inference Bench: Run Macro Phase).');
    return undefined;
  }
  const picked = await vscode.window.showQuickPick(
    candidates.map((r) => ({
      label: `${r.phase} · ${r.target}`,
      description: `${new Date(r.startedAt).toLocaleString()} · ${r.status}${r.simulated ? ' · simulator' : ''}`,
      detail: r.headline,
      run: r,
    })),
    { title, placeHolder: 'Which run?', matchOnDescription: true, matchOnDetail: true, ignoreFocusOut: true },
  );
  return picked?.run;
}
