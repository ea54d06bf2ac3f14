import * as vscode from 'vscode';

/** Owns the disposables it registers and releases them, last first, when it is disposed. */
export abstract class Disposable implements vscode.Disposable {
  private readonly owned: vscode.Disposable[] = [];
  private disposed = false;

  protected _register<T extends vscode.Disposable>(d: T): T {
    if (this.disposed) d.dispose();
    else this.owned.push(d);
    return d;
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    while (this.owned.length) this.owned.pop()!.dispose();
  }
}
