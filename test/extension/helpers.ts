// Shared by the extension-host suites (bundled into each of them).
import * as vscode from 'vscode';
import { waitFor as waitForValue } from '../support/waitFor';

export const EXTENSION_ID = 'inference-bench.inference-bench';

export function extension(): vscode.Extension<unknown> {
  const ext = vscode.extensions.getExtension(EXTENSION_ID);
  if (!ext) throw new Error(`${EXTENSION_ID} is not loaded: runTests.js passes the repository as extensionDevelopmentPath`);
  return ext;
}

export function workspaceFolder(): string {
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  if (!folder) throw new Error('no workspace folder is open: runTests.js opens a copy of test/fixtures/runs/workspace');
  return folder;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls every 100 ms until `check` returns a value other than undefined/false, or fails with `what`. */
export function waitFor<T>(what: string, check: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 10_000): Promise<T> {
  return waitForValue(what, check, timeoutMs);
}

/** Every tab of every editor group. */
export function allTabs(): vscode.Tab[] {
  return vscode.window.tabGroups.all.flatMap((g) => g.tabs);
}

export async function closeAllEditors(): Promise<void> {
  await vscode.commands.executeCommand('workbench.action.closeAllEditors');
  await waitFor('every editor to close', () => allTabs().length === 0);
}
