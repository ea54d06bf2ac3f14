import * as vscode from 'vscode';

/** One GPU as the probe saw it. */
export interface GpuState {
  index: number;
  name: string;
  memoryUsedMiB?: number;
  memoryTotalMiB?: number;
}

/** What the sidebar shows under a target: connection state and what the probe found. */
export interface TargetState {
  connection: 'connected' | 'connecting' | 'disconnected' | 'failed';
  detail?: string;
  serverKind?: string;
  serverVersion?: string;
  model?: string;
  gpus?: GpuState[];
  probedAt?: string;
}

/** Target states by name, filled by the connection manager and the probe; the sidebar listens. */
export class TargetStates implements vscode.Disposable {
  private readonly states = new Map<string, TargetState>();
  private readonly changed = new vscode.EventEmitter<string>();
  readonly onDidChange = this.changed.event;

  get(name: string): TargetState | undefined {
    return this.states.get(name);
  }

  set(name: string, patch: Partial<TargetState>): void {
    this.states.set(name, { connection: 'disconnected', ...this.states.get(name), ...patch });
    this.changed.fire(name);
  }

  dispose(): void {
    this.changed.dispose();
  }
}
