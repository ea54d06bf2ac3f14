import * as vscode from 'vscode';
import { TargetState } from '../../core/phases/probeState';

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
