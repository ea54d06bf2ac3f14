import * as assert from 'node:assert/strict';
import { WebviewRequest } from '../../../src/shared/protocol';
import { Answer, REQUEST_TIMEOUT_MS, Requests } from '../../../webview-ui/src/requests';

// The view's clock is the test's: a request's time runs out when the test says so, never by waiting.
function clock() {
  const due: { run: () => void; ms: number; cancelled: boolean }[] = [];
  return {
    due,
    schedule: (run: () => void, ms: number) => {
      const t = { run, ms, cancelled: false };
      due.push(t);
      return () => (t.cancelled = true);
    },
    expire: () => due.filter((t) => !t.cancelled).forEach((t) => t.run()),
  };
}

const table = { id: 't', title: 'T', columns: [], rows: [] };

describe("a view's requests to the host", () => {
  it('resolves with the reply of the same id', async () => {
    const sent: WebviewRequest[] = [];
    const c = clock();
    const requests = new Requests((m) => sent.push(m), c.schedule);
    const first = requests.request((requestId) => ({ type: 'insertTable', requestId, table }));
    const second = requests.request((requestId) => ({ type: 'exportCsv', requestId, fileName: 'a.csv', csv: 'x' }));
    requests.reply({ type: 'reply', requestId: sent[1].requestId, ok: false, error: 'cancelled' });
    requests.reply({ type: 'reply', requestId: sent[0].requestId, ok: true });
    assert.deepEqual(await first, { ok: true, error: undefined });
    assert.deepEqual(await second, { ok: false, error: 'cancelled' });
    // Answered: their time bounds are off.
    assert.ok(c.due.every((t) => t.cancelled));
  });

  it('fails a request the host does not answer in time, and ignores a reply that comes after', async () => {
    const sent: WebviewRequest[] = [];
    const c = clock();
    const requests = new Requests((m) => sent.push(m), c.schedule);
    const answer: Promise<Answer> = requests.request((requestId) => ({ type: 'insertTable', requestId, table }));
    assert.equal(c.due[0].ms, REQUEST_TIMEOUT_MS.insertTable);
    c.expire();
    assert.deepEqual(await answer, { ok: false, error: 'The extension did not answer within 30 s; see the Inference Bench log.' });
    requests.reply({ type: 'reply', requestId: sent[0].requestId, ok: true });
  });

  it('gives an export as long as a user may keep its save dialog open', () => {
    const c = clock();
    const requests = new Requests(() => undefined, c.schedule);
    void requests.request((requestId) => ({ type: 'exportPng', requestId, fileName: 'a.png', dataUrl: 'data:image/png;base64,' }));
    assert.ok(c.due[0].ms >= 5 * 60_000);
  });
});
