import * as vscode from 'vscode';

/** One GPU as the probe saw it. */
export interface GpuState {
  index: number;
  name: string;
  memoryUsedMiB?: number;
  memoryTotalMiB?: number;
}

/** What the sidebar shows under a target from its probe (the connection's state is its host's, from the connection manager). */
export interface TargetState {
  /** What the probe could not see (no GPUs, say). */
  detail?: string;
  /** vLLM, SGLang, or another OpenAI-compatible server; "server not answering" when it did not. */
  serverKind?: string;
  /** The server is the project's simulator. */
  simulated?: boolean;
  serverVersion?: string;
  model?: string;
  gpus?: GpuState[];
  probedAt?: string;
}

/** Target states by name, filled by the probe; the sidebar listens. */
export class TargetStates implements vscode.Disposable {
  private readonly states = new Map<string, TargetState>();
  private readonly changed = new vscode.EventEmitter<string>();
  readonly onDidChange = this.changed.event;

  get(name: string): TargetState | undefined {
    return this.states.get(name);
  }

  set(name: string, patch: Partial<TargetState>): void {
    this.states.set(name, { ...this.states.get(name), ...patch });
    this.changed.fire(name);
  }

  dispose(): void {
    this.changed.dispose();
  }
}
