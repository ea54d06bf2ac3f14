import * as assert from 'node:assert/strict';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '../../src/core/log';
import { startSimulator, RunningSimulator } from '../../src/core/macro/simulator';
import { runMacroPhase } from '../../src/core/phases/macro';
import { deployAgent, DeployedAgent } from '../../src/remote/agentDeploy';
import { LocalTransport } from '../../src/remote/localTransport';
import { levelProgressText, RunSummary } from '../../src/shared/results';

// The real simulator and the real deployed agent: a level slow enough (20 ms steps, 60 output tokens,
// about 1.2 s a request) that the agent's once-a-second progress arrives while it runs.
describe('progress within a macro level', function () {
  this.timeout(60_000);
  const workspace = mkdtempSync(join(tmpdir(), 'ib-macro-progress-'));
  const cache = mkdtempSync(join(tmpdir(), 'ib-macro-progress-cache-'));
  const transport = new LocalTransport();
  const local = Object.create(transport) as LocalTransport;
  local.exec = (argv, options = {}) => transport.exec(argv, { ...options, env: { XDG_CACHE_HOME: cache, ...options.env } });
  let agent: DeployedAgent;
  let sim: RunningSimulator;

  before(async () => {
    assert.ok(existsSync('dist/agent.pyz'), 'dist/agent.pyz is missing: run `npm run build` first');
    agent = await deployAgent(local, 'dist/agent.pyz', 'python3');
    sim = await startSimulator({ stepBaseMs: 20, stepPerSeqMs: 0, prefillPerTokenMs: 0, port: 0 });
  });
  after(async () => {
    await sim?.stop();
    await transport.close();
  });

  it('says requests done of the total and the time left while a level runs, and nothing once the run ends', async () => {
    const seen: RunSummary[] = [];
    const out = await runMacroPhase(
      {
        target: { name: 'sim', kind: 'local', serverUrl: sim.url, python: 'python3' },
        transport: local,
        agent,
        workspace,
        log: silentLogger,
        sink: { runChanged: (r) => seen.push(structuredClone(r)), findings: () => undefined },
      },
      { concurrency: [1], requests: 3, inputLen: 16, outputLen: 60, warmup: 0 },
    );
    assert.equal(out.agent.status, 'completed', out.agent.reason);
    const going = seen.filter((r) => r.status === 'running' && r.levelProgress?.done);
    assert.ok(going.length, `no progress while the level ran: ${JSON.stringify(seen.map((r) => r.levelProgress))}`);
    const first = going[0].levelProgress!;
    assert.equal(first.level, 'c=1');
    assert.equal(first.total, 3);
    // What the notification and the results view say.
    assert.match(levelProgressText(first), /^c=1: [12] of 3 requests · about \d+ s left$/);
    assert.equal(seen.at(-1)!.levelProgress, undefined, 'a finished run still shows a level going');
  });
});

describe('the words of a level in progress', () => {
  it('counts down at the pace so far, and says requests only where the level runs for a time', () => {
    assert.equal(levelProgressText({ level: 'c=8', done: 8, total: 32, elapsedS: 4 }), 'c=8: 8 of 32 requests · about 12 s left');
    assert.equal(levelProgressText({ level: 'c=8', done: 0, total: 32, elapsedS: 1 }), 'c=8: 0 of 32 requests');
    assert.equal(levelProgressText({ level: 'rate 4/s', done: 10, total: 0, elapsedS: 3 }), 'rate 4/s: 10 requests');
    assert.equal(levelProgressText({ level: 'c=64', done: 10, total: 256, elapsedS: 60 }), 'c=64: 10 of 256 requests · about 25 min left');
  });
});
