import * as assert from 'node:assert/strict';
import { startSimulator } from '../../src/core/macro/simulator';

describe('starting the simulator', () => {
  it("hands its caller the simulator's log and keeps the ready record to itself", async () => {
    let output = '';
    const sim = await startSimulator({ port: 0, zeroCost: true }, (text) => (output += text));
    try {
      assert.match(sim.url, /^http:\/\/127\.0\.0\.1:\d+$/);
      const health = await fetch(`${sim.url}/health`);
      assert.equal(health.status, 200);
    } finally {
      await sim.stop();
    }
    // What `infbench simulate` prints on stderr: never the JSON it reads the URL from.
    assert.ok(!output.includes('"ready"'), output);
  });
});
