import * as assert from 'node:assert/strict';
import { MicroServerPlan, MicroSteps, runMicroAsPlanned } from '../../../src/core/campaign/microAsPlanned';

// A host whose GPUs a server holds, and a micro phase that refuses while it does (the agent's gpus_busy):
// the server's stop and start and each micro run are logged in the order they happen.
function busyHost(opts: { stopAgreed?: boolean; choice?: 'stop' | 'beside' } = {}) {
  const log: string[] = [];
  let serverRunning = true;
  const runs: { status: string; busy: boolean }[] = [];
  const steps: MicroSteps<{ status: string; busy: boolean }> = {
    async micro(allowBusy) {
      const refused = serverRunning && !allowBusy;
      log.push(refused ? 'micro refused: GPUs are busy' : allowBusy && serverRunning ? 'micro beside the server' : 'micro');
      const run = { status: refused ? 'failed' : 'completed', busy: refused };
      runs.push(run);
      return run;
    },
    refusedBusy: (o) => o.busy,
    async withServerStopped(plan: MicroServerPlan, body) {
      log.push('consent to stop');
      if (opts.stopAgreed === false) return undefined;
      log.push('stop');
      serverRunning = false;
      try {
        return await body();
      } finally {
        log.push(plan === 'stop-then-profiler' ? 'start with the profiler' : 'start the original');
        serverRunning = true;
      }
    },
    async askBusy() {
      log.push('asked: GPUs busy');
      return opts.choice;
    },
  };
  return { steps, log, runs };
}

describe('Run All Phases runs micro in the order its plan says', () => {
  it('stops the server before micro when the plan has the stop, so that micro never fails on busy GPUs', async () => {
    const host = busyHost();
    const outcome = await runMicroAsPlanned('stop', host.steps);
    assert.deepEqual(host.log, ['consent to stop', 'stop', 'micro', 'start the original']);
    assert.deepEqual(
      host.runs.map((r) => r.status),
      ['completed'],
      'one micro run, completed: no "GPUs are busy" failure recorded',
    );
    assert.equal(outcome?.status, 'completed');
  });

  it('starts the server with the profiler after micro when the plan hands it to the profile', async () => {
    const host = busyHost();
    await runMicroAsPlanned('stop-then-profiler', host.steps);
    assert.deepEqual(host.log, ['consent to stop', 'stop', 'micro', 'start with the profiler']);
  });

  it('runs no micro at all when the planned stop is declined, rather than one that fails on the held GPUs', async () => {
    const host = busyHost({ stopAgreed: false });
    const outcome = await runMicroAsPlanned('stop', host.steps);
    assert.equal(outcome, undefined);
    assert.deepEqual(host.runs, [], 'no micro run recorded');
  });

  it('without a planned stop, runs micro first and asks only when it finds the GPUs held', async () => {
    const asked = busyHost({ choice: 'stop' });
    const outcome = await runMicroAsPlanned(undefined, asked.steps);
    assert.deepEqual(asked.log, ['micro refused: GPUs are busy', 'asked: GPUs busy', 'consent to stop', 'stop', 'micro', 'start the original']);
    assert.equal(outcome?.status, 'completed');
    const beside = busyHost({ choice: 'beside' });
    await runMicroAsPlanned(undefined, beside.steps);
    assert.deepEqual(beside.log, ['micro refused: GPUs are busy', 'asked: GPUs busy', 'micro beside the server']);
  });
});
