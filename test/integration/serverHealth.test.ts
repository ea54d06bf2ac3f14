import * as assert from 'node:assert/strict';
import { checkServerHealth } from '../../src/core/campaign/serverHealth';
import { startSimulator } from '../../src/core/macro/simulator';
import { LocalTransport } from '../../src/remote/localTransport';

// The sidebar's quick look at a target's server: a real server process (the simulator) answering,
// then killed, checked from the host with the target's Python as the extension does every few seconds.
describe("a target server's health check", () => {
  it('says the server answers, then that nothing answers once it is killed, naming the URL', async () => {
    const sim = await startSimulator({ port: 0, zeroCost: true });
    const transport = new LocalTransport();
    try {
      assert.deepEqual(await checkServerHealth(transport, 'python3', sim.url), { answering: true });
      sim.process.kill('SIGKILL');
      await new Promise((resolve) => sim.process.once('exit', resolve));
      const down = await checkServerHealth(transport, 'python3', `${sim.url}/`);
      assert.equal(down.answering, false);
      assert.match(down.detail ?? '', new RegExp(`^nothing answers at ${sim.url.replace(/\./g, '\\.')}/ \\(.*refused`, 'i'));
    } finally {
      await sim.stop();
      await transport.close();
    }
  });

  it('says which Python could not run the check', async () => {
    const transport = new LocalTransport();
    await assert.rejects(checkServerHealth(transport, 'no-such-python3', 'http://127.0.0.1:9'), /could not run with no-such-python3 on /);
    await transport.close();
  });
});
