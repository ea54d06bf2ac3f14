import * as assert from 'node:assert/strict';
import { compareMacro } from '../../../src/core/compare/macro';
import { configurationsTable } from '../../../src/core/server/configurationsCompared';
import { collapseTrials, compareIntervals, intervalText, trialsTable } from '../../../src/core/macro/trials';
import { sloLines, sloProblem, SloOutcome } from '../../../src/core/macro/sloSearch';
import { levelTable } from '../../../src/core/macro/tables';
import { macroOptionsFromFlags } from '../../../src/cli/commands/macro';
import { macroAgentArgs } from '../../../src/core/macro/options';
import { MacroLevelSummary } from '../../../src/shared/results';
import { macroCharts, servingTable } from '../../../webview-ui/src/views/macro';

// Levels as the agent reports a load run three times (agent/infbench_agent/macro/search.py): each trial a
// level of its own, the last carrying every figure's mean, 95% half-width and CV over the three.
const T3 = 4.3027;
function stat(values: number[]) {
  const n = values.length;
  const mean = values.reduce((a, b) => a + b, 0) / n;
  const sd = Math.sqrt(values.reduce((a, v) => a + (v - mean) ** 2, 0) / (n - 1));
  return { n, mean, half_width: (T3 * sd) / Math.sqrt(n), cv: sd / mean, values };
}
function trials(c: number, tpot: number[], tput: number[]): MacroLevelSummary[] {
  return tpot.map((t, i) => ({
    max_concurrency: c,
    request_rate: null,
    completed: 32,
    failed: 0,
    duration: 10,
    total_input_tokens: 32 * 256,
    total_output_tokens: 32 * 128,
    request_throughput: 3.2,
    output_throughput: tput[i],
    total_token_throughput: tput[i] * 3,
    p50_tpot_ms: t,
    p99_tpot_ms: t + 2,
    trial: i + 1,
    trials: tpot.length,
    ...(i === tpot.length - 1 ? { trial_stats: { p50_tpot_ms: stat(tpot), p99_tpot_ms: stat(tpot.map((x) => x + 2)), output_throughput: stat(tput) } } : {}),
  }));
}

describe('repeated trials', () => {
  it('reads each figure as mean ± 95% half-width (CV) and one row per load', () => {
    const levels = [...trials(8, [40, 41, 42], [400, 410, 420]), ...trials(16, [50, 50.5, 51], [640, 650, 660])];
    const table = trialsTable(levels)!;
    assert.deepEqual(
      table.rows.map((r) => r.level),
      ['c=8', 'c=16'],
    );
    // mean 41, sd 1, half-width 4.3027/sqrt(3) = 2.48, CV 1/41 = 2.4%
    assert.equal(table.rows[0].p50_tpot_ms, '41.00 ± 2.48 (CV 2.4%)');
    assert.match(table.note ?? '', /95% confidence interval \(Student's t, 2 degrees of freedom\)/);
    assert.match(table.note ?? '', /fresh prompts from the run's seed/);
    assert.equal(intervalText({ n: 1, mean: 41, half_width: null, cv: null }, 1), '41.0');
  });

  it("labels each trial's row in the full table, and folds the trials into their mean for whatever reads a level", () => {
    const levels = trials(8, [40, 41, 42], [400, 410, 420]);
    assert.deepEqual(
      levelTable(levels).rows.map((r) => r.level),
      ['c=8 #1/3', 'c=8 #2/3', 'c=8 #3/3'],
    );
    const [one] = collapseTrials(levels);
    assert.equal(one.p50_tpot_ms, 41);
    assert.equal(one.output_throughput, 410);
    // One trial: the levels as they are.
    const single = trials(8, [40], [400]).map(({ trial: _t, trials: _n, trial_stats: _s, ...l }) => l);
    assert.deepEqual(collapseTrials(single), single);
  });

  it('calls a difference only where the intervals part, and says when the spread is too wide', () => {
    assert.equal(compareIntervals(stat([40, 41, 42]), stat([50, 51, 52])), 'differ');
    assert.equal(compareIntervals(stat([40, 44, 48]), stat([43, 47, 51])), 'too wide');
    assert.equal(compareIntervals(stat([40, 41, 42]), stat([40.1, 41.1, 42.1])), 'same');
    const ref = (id: string) => ({ id, label: id });
    // TPOT 41 ± 2.5 against 51 ± 2.5: apart. Throughput 410 ± 25 against 420 ± 100: overlapping, 2.4% apart.
    const c = compareMacro(ref('A'), trials(8, [40, 41, 42], [400, 410, 420]), ref('B'), trials(8, [50, 51, 52], [380, 420, 460]));
    const tpot = c.differences.find((d) => d.metric.startsWith('TPOT p50'))!;
    assert.equal(tpot.flagged, true);
    assert.equal(tpot.better, 'a');
    const tput = c.differences.find((d) => d.metric.startsWith('output throughput'))!;
    assert.equal(tput.flagged, false);
    assert.equal(tput.undecided, true);
    assert.ok(
      c.summary.some((l) =>
        /c=8: output throughput 410\.0 ± 24\.8 \(CV 2\.4%\) → 420\.0 ± 99\.4 \(CV 9\.5%\) tok\/s over 3 and 3 trials: the spread is too wide to decide/.test(l),
      ),
      c.summary.join('\n'),
    );
    assert.equal(c.differences.filter((d) => d.where === 'c=8' && d.metric.startsWith('TPOT p50')).length, 1, 'each load compared once, not once per trial');
  });

  it('says the spread is too wide in the configurations table instead of a percentage', () => {
    const table = configurationsTable({
      target: 'gpu',
      changeDir: 'x',
      configurations: [
        { name: 'tp8', id: 'a', command: 'vllm serve', levels: trials(8, [40, 41, 42], [400, 410, 420]) },
        { name: 'tp4', id: 'b', command: 'vllm serve -tp 4', levels: trials(8, [40, 44, 48], [600, 610, 620]) },
      ],
    });
    const tp4 = table.rows.find((r) => r.configuration === 'tp4')!;
    assert.equal(tp4.tpot_vs_first, 'spread too wide to decide');
    assert.equal(tp4.throughput_vs_first, '+48.8');
    assert.equal(tp4.p50_tpot_ms, '44.00 ± 9.94 (CV 9.1%)');
  });
});

describe('the SLO search as it reads', () => {
  const outcome: SloOutcome = {
    line: 'c=24 meets TTFT p99 ≤ 2 s and TPOT p99 ≤ 50 ms; c=25 breaks TPOT p99 (TPOT p99 50.6 ms against 50 ms)',
    search: 'concurrency',
    trials: 1,
    bracket: [16, 32],
    visited: [1, 2, 4, 8, 16, 32, 24, 28, 26, 25].map((c) => ({
      load: `c=${c}`,
      value: c,
      verdict: c <= 24 ? 'meets' : 'breaks',
      step: c <= 16 || c === 32 ? 'bracket' : 'bisect',
      slos: [],
    })),
  };
  it('puts the answer in one line and the bracket and each verdict after it', () => {
    const [answer, how] = sloLines(outcome, []);
    assert.equal(answer, `**SLO:** ${outcome.line}.`);
    assert.equal(
      how,
      'Search by concurrency: bracketed between c=16 and c=32 by doubling, then bisected; 10 loads visited: c=1 meets, c=2 meets, c=4 meets, c=8 meets, c=16 meets, c=32 breaks, c=24 meets, c=28 breaks, c=26 breaks, c=25 breaks.',
    );
  });

  it('checks the objectives before the run, and hands them to the agent', () => {
    assert.equal(sloProblem('ttft_p99<=2000,tpot_p99<=50ms, e2el_p90<=9s,goodput>=95%'), undefined);
    assert.match(sloProblem('ttft_p99<2000') ?? '', /"ttft_p99<2000" is no objective/);
    assert.throws(() => macroOptionsFromFlags({ slo: 'latency<=5' }), /--slo: "latency<=5" is no objective/);
    const options = macroOptionsFromFlags({ slo: 'ttft_p99<=2000', search: 'concurrency', 'search-max': '64', trials: '3' });
    assert.deepEqual(
      macroAgentArgs(options, 'http://127.0.0.1:8000').filter(
        (a, i, all) => /^--(trials|slo|search|search-max)$/.test(a) || /^--(trials|slo|search|search-max)$/.test(all[i - 1] ?? ''),
      ),
      ['--trials', '3', '--slo', 'ttft_p99<=2000', '--search', 'concurrency', '--search-max', '64'],
    );
    assert.throws(() => macroAgentArgs({ search: 'concurrency' }, 'http://x'), /needs the objectives/);
    // One trial passes no flag: the agent's command line is as before.
    assert.ok(!macroAgentArgs({ trials: 1 }, 'http://x').includes('--trials'));
  });
});

describe('repeated trials in the results view', () => {
  it("gives each load's SLO verdict a column of the serving table, beside the document too", () => {
    const levels = [...trials(8, [40, 41, 42], [400, 410, 420]), ...trials(16, [50, 50.5, 51], [640, 650, 660])];
    levels[2].slo = { verdict: 'meets' };
    levels[5].slo = { verdict: 'undecided' };
    const run = { id: 'r', phase: 'macro' as const, target: 't', startedAt: '', status: 'completed' as const, macro: { levels } };
    for (const fewer of [false, true]) {
      const table = servingTable(run, { fewer })!;
      assert.deepEqual(
        table.rows.map((r) => [r.load, r.slo]),
        [
          [8, 'meets'],
          [16, 'spread too wide to decide'],
        ],
      );
    }
  });

  it('draws each load once, at the mean of its trials', () => {
    const levels = [...trials(8, [40, 41, 42], [400, 410, 420]), ...trials(16, [50, 50.5, 51], [640, 650, 660])];
    const run = { id: 'r', phase: 'macro' as const, target: 't', startedAt: '', status: 'completed' as const, macro: { levels } };
    const [throughput] = macroCharts(run);
    assert.ok(throughput.kind === 'line');
    const output = throughput.series.find((s) => s.label.startsWith('output tok/s'))!;
    assert.deepEqual(
      output.points.map((p) => [p.x, p.y]),
      [
        [8, 410],
        [16, 650],
      ],
    );
  });
});
