import * as assert from 'node:assert/strict';
import { serverProgressText } from '../../../src/core/server/progressText';

// The agent's server.state events as agent/infbench_agent/server/command.py emits them.
describe("the server's progress line", () => {
  it('says "ready" and the start time once', () => {
    assert.equal(serverProgressText({ stage: 'ready', message: 'ready after 7.6 s (pid 736)', elapsedS: 7.6 }), 'ready after 7.6 s (pid 736)');
    assert.equal(
      serverProgressText({ stage: 'ready', message: 'ready after 7.6 s (pid 736)', elapsedS: 7.6, estimateS: 8.2 }),
      'ready after 7.6 s (pid 736) (about 8 s last time)',
    );
  });

  it('says the stage and the time where the message does not', () => {
    assert.equal(serverProgressText({ stage: 'stopping', message: 'SIGTERM to pid 736' }), 'stopping: SIGTERM to pid 736');
    assert.equal(serverProgressText({ stage: 'stopped', message: 'pid 736 ended after 1.2 s', elapsedS: 1.2 }), 'stopped: pid 736 ended after 1.2 s');
    assert.equal(
      serverProgressText({ stage: 'starting', message: 'loading the model', elapsedS: 3.04, estimateS: 36 }),
      'starting: loading the model (3.0 s of about 36 s last time)',
    );
  });
});
