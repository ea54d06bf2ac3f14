import * as vscode from 'vscode';
import { TargetState } from '../../core/phases/probeState';

/** What the sidebar shows of a target: the probe's findings, and what the server watch sees meanwhile. */
export interface ShownTargetState extends TargetState {
  /** The tool itself has the server down or changed, in words ("stopped for micro"): a plan, not a fault. */
  serverHeld?: string;
}

/** Target states by name, filled by the probe and the server watch; the sidebar listens. */
export class TargetStates implements vscode.Disposable {
  private readonly states = new Map<string, ShownTargetState>();
  private readonly changed = new vscode.EventEmitter<string>();
  readonly onDidChange = this.changed.event;

  get(name: string): ShownTargetState | undefined {
    return this.states.get(name);
  }

  set(name: string, patch: Partial<ShownTargetState>): void {
    this.states.set(name, { ...this.states.get(name), ...patch });
    this.changed.fire(name);
  }

  dispose(): void {
    this.changed.dispose();
  }
}
