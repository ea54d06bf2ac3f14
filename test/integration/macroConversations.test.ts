import * as assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { FindingsUpdate, PhaseContext } from '../../src/core/campaign/phaseContext';
import { silentLogger } from '../../src/core/log';
import { startSimulator, RunningSimulator, SimulatorOptions } from '../../src/core/macro/simulator';
import { runMacroPhase } from '../../src/core/phases/macro';
import { MacroOptions } from '../../src/core/macro/options';
import { requestRecords } from '../../src/core/runs/requestTrace';
import { MacroRequestRecord } from '../../src/remote/agentSchema';
import { deployAgent, DeployedAgent } from '../../src/remote/agentDeploy';
import { LocalTransport } from '../../src/remote/localTransport';

// Multi-turn conversations against the simulator, with its prefix cache on and off. Known answers:
// - The simulator's cache (simulator/vllm_sim.py, PrefixCache) keeps a finished turn's prompt and answer in
//   full blocks of 16 tokens (the last sampled token never computed); the next turn's prompt starts with both,
//   so its hits are 16 × floor((P + O − 1) / 16) of the turn before. The hit rate is their sum over the prompts.
// - One conversation at a time (c=1), a turn's TTFT is one prefill step of its uncached tokens, step_ms(1, P −
//   hits) of the timing model (simulator/sim_timing.py). Tolerance as the other TTFT checks at c=1
//   (macro.test.ts says why): 5 ms + 5% above the model, never more than 0.3 ms below it, on the median.
const SIM: SimulatorOptions = { stepBaseMs: 10, stepPerSeqMs: 0.5, prefillPerTokenMs: 0.1, maxBatch: 64 };
const BLOCK = 16;
const pexec = promisify(execFile);

async function stepMs(prefillTokens: number[]): Promise<number[]> {
  const py = [
    'import json, sys',
    "sys.path.insert(0, 'simulator')",
    'import sim_timing as tm',
    `m = tm.TimingModel(${SIM.stepBaseMs}, ${SIM.stepPerSeqMs}, ${SIM.prefillPerTokenMs}, ${SIM.maxBatch})`,
    `print(json.dumps([m.step_ms(1, n) for n in ${JSON.stringify(prefillTokens)}]))`,
  ].join('\n');
  return JSON.parse((await pexec('python3', ['-c', py])).stdout) as number[];
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

/** Each turn with the tokens the simulator's cache held for it, from the records alone. */
function withHits(records: MacroRequestRecord[]): (MacroRequestRecord & { hits: number })[] {
  const byConversation = new Map<number, MacroRequestRecord[]>();
  for (const r of records) byConversation.set(r.conversation!, [...(byConversation.get(r.conversation!) ?? []), r]);
  return [...byConversation.values()].flatMap((turns) => {
    turns.sort((a, b) => a.turn! - b.turn!);
    return turns.map((r, i) => {
      const before = turns[i - 1];
      const shared = before ? Math.min(before.prompt_tokens! + before.output_tokens! - 1, r.prompt_tokens! - 1) : 0;
      return { ...r, hits: Math.floor(shared / BLOCK) * BLOCK };
    });
  });
}

describe('multi-turn conversations against the simulator (known answers)', function () {
  this.timeout(90_000);
  const workspace = mkdtempSync(join(tmpdir(), 'ib-turns-'));
  const cache = mkdtempSync(join(tmpdir(), 'ib-turns-cache-'));
  const transport = new LocalTransport();
  const local = Object.create(transport) as LocalTransport;
  local.exec = (argv, options = {}) => transport.exec(argv, { ...options, env: { XDG_CACHE_HOME: cache, ...options.env } });
  let agent: DeployedAgent;
  const sims: RunningSimulator[] = [];

  before(async () => {
    assert.ok(existsSync('dist/agent.pyz'), 'dist/agent.pyz is missing: run `npm run build` first');
    agent = await deployAgent(local, 'dist/agent.pyz', 'python3');
  });
  after(async () => {
    await Promise.all(sims.map((s) => s.stop()));
    await transport.close();
  });

  async function run(extraArgs: string[]) {
    const sim = await startSimulator({ ...SIM, port: 0, extraArgs });
    sims.push(sim);
    const findings: FindingsUpdate[] = [];
    const ctx: PhaseContext = {
      target: { name: 'sim', kind: 'local', serverUrl: sim.url, python: 'python3' },
      transport: local,
      agent,
      workspace,
      log: silentLogger,
      sink: { runChanged: () => undefined, findings: (u) => findings.push(u) },
    };
    const options: MacroOptions = {
      api: 'chat',
      dataset: 'multi_turn',
      multiTurn: { turns: 4, conversations: 3 },
      concurrency: [1],
      inputLen: 100,
      outputLen: 16,
      warmup: 0,
    };
    const out = await runMacroPhase(ctx, options);
    assert.equal(out.agent.status, 'completed', out.agent.reason);
    const records = requestRecords(out.run.readEvents()).map((r) => r.record);
    assert.equal(records.length, 12);
    return { records: withHits(records), findings: findings.at(-1)!, level: out.levels[0] };
  }

  it("hits each turn's history in the server's prefix cache, as its own counters say, and later turns start sooner for it", async () => {
    const cached = await run([]);
    const uncached = await run(['--no-enable-prefix-caching']);

    // The hit rate the conversations imply, in the findings' table of conversations and of the server's state.
    const hits = cached.records.reduce((n, r) => n + r.hits, 0);
    const queried = cached.records.reduce((n, r) => n + r.prompt_tokens!, 0);
    assert.match(cached.findings.lines.join('\n'), /multi-turn: 3 conversations × 4 turns, \+100 tokens a turn → 16 output tokens/);
    const table = cached.findings.tables.find((t) => t.id === 'macro-conversations');
    assert.ok(table, 'the findings carry a table of the conversations');
    const row = table.rows[0];
    assert.ok(
      Math.abs((row.hit_rate as number) - (100 * hits) / queried) < 0.1,
      `hit rate ${String(row.hit_rate)}%, conversations imply ${(100 * hits) / queried}%`,
    );
    assert.equal(row.context_mean, queried / 12);
    assert.equal(uncached.findings.tables.find((t) => t.id === 'macro-conversations')!.rows[0].hit_rate, undefined, 'no cache, no counters');

    // Each later turn's TTFT is the prefill of what the cache did not hold: the model's step, on and off.
    for (const [what, records, cachedTokens] of [
      ['cache on', cached.records, (r: { hits: number }) => r.hits],
      ['cache off', uncached.records, () => 0],
    ] as const) {
      const later = records.filter((r) => r.turn! > 1);
      const model = await stepMs(later.map((r) => r.prompt_tokens! - cachedTokens(r)));
      const residual = median(later.map((r, i) => r.ttft_ms! - model[i]));
      const allowed = 5 + 0.05 * median(model);
      assert.ok(
        residual > -0.3 && residual < allowed,
        `${what}: later turns' TTFT ${residual.toFixed(2)} ms from the model (allowed -0.3 to ${allowed.toFixed(1)})`,
      );
    }
    const laterTtft = (records: MacroRequestRecord[]) => median(records.filter((r) => r.turn! > 1).map((r) => r.ttft_ms!));
    const saved = median(cached.records.filter((r) => r.turn! > 1).map((r) => r.hits)) * SIM.prefillPerTokenMs!;
    assert.ok(
      laterTtft(uncached.records) - laterTtft(cached.records) > saved / 2,
      `later turns' TTFT ${laterTtft(cached.records).toFixed(1)} ms cached against ${laterTtft(uncached.records).toFixed(1)} ms uncached; the cache saves about ${saved.toFixed(1)} ms`,
    );
  });
  it("infbench macro --dataset-name multi_turn prints each level's conversations, context and hit rate", async () => {
    const sim = await startSimulator({ ...SIM, port: 0 });
    sims.push(sim);
    const args = ['macro', '--target', 'local', '--url', sim.url, '--workspace', workspace, '--warmup', '0'];
    args.push('--dataset-name', 'multi_turn', '--multi-turn-turns', '3', '--multi-turn-conversations', '2', '--concurrency', '2');
    args.push('--input-len', '40', '--output-len', '8');
    const { stdout } = await pexec('node', [join(process.cwd(), 'dist', 'cli.js'), ...args], { env: { ...process.env, XDG_CACHE_HOME: cache } });
    assert.match(stdout, /Multi-turn conversations per load level/);
    assert.match(stdout, /Prefix-cache hit %/);
    assert.match(stdout, /c=2 +2 +3 /, 'the level ran 2 conversations of 3 turns');
  });
});
