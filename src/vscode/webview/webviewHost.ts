// The extension's side of every webview (the results panel, the kernel-breakdown view): the `ready`
// handshake, the snapshot then increments, and a reply to every request. The host owns the data; a
// view's page is torn down when hidden and says `ready` when drawn again, and nothing is posted to it
// in between. Only types come from `vscode`, so that the unit tests drive it in plain Node.
import type * as vscode from 'vscode';
import { HostToWebview, isWebviewRequest, WebviewNotice, WebviewRequest, WebviewToHost } from '../../shared/protocol';

/** What the host needs of a webview; VS Code's `Webview` is one. */
export interface WebviewPort {
  postMessage(message: HostToWebview): Thenable<boolean>;
  onDidReceiveMessage(listener: (message: WebviewToHost) => unknown): vscode.Disposable;
}

export interface WebviewHostParts {
  /** Runs before the snapshot, on each `ready` (reading the stored runs again, say). */
  prepare?(): Promise<unknown>;
  /** Posts the snapshot (through `post`), for a view that has just said `ready`: all it needs to draw from scratch. */
  snapshot(): void;
  /** Does what a request asks; the view gets `ok`, or the error it threw. */
  answer(request: WebviewRequest): Promise<void>;
  /** A request failed: the error is in the reply too; say it where the user sees it. */
  failed?(request: WebviewRequest, error: string): void;
  /** The view's messages that need no answer. */
  notice?(message: WebviewNotice): void;
}

export class WebviewHost implements vscode.Disposable {
  private ready = false;
  private readonly increments = new Map<string, HostToWebview>();
  private flushTimer: NodeJS.Timeout | undefined;
  /** Increments posted that the view has not taken yet (their postMessage not settled). */
  private inFlight = 0;
  /** Counts the times the view was torn down: a post of an earlier page settling late counts for nothing. */
  private page = 0;
  private readonly listening: vscode.Disposable;

  constructor(
    private readonly port: WebviewPort,
    private readonly parts: WebviewHostParts,
    /** Increments are posted at most this often, the newest of each key (a live run changes many times a second). */
    private readonly incrementMs = 0,
  ) {
    this.listening = port.onDidReceiveMessage((m) => this.receive(m));
  }

  /** Whether the view has drawn its snapshot and takes increments. */
  get isReady(): boolean {
    return this.ready;
  }

  /** The view was hidden, its page torn down: nothing goes out until it says `ready` again. */
  hidden(): void {
    this.ready = false;
    this.increments.clear();
    this.inFlight = 0;
    this.page++;
  }

  /** Posts to a ready view; a view not ready gets the state in its snapshot. */
  post(message: HostToWebview): void {
    if (this.ready) void this.port.postMessage(message);
  }

  /** An increment that a newer one of the same key replaces before it goes out. */
  update(key: string, message: HostToWebview): void {
    if (!this.ready) return;
    this.increments.set(key, message);
    this.flushTimer ??= setTimeout(() => this.flush(), this.incrementMs);
  }

  /**
   * Posts the increments waiting, in the order their keys first came — once the view has taken the last
   * ones. A live run changes several times a second and each increment carries the whole run: posted
   * faster than a loaded host delivers them, they queue in the one channel from the extension host to
   * the workbench, and everything behind them (the progress notification's text among it) arrives late.
   * Held back instead, only the newest of each key goes, and nothing waits behind stale ones.
   */
  flush(): void {
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    if (this.inFlight > 0 || !this.ready) return;
    const waiting = [...this.increments.values()];
    this.increments.clear();
    const page = this.page;
    for (const m of waiting) {
      this.inFlight++;
      const taken = () => {
        if (page !== this.page) return; // the view was hidden meanwhile
        if (--this.inFlight === 0 && this.increments.size) this.flushTimer ??= setTimeout(() => this.flush(), this.incrementMs);
      };
      Promise.resolve(this.port.postMessage(m)).then(taken, taken);
    }
  }

  /** Handles one message of the view; resolves once it is answered (the tests wait on it). */
  async receive(message: WebviewToHost): Promise<void> {
    if (message.type === 'ready') {
      await this.parts.prepare?.();
      this.ready = true;
      // The snapshot holds everything up to now: increments from before it would only go back in time.
      this.increments.clear();
      this.parts.snapshot();
    } else if (isWebviewRequest(message)) {
      try {
        await this.parts.answer(message);
        this.post({ type: 'reply', requestId: message.requestId, ok: true });
      } catch (err) {
        const error = err instanceof Error ? err.message : String(err);
        this.parts.failed?.(message, error);
        this.post({ type: 'reply', requestId: message.requestId, ok: false, error });
      }
    } else this.parts.notice?.(message);
  }

  dispose(): void {
    clearTimeout(this.flushTimer);
    this.listening.dispose();
  }
}
