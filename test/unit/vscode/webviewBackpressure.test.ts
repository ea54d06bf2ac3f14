import * as assert from 'node:assert/strict';
import { HostToWebview, WebviewToHost } from '../../../src/shared/protocol';
import { WebviewHost } from '../../../src/vscode/webview/webviewHost';

// A view on a loaded host: each postMessage settles only when the test lets it, as VS Code's does once the
// workbench has the message. The host only posts to it and hears from it, which is all a view's page does.
function slowView() {
  const posted: HostToWebview[] = [];
  const settle: (() => void)[] = [];
  let listener: ((m: WebviewToHost) => unknown) | undefined;
  return {
    posted,
    /** The workbench takes every message posted so far. */
    take: async () => {
      for (const s of settle.splice(0)) s();
      await new Promise((r) => setImmediate(r));
    },
    port: {
      postMessage: (m: HostToWebview) => {
        posted.push(m);
        return new Promise<boolean>((resolve) => settle.push(() => resolve(true)));
      },
      onDidReceiveMessage: (l: (m: WebviewToHost) => unknown) => ((listener = l), { dispose: () => (listener = undefined) }),
    },
    listening: () => listener !== undefined,
  };
}

const live = (headline: string) =>
  ({ type: 'runUpdated', run: { id: 'r1', phase: 'macro', target: 't', startedAt: '2026-12-03T10:00:00Z', status: 'running', headline } }) as const;

describe('a live run posted to a view the host cannot keep up with', () => {
  it('keeps one update of the run on its way at a time, and the next that goes is the newest, none queued behind', async () => {
    const view = slowView();
    const h = new WebviewHost(view.port, { snapshot: () => undefined, answer: async () => undefined }, 60_000);
    await h.receive({ type: 'ready' });
    h.update('r1', live('1 tok/s'));
    h.flush();
    // Ten more updates while the first is still on its way (each a flush, as the timer would do).
    for (let i = 2; i <= 11; i++) {
      h.update('r1', live(`${i} tok/s`));
      h.flush();
    }
    assert.deepEqual(
      view.posted.map((m) => (m.type === 'runUpdated' ? m.run.headline : m.type)),
      ['1 tok/s'],
      'updates were queued behind one the view had not taken',
    );
    await view.take();
    h.flush();
    assert.deepEqual(
      view.posted.map((m) => (m.type === 'runUpdated' ? m.run.headline : m.type)),
      ['1 tok/s', '11 tok/s'],
    );
    h.dispose();
  });
});
