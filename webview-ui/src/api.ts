// The webview's side of the host connection: typed messages out, replies matched by request id.
import type { HostToWebview, WebviewToHost } from '../../src/shared/protocol';

interface VsCodeApi {
  postMessage(message: WebviewToHost): void;
  getState(): unknown;
  setState(state: unknown): void;
}

declare function acquireVsCodeApi(): VsCodeApi;

// acquireVsCodeApi may be called only once per page.
export const host: VsCodeApi = acquireVsCodeApi();

let nextRequestId = 1;
const pending = new Map<number, (reply: { ok: boolean; error?: string }) => void>();

export function post(message: WebviewToHost): void {
  host.postMessage(message);
}

/** Sends a message that the host answers with a `reply`; resolves with it. */
export function request(build: (requestId: number) => WebviewToHost): Promise<{ ok: boolean; error?: string }> {
  const requestId = nextRequestId++;
  return new Promise((resolve) => {
    pending.set(requestId, resolve);
    host.postMessage(build(requestId));
  });
}

export function onHostMessage(handler: (message: HostToWebview) => void): void {
  window.addEventListener('message', (event: MessageEvent<HostToWebview>) => {
    const message = event.data;
    if (message.type === 'reply') {
      pending.get(message.requestId)?.(message);
      pending.delete(message.requestId);
      return;
    }
    handler(message);
  });
}

/** Reports a failure in the view to the host's log instead of losing it in the webview console. */
export function reportErrors(): void {
  window.addEventListener('error', (e) => post({ type: 'error', message: `${e.message} (${e.filename}:${e.lineno})` }));
  window.addEventListener('unhandledrejection', (e) => post({ type: 'error', message: String(e.reason) }));
}
