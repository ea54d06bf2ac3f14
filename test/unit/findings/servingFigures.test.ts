import * as assert from 'node:assert/strict';
import { quotedFiguresTable } from '../../../src/core/macro/tables';
import { servingTableMarkdown } from '../../../src/core/findings/servingTable';
import { renderTableBlock } from '../../../src/core/findings/render';
import { displayWidth } from '../../../src/core/findings/displayWidth';
import { MacroLevelSummary, RunSummary } from '../../../src/shared/results';
import { servingTable } from '../../../webview-ui/src/views/macro';

// Two levels as the agent reports them, with every figure `vllm bench serve` gives and an SLO set.
const level = (c: number, extra: Record<string, unknown> = {}): MacroLevelSummary => ({
  max_concurrency: c,
  request_rate: null,
  completed: 32,
  failed: 0,
  duration: 12.5,
  total_input_tokens: 32 * 1024,
  total_output_tokens: 32 * 256,
  request_throughput: 2.56,
  output_throughput: 655.4 * c,
  total_token_throughput: 3276.8 * c,
  request_goodput: 2.4,
  mean_ttft_ms: 151.2,
  p50_ttft_ms: 150.4,
  p99_ttft_ms: 171.9,
  mean_tpot_ms: 20.01,
  p50_tpot_ms: 20.0,
  p99_tpot_ms: 20.37,
  mean_itl_ms: 20.0,
  p50_itl_ms: 19.98,
  p99_itl_ms: 21.5,
  mean_e2el_ms: 5253.7,
  p99_e2el_ms: 5390.1,
  client_cpu: { us_per_output_token: 12.3 },
  ...extra,
});

describe("the findings document's serving table", () => {
  const levels = [level(1), level(8, { failed: 2, cut: undefined })];
  const lines = renderTableBlock(quotedFiguresTable(levels));
  const header = lines.find((l) => l.startsWith('| Load'))!;

  it('quotes TTFT and TPOT p50/p99, output throughput and goodput per level, and nothing else', () => {
    const labels = header
      .split('|')
      .map((c) => c.trim())
      .filter(Boolean);
    assert.deepEqual(labels, ['Load', 'Failed', 'TTFT p50 ms', 'TTFT p99 ms', 'TPOT p50 ms', 'TPOT p99 ms', 'Output tok/s', 'Goodput req/s']);
    assert.ok(
      lines.some((l) => /^\| c=1 +\| +0 \| +150\.4 \| +171\.9 \| +20\.00 \| +20\.37 \| +655\.4 \| +2\.40 \|$/.test(l)),
      lines.join('\n'),
    );
  });

  it('fits a preview beside the results: each row well under the 20-column width it had', () => {
    for (const l of lines.filter((x) => x.startsWith('|'))) assert.ok(displayWidth(l) <= 110, `${displayWidth(l)} columns: ${l}`);
  });

  it('leaves out Failed and Goodput where no request failed and no SLO was set', () => {
    const plain = quotedFiguresTable([level(1, { request_goodput: null })]);
    assert.deepEqual(
      plain.columns.map((c) => c.label),
      ['Load', 'TTFT p50 ms', 'TTFT p99 ms', 'TPOT p50 ms', 'TPOT p99 ms', 'Output tok/s'],
    );
  });

  it('keeps the full table, means, ITL, E2E latency and client CPU included, for the run folder', () => {
    const full = servingTableMarkdown(levels);
    for (const label of ['TTFT mean ms', 'ITL p99', 'E2EL p99', 'Req/s', 'Client CPU µs/tok']) assert.ok(full.includes(label), label);
    assert.match(full, /\| c=8 +\|/);
  });

  it('keeps the full table in the results view too, a row per level with every figure', () => {
    const run: RunSummary = { id: 'r', phase: 'macro', target: 't', startedAt: '', status: 'completed', macro: { levels } };
    const table = servingTable(run)!;
    const labels = table.columns.map((c) => c.label);
    for (const label of ['TTFT mean ms', 'TTFT p99', 'TPOT p99', 'ITL p99', 'E2EL p99', 'Output tok/s', 'Req/s', 'Goodput req/s'])
      assert.ok(labels.includes(label), label);
    assert.deepEqual(
      table.rows.map((r) => [r.load, r.p99_itl_ms]),
      [
        [1, 21.5],
        [8, 21.5],
      ],
    );
  });

  it('shows fewer columns in the results view until asked for all: p50 and p99 latencies and throughput, no means', () => {
    const run: RunSummary = { id: 'r', phase: 'macro', target: 't', startedAt: '', status: 'completed', macro: { levels } };
    const fewer = servingTable(run, { fewer: true })!;
    assert.deepEqual(
      fewer.columns.map((c) => c.label),
      ['concurrency', 'OK', 'Failed', 'TTFT p50', 'TTFT p99', 'TPOT p50', 'TPOT p99', 'ITL p99', 'E2EL p99', 'Output tok/s', 'Goodput req/s'],
    );
    // Where every level completed and none failed, those two columns say nothing and make room.
    const calm = levels.map((l) => ({ ...l, failed: 0, partial: undefined, cut: undefined }));
    const quiet = servingTable({ ...run, macro: { levels: calm } }, { fewer: true })!;
    assert.deepEqual(quiet.columns.map((c) => c.key).slice(0, 3), ['load', 'completed', 'p50_ttft_ms']);
    assert.ok(servingTable(run)!.columns.length >= 19, 'every column is one click away');
    assert.deepEqual(fewer.rows, servingTable(run)!.rows, 'the rows keep every figure, for the CSV and a switch back');
  });

  it('fills a p50 column from the median where a vllm bench serve result has no p50 (its default percentiles are 99 only)', () => {
    const imported = { ...levels[0], p50_tpot_ms: undefined, median_tpot_ms: 21.87 };
    const run: RunSummary = { id: 'r', phase: 'macro', target: 't', startedAt: '', status: 'completed', macro: { levels: [imported] } };
    assert.equal(servingTable(run, { fewer: true })!.rows[0].p50_tpot_ms, 21.87);
  });
});
