import * as vscode from 'vscode';

/**
 * API keys of servers started with --api-key, one per target, kept in VS Code's SecretStorage (the
 * OS keychain), never in settings. Phases hand the key to the agent on stdin.
 */
export class ApiKeyStore {
  constructor(private readonly secrets: vscode.SecretStorage) {}

  get(targetName: string): Thenable<string | undefined> {
    return this.secrets.get(secretKey(targetName));
  }

  /** Asks for the key (hidden input); an empty answer forgets the stored one. Returns whether the key changed. */
  async ask(targetName: string): Promise<boolean> {
    const value = await vscode.window.showInputBox({
      title: `Inference Bench: API key of the server on ${targetName}`,
      prompt: 'The key the server was started with (--api-key, VLLM_API_KEY). Kept in the OS keychain (VS Code SecretStorage); leave empty to forget it.',
      password: true,
      ignoreFocusOut: true,
    });
    if (value === undefined) return false;
    if (value.trim()) await this.secrets.store(secretKey(targetName), value.trim());
    else await this.secrets.delete(secretKey(targetName));
    void vscode.window.showInformationMessage(
      value.trim() ? `Inference Bench: API key for ${targetName} stored.` : `Inference Bench: API key for ${targetName} forgotten.`,
    );
    return true;
  }
}

function secretKey(targetName: string): string {
  return `inferenceBench.apiKey:${targetName}`;
}
