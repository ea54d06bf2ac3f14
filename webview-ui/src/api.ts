// The webview's side of the host connection: typed messages out, replies matched by request id.
import type { HostToWebview, WebviewRequest, WebviewToHost } from '../../src/shared/protocol';
import { Answer, Requests } from './requests';

interface VsCodeApi {
  postMessage(message: WebviewToHost): void;
  getState(): unknown;
  setState(state: unknown): void;
}

declare function acquireVsCodeApi(): VsCodeApi;

// acquireVsCodeApi may be called only once per page.
export const host: VsCodeApi = acquireVsCodeApi();

const requests = new Requests((message) => host.postMessage(message));

export function post(message: WebviewToHost): void {
  host.postMessage(message);
}

/** Sends a message that the host answers with a `reply`; resolves with it, or a failure if none comes in time. */
export function request(build: (requestId: number) => WebviewRequest): Promise<Answer> {
  return requests.request(build);
}

export function onHostMessage(handler: (message: HostToWebview) => void): void {
  window.addEventListener('message', (event: MessageEvent<HostToWebview>) => {
    const message = event.data;
    if (message.type === 'reply') {
      requests.reply(message);
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
