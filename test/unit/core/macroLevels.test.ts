import * as assert from 'node:assert/strict';
import { levelCut, markLevel } from '../../../src/core/macro/levelFlags';
import { levelLine, levelTable, macroHeadline } from '../../../src/core/macro/tables';
import { MacroLevelSummary, RunSummary } from '../../../src/shared/results';
import { macroCharts } from '../../../webview-ui/src/views/macro';
import type { LineChartSpec } from '../../../webview-ui/src/specs';

const level = (c: number, completed: number, tokS: number, extra: Record<string, unknown> = {}): MacroLevelSummary => ({
  max_concurrency: c, request_rate: null, completed, failed: 0, duration: 10, total_input_tokens: 0, total_output_tokens: 0,
  request_throughput: completed / 10, output_throughput: tokS, total_token_throughput: tokS, mean_tpot_ms: 1000 / (tokS / c),
  num_prompts: 32, ...extra,
});

describe('a macro level cut short', () => {
  // As the agent reports a Cancel mid-level: the level's final summary, with cancelled set and fewer
  // requests than planned (the ones in flight are dropped without a record).
  const whole = level(1, 32, 50);
  const cancelledMidway = level(8, 3, 900, { cancelled: true });
  const abortedAtOnce = level(8, 0, 0, { cancelled: true });

  it('is marked partial with how far it got, and a level that ran every request is whole even when the Cancel came after it', () => {
    assert.deepEqual(levelCut(cancelledMidway), { reason: 'cancelled', done: 3, planned: 32 });
    assert.equal(levelCut(level(4, 32, 300, { cancelled: true })), undefined);
    const marked = markLevel(cancelledMidway);
    assert.equal(marked.partial, true);
    assert.deepEqual(marked.cut, { reason: 'cancelled', done: 3, planned: 32 });
    assert.equal(markLevel(whole).partial, undefined);
  });

  it('never feeds the headline, which names it cut instead', () => {
    const headline = macroHeadline([whole, markLevel(cancelledMidway)])!;
    assert.doesNotMatch(headline, /at c=8/);
    assert.match(headline, /^decode 50\.0 tok\/s at c=1/);
    assert.match(headline, /c=8 cut short/);
  });

  it('reads as cut in the table and the CLI line, which no longer says "0 ok, 0 failed, 0.0 tok/s" for an aborted level', () => {
    const table = levelTable([whole, markLevel(cancelledMidway)]);
    assert.deepEqual(table.rows.map((r) => r.level), ['c=1', 'c=8 (cut short: 3 of 32 requests (cancelled))']);
    assert.equal(levelLine(markLevel(abortedAtOnce)), 'c=8: cut short: 0 of 32 requests (cancelled); nothing measured');
    assert.match(levelLine(markLevel(cancelledMidway)), /^c=8: cut short: 3 of 32 requests \(cancelled\); its figures \(3 ok, 0 failed .*\) are of less load than it names/);
    assert.equal(levelLine(whole), 'c=1: 32 ok, 0 failed · TPOT 20.00 ms · 50.0 tok/s');
  });

  it('is left off the throughput line, drawn as a cut marker, and its table row says so', () => {
    const run: RunSummary = { id: 'r', phase: 'macro', target: 't', startedAt: '', status: 'cancelled', macro: { levels: [whole, level(4, 32, 400), markLevel(cancelledMidway)] } };
    const [throughput] = macroCharts(run) as LineChartSpec[];
    const line = throughput.series.find((s) => s.label === 'output tok/s')!;
    assert.deepEqual(line.points.map((p) => p.x), [1, 4]);
    const marker = throughput.series.find((s) => s.marker === 'cut')!;
    assert.deepEqual(marker.points, [{ x: 8, y: 900 }]);
    assert.deepEqual(throughput.table.rows.map((r) => r.state), ['complete', 'complete', 'cut short: 3 of 32 requests (cancelled)']);
  });
});
