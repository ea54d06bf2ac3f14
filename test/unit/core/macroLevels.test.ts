import * as assert from 'node:assert/strict';
import { levelCut, levelLimits, markLevel } from '../../../src/core/macro/levelFlags';
import { levelFlagLines, levelLine, levelTable, macroHeadline } from '../../../src/core/macro/tables';
import { MacroLevelSummary, RunSummary } from '../../../src/shared/results';
import { macroCharts } from '../../../webview-ui/src/views/macro';
import type { LineChartSpec } from '../../../webview-ui/src/specs';

const level = (c: number, completed: number, tokS: number, extra: Record<string, unknown> = {}): MacroLevelSummary => ({
  max_concurrency: c,
  request_rate: null,
  completed,
  failed: 0,
  duration: 10,
  total_input_tokens: 0,
  total_output_tokens: 0,
  request_throughput: completed / 10,
  output_throughput: tokS,
  total_token_throughput: tokS,
  mean_tpot_ms: 1000 / (tokS / c),
  num_prompts: 32,
  ...extra,
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
    // The figure is 1/TPOT, not the level's output throughput, and says so.
    assert.match(headline, /^decode 50\.0 tok\/s at c=1 \(1\/TPOT\)/);
    assert.match(headline, /c=8 cut short/);
  });

  it('reads as cut in the table and the CLI line, which no longer says "0 ok, 0 failed, 0.0 tok/s" for an aborted level', () => {
    const table = levelTable([whole, markLevel(cancelledMidway)]);
    assert.deepEqual(
      table.rows.map((r) => r.level),
      ['c=1', 'c=8 (cut short: 3 of 32 requests (cancelled))'],
    );
    assert.equal(levelLine(markLevel(abortedAtOnce)), 'c=8: cut short: 0 of 32 requests (cancelled); nothing measured');
    assert.match(
      levelLine(markLevel(cancelledMidway)),
      /^c=8: cut short: 3 of 32 requests \(cancelled\); its figures \(3 ok, 0 failed .*\) are of less load than it names/,
    );
    assert.equal(levelLine(whole), 'c=1: 32 ok, 0 failed · TPOT 20.00 ms · 50.0 tok/s');
  });

  it('is left off the throughput line, drawn as a cut marker, and its table row says so', () => {
    const run: RunSummary = {
      id: 'r',
      phase: 'macro',
      target: 't',
      startedAt: '',
      status: 'cancelled',
      macro: { levels: [whole, level(4, 32, 400), markLevel(cancelledMidway)] },
    };
    const [throughput] = macroCharts(run) as LineChartSpec[];
    const line = throughput.series.find((s) => s.label === 'output tok/s')!;
    assert.deepEqual(
      line.points.map((p) => p.x),
      [1, 4],
    );
    const marker = throughput.series.find((s) => s.marker === 'cut')!;
    assert.deepEqual(marker.points, [{ x: 8, y: 900 }]);
    assert.deepEqual(
      throughput.table.rows.map((r) => r.state),
      ['complete', 'complete', 'cut short: 3 of 32 requests (cancelled)'],
    );
  });
});

describe('a macro level the load generator itself limited', () => {
  // Figures as the agent reports them for c=128 and c=256 against a server of 20 ms per token: the
  // client sent late (scheduling lag p99 67 and 216 ms) and its one process ran near a full core.
  const ok = level(64, 256, 3000, { scheduling_lag_ms: { mean: 0.4, p99: 2.1, max: 3 }, client_cpu: { workers: 1, cpu_percent_of_one_core: 41 } });
  const lagging = level(128, 512, 5600, { scheduling_lag_ms: { mean: 20, p99: 67.4, max: 90 }, client_cpu: { workers: 1, cpu_percent_of_one_core: 62 } });
  const saturated = level(256, 1024, 10200, { scheduling_lag_ms: { mean: 80, p99: 216, max: 300 }, client_cpu: { workers: 1, cpu_percent_of_one_core: 97 } });

  it("is flagged with the figure that shows it: scheduling lag, a process near a full core, the host's cores", () => {
    assert.deepEqual(levelLimits(ok), []);
    assert.deepEqual(
      levelLimits(lagging).map((l) => l.figure),
      ['client scheduling lag p99 67.4 ms'],
    );
    assert.deepEqual(
      levelLimits(saturated).map((l) => l.figure),
      ['client scheduling lag p99 216 ms', 'client CPU 97% of a core'],
    );
    // Four processes at 90% of a core each on a 4-core host leave the server no CPU.
    const busyHost = level(256, 1024, 10200, { client_cpu: { workers: 4, cpu_percent_of_one_core: 360 } });
    assert.deepEqual(
      levelLimits(busyHost, 4).map((l) => l.by),
      ['client_cpu', 'host_cpu'],
    );
    assert.deepEqual(
      levelLimits(busyHost, 64).map((l) => l.by),
      ['client_cpu'],
    );
  });

  it("says so in the table, the findings lines, the headline's peak and the CLI line", () => {
    const levels = [ok, lagging, saturated].map((l) => markLevel(l));
    const table = levelTable(levels);
    assert.deepEqual(
      table.rows.map((r) => r.limited),
      ['', '⚠ client scheduling lag p99 67.4 ms', '⚠ client scheduling lag p99 216 ms; client CPU 97% of a core'],
    );
    const lines = levelFlagLines(levels);
    assert.equal(lines.length, 2);
    assert.match(
      lines[0],
      /^⚠ c=128: limited by the load generator, not the server — client scheduling lag p99 67\.4 ms \(the load generator sent requests up to 67 ms late/,
    );
    assert.match(macroHeadline(levels)!, /peak 10,200 tok\/s at c=256 \(load generator limited\)/);
    assert.match(levelLine(levels[2]), /· ⚠ load generator limited: client scheduling lag p99 216 ms; client CPU 97% of a core$/);
    assert.equal(
      levelTable([markLevel(ok)]).columns.some((c) => c.key === 'limited'),
      false,
      'no column when nothing is limited',
    );
  });

  it('is marked on the throughput chart, the line still joining it', () => {
    const run: RunSummary = {
      id: 'r',
      phase: 'macro',
      target: 't',
      startedAt: '',
      status: 'completed',
      macro: { levels: [ok, lagging, saturated].map((l) => markLevel(l)) },
    };
    const [throughput] = macroCharts(run) as LineChartSpec[];
    assert.deepEqual(
      throughput.series.find((s) => s.label === 'output tok/s')!.points.map((p) => p.x),
      [64, 128, 256],
    );
    assert.deepEqual(throughput.series.find((s) => s.marker === 'limited')!.points, [
      { x: 128, y: 5600 },
      { x: 256, y: 10200 },
    ]);
    assert.match(throughput.table.note ?? '', /load generator itself limited/);
    assert.equal(throughput.table.rows[2].limited, 'client scheduling lag p99 216 ms; client CPU 97% of a core');
  });
});
