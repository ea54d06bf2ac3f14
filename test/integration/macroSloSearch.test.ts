import * as assert from 'node:assert/strict';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FindingsUpdate, PhaseContext } from '../../src/core/campaign/phaseContext';
import { silentLogger } from '../../src/core/log';
import { startSimulator, RunningSimulator, SimulatorOptions } from '../../src/core/macro/simulator';
import { runMacroPhase } from '../../src/core/phases/macro';
import { TrialStats } from '../../src/core/macro/trials';
import { deployAgent, DeployedAgent } from '../../src/remote/agentDeploy';
import { LocalTransport } from '../../src/remote/localTransport';
import { renderTableBlock } from '../../src/core/findings/render';

// Known answers from the simulator's timing model (simulator/sim_timing.py): step = 20 ms + 0 ms x running,
// no prefill cost, at most 12 requests running (--max-batch 12). Up to c=12 every request joins at the next
// step boundary, so its TTFT is at most two steps (40 ms) plus the host's wake-ups; at c=13 one request of
// every wave waits for a free slot, a whole request of 32 steps (640 ms), and the TTFT p99 of the level holds
// it. The highest concurrency meeting TTFT p99 ≤ 200 ms is therefore 12, with a 160 ms margin either side.
const SIM: SimulatorOptions = { stepBaseMs: 20, stepPerSeqMs: 0, prefillPerTokenMs: 0, maxBatch: 12 };

describe('the SLO search and repeated trials against the simulator (known answers)', function () {
  this.timeout(180_000);
  const workspace = mkdtempSync(join(tmpdir(), 'ib-slo-'));
  const cache = mkdtempSync(join(tmpdir(), 'ib-slo-cache-'));
  const transport = new LocalTransport();
  const local = Object.create(transport) as LocalTransport;
  local.exec = (argv, options = {}) => transport.exec(argv, { ...options, env: { XDG_CACHE_HOME: cache, ...options.env } });
  let agent: DeployedAgent;
  let sim: RunningSimulator;
  const findings: FindingsUpdate[] = [];

  before(async () => {
    assert.ok(existsSync('dist/agent.pyz'), 'dist/agent.pyz is missing: run `npm run build` first');
    agent = await deployAgent(local, 'dist/agent.pyz', 'python3');
    sim = await startSimulator({ ...SIM, port: 0 });
  });
  after(async () => {
    await sim?.stop();
    await transport.close();
  });

  const context = (): PhaseContext => ({
    target: { name: 'sim', kind: 'local', serverUrl: sim.url, python: 'python3' },
    transport: local,
    agent,
    workspace,
    log: silentLogger,
    sink: { runChanged: () => undefined, findings: (u) => findings.push(u) },
  });

  it('finds the knee: c=12 meets TTFT p99 ≤ 200 ms and c=13 breaks it, bracketing by doubling then bisecting', async () => {
    const out = await runMacroPhase(context(), { inputLen: 32, outputLen: 32, warmup: 1, slo: 'ttft_p99<=200', search: 'concurrency', searchMax: 64 });
    assert.equal(out.agent.status, 'completed', out.agent.reason);
    // The levels visited are the run's levels, in the order the search chose them.
    assert.deepEqual(
      out.levels.map((l) => l.max_concurrency),
      [1, 2, 4, 8, 16, 12, 14, 13],
    );
    assert.deepEqual(
      out.levels.map((l) => (l.slo as { verdict: string }).verdict),
      ['meets', 'meets', 'meets', 'meets', 'breaks', 'meets', 'breaks', 'breaks'],
    );
    assert.equal(out.slo?.highest_meeting, 12);
    assert.deepEqual(out.slo?.bracket, [8, 16]);
    assert.match(out.slo!.line, /^c=12 meets TTFT p99 ≤ 200 ms; c=13 breaks TTFT p99 \(TTFT p99 \d+(\.\d+)? ms against 200 ms\)$/);
    const last = findings[findings.length - 1];
    assert.ok(last.lines.includes(`**SLO:** ${out.slo!.line}.`), last.lines.join('\n'));
    assert.ok(
      last.lines.some((l) => l.startsWith('Search by concurrency: bracketed between c=8 and c=16 by doubling, then bisected; 8 loads visited: c=1 meets')),
    );
    // Cross-check the verdicts with the figures themselves.
    for (const l of out.levels) {
      const ttft = l.p99_ttft_ms as number;
      assert.ok((l.max_concurrency as number) <= 12 ? ttft <= 200 : ttft > 200, `c=${l.max_concurrency}: TTFT p99 ${ttft} ms`);
    }
  });

  it('repeats each load with fresh prompts and reports the interval of every figure', async () => {
    findings.length = 0;
    const out = await runMacroPhase(context(), { inputLen: 32, outputLen: 16, warmup: 1, concurrency: [2, 4], requests: 8, trials: 3, seed: 7 });
    assert.equal(out.agent.status, 'completed', out.agent.reason);
    assert.deepEqual(
      out.levels.map((l) => `${l.max_concurrency}#${l.trial}/${l.trials}`),
      ['2#1/3', '2#2/3', '2#3/3', '4#1/3', '4#2/3', '4#3/3'],
    );
    for (const l of [out.levels[2], out.levels[5]]) {
      const stats = l.trial_stats as TrialStats;
      for (const key of ['p50_ttft_ms', 'p90_ttft_ms', 'p99_ttft_ms', 'p99_tpot_ms', 'p99_itl_ms', 'p99_e2el_ms', 'output_throughput'])
        assert.equal(stats[key]?.n, 3, `${key} over 3 trials`);
      // TPOT is one 20 ms step per token: the interval holds it (the host's late wake-ups only add).
      const tpot = stats.p50_tpot_ms;
      assert.ok(tpot.mean >= 19.9 && tpot.mean <= 21.5, `TPOT p50 mean ${tpot.mean} ms against the model's 20 ms`);
      assert.ok((tpot.half_width ?? 0) < 1.5, `TPOT p50 half-width ${tpot.half_width} ms`);
    }
    const table = findings[findings.length - 1].tables.find((t) => t.id === 'macro-trials');
    assert.ok(table, 'the findings quote the trials table');
    const text = renderTableBlock(table).join('\n');
    assert.match(text, /\| c=2 +\| +3 \| +\d+\.\d ± \d+\.\d \(CV \d+\.\d%\) \|/);
    assert.match(table.note ?? '', /fresh prompts/);
  });
});
