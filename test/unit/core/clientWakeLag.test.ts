import * as assert from 'node:assert/strict';
import { levelLimits, limitText, markLevel } from '../../../src/core/macro/levelFlags';
import { MacroLevelSummary } from '../../../src/shared/results';

// The c=4 level of a walk on a loaded host: TTFT read 177 ms against the server's true 150 ms. Its sends
// were on time (a closed loop sends as soon as the previous end is read) and the client used little CPU;
// only its own sleeps woke late, by about what the TTFT read high.
const loaded = {
  max_concurrency: 4,
  request_rate: null,
  completed: 16,
  failed: 0,
  duration: 6.1,
  mean_ttft_ms: 177,
  scheduling_lag_ms: { mean: 0.4, p99: 1.8, max: 2.2 },
  client_cpu: { workers: 1, cpu_s: 0.9, cpu_percent_of_one_core: 14.8 },
  client_wake_lag_ms: { samples: 590, period_ms: 10, p99: 27.4, max: 41.0 },
} as unknown as MacroLevelSummary;

describe('a level measured by a load generator the host kept from a CPU', () => {
  it('is flagged load generator limited by its wake-up lag, though its sends were on time', () => {
    const limits = levelLimits(loaded);
    assert.deepEqual(
      limits.map((l) => l.by),
      ['client_wake'],
    );
    assert.equal(limitText(markLevel(loaded).limits), 'load generator limited: client wake-up lag p99 27.4 ms');
    assert.match(limits[0].reading, /TTFT, ITL and TPOT may read that much high/);
  });

  it('leaves a level alone whose client woke on time', () => {
    const idle = { ...loaded, client_wake_lag_ms: { samples: 600, period_ms: 10, p99: 0.9, max: 2.1 } } as unknown as MacroLevelSummary;
    assert.deepEqual(levelLimits(idle), []);
  });
});
