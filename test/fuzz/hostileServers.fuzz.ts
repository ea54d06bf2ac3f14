import * as assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { FuzzTally, Outcome } from './tally';

// The agent's load generator against servers that answer as broken or hostile ones do (test/fuzz/hostile_servers.py:
// malformed streams, chunk sizes, headers and numbers, impossible usage, terminal controls in error text and model
// ids, JSON nested past the parser, trickled headers and keep-alive comments, stalls), each in seeded variants
// cut and paced differently. The sweep is Python because the load generator is: it runs in the agent's own process.
const SEED = 35;
const VARIANTS = 3;

describe('the load generator against hostile servers (seeded fuzz)', () => {
  it(`every behaviour, in ${VARIANTS} variants, ends its request with the right reason or measurement: no crash, hang or untrue record`, async function () {
    this.timeout(90_000);
    const { stdout } = await promisify(execFile)('python3', ['test/fuzz/hostile_servers.py', '--seed', String(SEED), '--variants', String(VARIANTS)], {
      maxBuffer: 16 * 1024 * 1024,
      timeout: 80_000,
    });
    const tally = new FuzzTally('hostile servers');
    for (const line of stdout.split('\n').filter((l) => l.trim())) {
      const c = JSON.parse(line) as { case: string; outcome: Outcome; what: string };
      tally.record(c.outcome, `${c.case}: ${c.what}`);
    }
    tally.print();
    assert.ok(tally.cases >= 100, `only ${tally.cases} cases ran`);
    assert.deepEqual(tally.problems, []);
  });
});
