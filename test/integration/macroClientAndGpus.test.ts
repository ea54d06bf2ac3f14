import * as assert from 'node:assert/strict';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { FindingsUpdate, PhaseContext } from '../../src/core/campaign/phaseContext';
import { silentLogger } from '../../src/core/log';
import { startSimulator, RunningSimulator } from '../../src/core/macro/simulator';
import { MacroOptions } from '../../src/core/macro/options';
import { runMacroPhase } from '../../src/core/phases/macro';
import { deployAgent, DeployedAgent } from '../../src/remote/agentDeploy';
import { LocalTransport } from '../../src/remote/localTransport';
import { MacroLevelSummary } from '../../src/shared/results';

// Known answers for the client's own limit and the GPUs' energy, against the real simulator and the
// real deployed agent over the local transport:
// - A client slowed on purpose (--slow-client-ms D) sends each request D ms after its intended time
//   when its schedule leaves room (gaps longer than D); measured against the same client unslowed, to
//   the millisecond. When the gaps are shorter than D it falls behind by D minus the gap at every send:
//   its delay grows by that much a request, again to the millisecond per send.
// - The GPUs are test/support/fake-nvidia-smi's two H200s playing 250 W each (a stand-in: this host has
//   no GPU; the sampler reads the real tool's CSV the same way): 500 W over the level's seconds is the
//   energy, and over its output tokens the joules per token.
const FAKE_SMI = resolve('test/support/fake-nvidia-smi');

interface Intended {
  dispatch_delay_ms: { p50: number; p99: number; max: number; mean: number };
  ttft_ms: { mean: number; p99: number };
  dispatch_delay_trend: { first_quarter_ms: number; last_quarter_ms: number };
  client_limited: boolean;
}

describe('macro: the client’s dispatch delay and the GPUs’ energy (known answers, simulator)', function () {
  this.timeout(90_000);
  const workspace = mkdtempSync(join(tmpdir(), 'ib-macro-client-'));
  const cache = mkdtempSync(join(tmpdir(), 'ib-macro-client-cache-'));
  const transport = new LocalTransport();
  let env: Record<string, string> = {};
  const local = Object.create(transport) as LocalTransport;
  local.exec = (argv, options = {}) => transport.exec(argv, { ...options, env: { XDG_CACHE_HOME: cache, ...env, ...options.env } });
  let agent: DeployedAgent;
  let sim: RunningSimulator;

  before(async () => {
    assert.ok(existsSync('dist/agent.pyz'), 'dist/agent.pyz is missing: run `npm run build` first');
    agent = await deployAgent(local, 'dist/agent.pyz', 'python3');
    sim = await startSimulator({ port: 0, stepBaseMs: 4, stepPerSeqMs: 0.1, prefillPerTokenMs: 0.001 });
  });
  after(async () => {
    await sim?.stop();
    await transport.close();
  });

  async function run(options: MacroOptions): Promise<{ level: MacroLevelSummary; findings: FindingsUpdate[] }> {
    const findings: FindingsUpdate[] = [];
    const ctx: PhaseContext = {
      target: { name: 'sim', kind: 'local', serverUrl: sim.url, python: 'python3' },
      transport: local,
      agent,
      workspace,
      log: silentLogger,
      sink: { runChanged: () => undefined, findings: (u) => findings.push(u) },
    };
    const out = await runMacroPhase(ctx, { inputLen: 20, outputLen: 4, warmup: 1, workers: 1, burstiness: Infinity, ...options });
    assert.equal(out.agent.status, 'completed', out.agent.reason);
    return { level: out.levels[0], findings };
  }
  const intended = (l: MacroLevelSummary) => l.from_intended as Intended;

  it('a client that holds each send 25 ms sends 25 ms late, to the millisecond, and keeps up', async () => {
    env = {};
    const base = await run({ requestRate: [10], requests: 20, gpuSampleMs: 0 });
    const slow = await run({ requestRate: [10], requests: 20, gpuSampleMs: 0, slowClientMs: 25 });
    const b = intended(base.level).dispatch_delay_ms.p50;
    const s = intended(slow.level).dispatch_delay_ms.p50;
    assert.ok(Math.abs(s - (b + 25)) <= 1, `dispatch delay p50 ${s.toFixed(2)} ms slowed, ${b.toFixed(2)} ms not: 25 ms apart within 1 ms`);
    assert.equal(intended(slow.level).client_limited, false, 'a steady 25 ms in 100 ms gaps is no backlog');
  });

  it('a client slower than its arrivals falls behind by the difference at every send and is named as the limit', async () => {
    env = {};
    // Arrivals every 20 ms, each send held 30 ms: 10 ms more behind at every send.
    const { level, findings } = await run({ requestRate: [50], requests: 24, gpuSampleMs: 0, slowClientMs: 30 });
    const i = intended(level);
    // Quarters of 6 sends: their means are 18 sends apart.
    const perSend = (i.dispatch_delay_trend.last_quarter_ms - i.dispatch_delay_trend.first_quarter_ms) / 18;
    assert.ok(Math.abs(perSend - 10) <= 1, `the delay grew ${perSend.toFixed(2)} ms a send; 10 expected within 1 ms`);
    assert.ok(i.dispatch_delay_ms.max >= 30 + 23 * 10, `the last request went ${i.dispatch_delay_ms.max} ms late, at least 260 expected`);
    assert.equal(i.client_limited, true);
    // Latency from the intended time holds the wait (each request's TTFT plus its delay); from the send it does not.
    const fromSend = level.mean_ttft_ms as number;
    assert.ok(
      Math.abs(i.ttft_ms.mean - (fromSend + i.dispatch_delay_ms.mean)) < 0.01,
      `TTFT mean ${i.ttft_ms.mean} ms from intended, ${fromSend} ms from send`,
    );
    const last = findings[findings.length - 1];
    assert.ok(
      last.lines.some((l) => /The load generator fell behind its schedule at 50 req\/s .*the client, not the server, is the limit/.test(l)),
      last.lines.join('\n'),
    );
    assert.ok(last.tables.some((t) => t.id === 'macro-dispatch-delay'));
  });

  it('two GPUs at 250 W make 500 W over the level: its joules per output token follow, and the power cap is named', async () => {
    env = { PATH: `${FAKE_SMI}:${process.env.PATH}`, FAKE_GPU_POWER_TRACE: '250', FAKE_GPU_REASONS: '0x4' };
    const { level, findings } = await run({ concurrency: [4], requests: 40, gpuSampleMs: 100 });
    const t = level.gpu_telemetry as {
      gpus: number;
      energy_j: number;
      window_s: number;
      joules_per_output_token: number;
      throttled: { kind: string }[];
      series: unknown[][];
    };
    assert.equal(t.gpus, 2);
    const tokens = level.total_output_tokens;
    assert.equal(tokens, 40 * 4);
    // The level's window is its own start to its last response: vLLM's duration, give or take the start-up of the sampler.
    assert.ok(Math.abs(t.window_s - level.duration) < 0.25, `window ${t.window_s} s, duration ${level.duration} s`);
    assert.ok(Math.abs(t.joules_per_output_token - (500 * t.window_s) / tokens) < 1e-3, `${t.joules_per_output_token} J/token`);
    assert.deepEqual(
      t.throttled.map((x) => x.kind),
      ['power'],
    );
    assert.ok(t.series.length >= 2 && t.series.every((row) => row[2] === 250), 'the samples go to the timeline');
    const last = findings[findings.length - 1];
    assert.ok(last.lines.some((l) => /GPU throttling \(power\) at c=4/.test(l)));
    assert.ok(last.tables.some((x) => x.id === 'macro-gpu-telemetry'));
  });
});
