import * as assert from 'node:assert/strict';
import { steadyWindowTable } from '../../../src/core/macro/steadyWindow';
import { MacroLevelSummary } from '../../../src/shared/results';

function level(c: number, whole: { tpot: number; tput: number }, steady?: { tpot: number; tput: number }): MacroLevelSummary {
  return {
    max_concurrency: c,
    request_rate: null,
    completed: 40,
    failed: 0,
    duration: 10,
    total_input_tokens: 0,
    total_output_tokens: 0,
    request_throughput: 4,
    output_throughput: whole.tput,
    total_token_throughput: whole.tput,
    mean_tpot_ms: whole.tpot,
    steady: steady ? { start_s: 0.6, end_s: 8.4, requests: 30, output_throughput: steady.tput, mean_tpot_ms: steady.tpot } : { note: 'no steady window' },
  };
}

describe('steady window in the findings', () => {
  it('shows every level beside its steady window once ramp and drain move one of them beyond noise', () => {
    const table = steadyWindowTable([level(1, { tpot: 12, tput: 80 }, { tpot: 12.1, tput: 81 }), level(8, { tpot: 25, tput: 286 }, { tpot: 25.5, tput: 306 })]);
    assert.ok(table);
    assert.deepEqual(
      table.rows.map((r) => [r.level, r.window, r.tput_steady, r.tput_whole]),
      [
        ['c=1', '0.6–8.4 s', 81, 80],
        ['c=8', '0.6–8.4 s', 306, 286],
      ],
    );
  });

  it('stays out when every steady window agrees with its level within 5%, or there is none', () => {
    assert.equal(steadyWindowTable([level(1, { tpot: 12, tput: 80 }, { tpot: 12.2, tput: 82 }), level(8, { tpot: 25, tput: 300 })]), undefined);
  });
});
