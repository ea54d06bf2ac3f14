import * as assert from 'node:assert/strict';
import { HostToWebview, WebviewRequest, WebviewToHost } from '../../../src/shared/protocol';
import { WebviewHost, WebviewHostParts } from '../../../src/vscode/webview/webviewHost';

// A webview stands in for VS Code's: the host only posts to it and hears from it, which is all a view's
// page does; the extension tests drive the real views.
function page() {
  const posted: HostToWebview[] = [];
  let listener: ((m: WebviewToHost) => unknown) | undefined;
  return {
    posted,
    port: {
      postMessage: async (m: HostToWebview) => (posted.push(m), true),
      onDidReceiveMessage: (l: (m: WebviewToHost) => unknown) => ((listener = l), { dispose: () => (listener = undefined) }),
    },
    listening: () => listener !== undefined,
  };
}

const run = (id: string, status: 'running' | 'completed' = 'running') =>
  ({ id, phase: 'macro', target: 't', startedAt: '2026-12-02T10:00:00Z', status }) as const;

function host(parts: Partial<WebviewHostParts> = {}) {
  const view = page();
  const order: string[] = [];
  const h = new WebviewHost(
    view.port,
    {
      prepare: async () => void order.push('prepare'),
      snapshot: () => {
        order.push('snapshot');
        h.post({ type: 'snapshot', snapshot: { runs: [] } });
      },
      answer: async () => undefined,
      ...parts,
    },
    60_000,
  );
  return { h, view, order };
}

describe('the webview host', () => {
  it('posts nothing before the view is ready, then the snapshot, then the increments', async () => {
    const { h, view, order } = host();
    h.post({ type: 'budget' });
    h.update('r1', { type: 'runUpdated', run: run('r1') });
    assert.equal(view.posted.length, 0, 'posted before the view was ready');
    await h.receive({ type: 'ready' });
    assert.deepEqual(order, ['prepare', 'snapshot']);
    h.update('r1', { type: 'runUpdated', run: run('r1') });
    h.flush();
    assert.deepEqual(
      view.posted.map((m) => m.type),
      ['snapshot', 'runUpdated'],
    );
    h.dispose();
  });

  it('sends the newest increment of each run once, and none from before a snapshot', async () => {
    const { h, view } = host();
    await h.receive({ type: 'ready' });
    h.update('r1', { type: 'runUpdated', run: run('r1') });
    h.update('r2', { type: 'runUpdated', run: run('r2') });
    h.update('r1', { type: 'runUpdated', run: run('r1', 'completed') });
    h.flush();
    assert.deepEqual(
      view.posted.slice(1).map((m) => (m.type === 'runUpdated' ? [m.run.id, m.run.status] : m.type)),
      [
        ['r1', 'completed'],
        ['r2', 'running'],
      ],
    );
    // Hidden, then shown again: what changed meanwhile is in the new snapshot, not sent after it.
    h.update('r1', { type: 'runUpdated', run: run('r1') });
    h.hidden();
    h.update('r2', { type: 'runUpdated', run: run('r2') });
    h.post({ type: 'budget' });
    await h.receive({ type: 'ready' });
    h.flush();
    assert.deepEqual(
      view.posted.map((m) => m.type),
      ['snapshot', 'runUpdated', 'runUpdated', 'snapshot'],
    );
    h.dispose();
  });

  it('answers each request with a reply: done, or the error the action threw, which the user is told too', async () => {
    const failed: string[] = [];
    const { h, view } = host({
      answer: async (r: WebviewRequest) => {
        if (r.type === 'exportCsv') throw new Error('The disk is full.');
      },
      failed: (r, error) => failed.push(`${r.type}: ${error}`),
    });
    await h.receive({ type: 'ready' });
    await h.receive({ type: 'insertTable', requestId: 7, table: { id: 't', title: 'T', columns: [], rows: [] } });
    await h.receive({ type: 'exportCsv', requestId: 8, fileName: 'a.csv', csv: 'x' });
    assert.deepEqual(view.posted.slice(1), [
      { type: 'reply', requestId: 7, ok: true },
      { type: 'reply', requestId: 8, ok: false, error: 'The disk is full.' },
    ]);
    assert.deepEqual(failed, ['exportCsv: The disk is full.']);
    h.dispose();
  });

  it("hands the view's other messages over, and stops listening when disposed", async () => {
    const notices: string[] = [];
    const { h, view } = host({ notice: (m) => notices.push(m.type) });
    await h.receive({ type: 'selectRun', runId: 'r1' });
    await h.receive({ type: 'error', message: 'boom' });
    assert.deepEqual(notices, ['selectRun', 'error']);
    h.dispose();
    assert.equal(view.listening(), false);
  });
});
