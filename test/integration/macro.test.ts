import * as assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { FindingsUpdate, PhaseContext } from '../../src/core/campaign/phaseContext';
import { silentLogger } from '../../src/core/log';
import { startSimulator, RunningSimulator, SimulatorOptions } from '../../src/core/macro/simulator';
import { runMacroPhase } from '../../src/core/phases/macro';
import { levelTable } from '../../src/core/macro/tables';
import { steadyWindow } from '../../src/core/macro/steadyWindow';
import { MacroOptions } from '../../src/core/macro/options';
import { deployAgent, DeployedAgent } from '../../src/remote/agentDeploy';
import { LocalTransport } from '../../src/remote/localTransport';
import { MacroLevelSummary, RunSummary } from '../../src/shared/results';

// Known answers: the simulator's timing model (simulator/sim_timing.py), replayed by its own
// predict_* functions, is what a correct client must measure. These tests run the real simulator as a
// child process and the real deployed agent over the local transport.
//
// Timing model used: step = 10 ms + 0.5 ms x running + 0.01 ms per prompt token of the joiners.
// Tolerances, and why:
// - TPOT (median over requests): 3% + 0.2 ms. TPOT = (E2EL - TTFT)/(n - 1) spans 31 steps whose
//   deadlines are absolute, so a late wake-up at either end moves it by ~1 ms / 31; the rest covers a
//   busy 2-core host. The median keeps one request delivered late by a stalled process from deciding.
// The timing tests may run twice: a host with several times more runnable processes than cores can
// stall the simulator's scheduler thread for tens of milliseconds, which no tolerance should hide.
// - Output throughput: 5%. The duration (first send to last finish) holds a few scheduler and TCP
//   hand-offs per wave (~0.3-1 ms each) against waves of ~350-900 ms.
// - TTFT at c=1 (median): 5 ms + 5% above the model, and never below it (minus 0.3 ms). Nothing
//   averages TTFT out: it is one prefill step (11.5 ms) plus four wake-ups (server loop, scheduler
//   thread, server loop, client), each up to ~1 ms late on a 2-core host busy with other test layers
//   (seen: 1-4 ms extra at load average 8). The floor is the sharp check: a client that stamped the
//   response headers, or any byte before the first token, would read ~1 ms.
// - TTFT at c>1: 25% + one batch-c step. Which step a request joins depends on when it arrives
//   against the step boundaries (one that misses a boundary waits a whole step); the replay assumes
//   the first wave arrives within 0.5 ms, and two client processes open their streams less in step.
const SIM: SimulatorOptions = { stepBaseMs: 10, stepPerSeqMs: 0.5, prefillPerTokenMs: 0.01, maxBatch: 64 };
const INPUT = 100;
const OUTPUT = 32;

const pexec = promisify(execFile);

interface Prediction {
  ttft_ms: number;
  tpot_ms: number;
  output_throughput: number;
}

async function predict(kind: 'single' | 'closed', concurrency = 1, requests = 1): Promise<Prediction> {
  const py = [
    'import json, sys',
    "sys.path.insert(0, 'simulator')",
    'import sim_timing as tm',
    `m = tm.TimingModel(${SIM.stepBaseMs}, ${SIM.stepPerSeqMs}, ${SIM.prefillPerTokenMs}, ${SIM.maxBatch})`,
    kind === 'single'
      ? `print(json.dumps(tm.predict_single_stream(m, ${INPUT}, ${OUTPUT})))`
      : `print(json.dumps(tm.predict_closed_loop(m, ${concurrency}, ${requests}, ${INPUT}, ${OUTPUT})))`,
  ].join('\n');
  const { stdout } = await pexec('python3', ['-c', py]);
  return JSON.parse(stdout) as Prediction;
}

function within(measured: unknown, expected: number, relative: number, absolute: number, what: string): void {
  assert.equal(typeof measured, 'number', `${what} was not measured`);
  const m = measured as number;
  const allowed = expected * relative + absolute;
  if (process.env.INFBENCH_VERBOSE) console.log(`      ${what}: measured ${m.toFixed(3)}, model ${expected.toFixed(3)}, allowed ±${allowed.toFixed(3)}`);
  assert.ok(Math.abs(m - expected) <= allowed, `${what}: measured ${m.toFixed(3)}, model says ${expected.toFixed(3)} (allowed ±${allowed.toFixed(3)})`);
}

class RecordingSink {
  runs: RunSummary[] = [];
  findings: FindingsUpdate[] = [];
  /** Run-folder files an update cited that were not there when it came (a link in the findings that opens nothing). */
  missingCited: string[] = [];
  constructor(private readonly workspace?: string) {}
  runChanged(run: RunSummary) {
    this.runs.push(structuredClone(run));
  }
  findingsUpdate = (u: FindingsUpdate) => {
    this.findings.push(u);
    const text = JSON.stringify(u);
    for (const [, cited] of text.matchAll(/`(\.inference-bench\/runs\/[^`]+)`/g))
      if (this.workspace && !existsSync(join(this.workspace, cited))) this.missingCited.push(cited);
  };
}

describe('macro phase against the simulator (known answers)', function () {
  this.timeout(60_000);
  const workspace = mkdtempSync(join(tmpdir(), 'ib-macro-'));
  const cache = mkdtempSync(join(tmpdir(), 'ib-macro-cache-'));
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

  async function simulator(extra: SimulatorOptions = {}): Promise<RunningSimulator> {
    const sim = await startSimulator({ ...SIM, port: 0, ...extra });
    sims.push(sim);
    return sim;
  }

  function context(sim: RunningSimulator, sink: RecordingSink, signal?: AbortSignal): PhaseContext {
    return {
      target: { name: 'sim', kind: 'local', serverUrl: sim.url, python: 'python3' },
      transport: local,
      agent,
      workspace,
      log: silentLogger,
      signal,
      sink: { runChanged: (r) => sink.runChanged(r), findings: sink.findingsUpdate },
    };
  }

  const base: MacroOptions = { inputLen: INPUT, outputLen: OUTPUT, warmup: 1 };

  it('measures single-stream decode speed and TTFT as the timing model predicts', async function () {
    const sim = await simulator();
    const sink = new RecordingSink();
    const out = await runMacroPhase(context(sim, sink), { ...base, concurrency: [1], requests: 8 });
    assert.equal(out.agent.status, 'completed', out.agent.reason);
    const [level] = out.levels;
    const want = await predict('single');
    assert.equal(level.completed, 8);
    assert.equal(level.failed, 0);
    within(level.median_tpot_ms, want.tpot_ms, 0.03, 0.2, 'median TPOT at c=1 (ms)');
    within(level.median_itl_ms, want.tpot_ms, 0.03, 0.3, 'median ITL at c=1 (ms)');
    const medianTtft = level.median_ttft_ms as number;
    assert.ok(medianTtft <= want.ttft_ms * 1.05 + 5, `median TTFT at c=1: ${medianTtft} ms, model ${want.ttft_ms} ms (+5% +5 ms allowed)`);
    const fastest = out.summary.macro!.requests!.reduce((m, r) => Math.min(m, r.ttft_ms ?? Infinity), Infinity);
    assert.ok(fastest >= want.ttft_ms - 0.3, `a TTFT of ${fastest} ms is faster than the model's ${want.ttft_ms} ms: the client stamps too early`);
    // usage counts are exact and the server's own counters agree
    assert.equal(level.total_output_tokens, 8 * OUTPUT);
    assert.equal(level.total_input_tokens, 8 * INPUT);
    assert.equal((level.server_metrics as { generation_tokens_match?: boolean }).generation_tokens_match, true);
    // the simulator is labelled as such everywhere the result goes
    assert.equal(out.summary.simulated, true);
    assert.match(out.summary.headline ?? '', /^decode \d+\.\d tok\/s at c=1/);
    const stored = out.run.readResult<{ levels: MacroLevelSummary[] }>();
    assert.equal(stored?.levels.length, 1);
    for (const key of [
      'completed',
      'failed',
      'duration',
      'request_throughput',
      'output_throughput',
      'total_token_throughput',
      'mean_ttft_ms',
      'median_tpot_ms',
      'p99_itl_ms',
      'std_e2el_ms',
    ]) {
      assert.ok(key in stored!.levels[0], `result.json lacks vLLM field ${key}`);
    }
    const findings = sink.findings.at(-1)!;
    assert.equal(findings.tables[0].rows.length, 1);
    assert.ok(findings.lines.some((l) => /Simulator/.test(l)));
  });

  it('measures TPOT and throughput across a concurrency sweep as the scheduler replay predicts', async function () {
    const sim = await simulator();
    const sink = new RecordingSink(workspace);
    const levels = [4, 16];
    // Two load-generator processes per level: the deployed zipapp starts its own workers.
    const out = await runMacroPhase(context(sim, sink), { ...base, concurrency: levels, workers: 2 });
    assert.equal(out.agent.status, 'completed', out.agent.reason);
    assert.equal(out.levels.length, 2);
    for (const [i, c] of levels.entries()) {
      const level = out.levels[i];
      const n = Math.max(8, 4 * c);
      assert.equal(level.completed, n);
      const want = await predict('closed', c, n);
      within(level.median_tpot_ms, want.tpot_ms, 0.03, 0.2, `median TPOT at c=${c} (ms)`);
      within(level.output_throughput, want.output_throughput, 0.05, 0, `output throughput at c=${c} (tok/s)`);
      const stepMs = SIM.stepBaseMs! + SIM.stepPerSeqMs! * c;
      within(level.mean_ttft_ms, want.ttft_ms, 0.25, stepMs, `TTFT at c=${c} (ms)`);
      assert.ok((level.max_concurrent_requests as number) <= c, 'never more requests in flight than the level allows');
      assert.equal((level.client_cpu as { workers: number }).workers, 2);
    }
    // live: per-request points and running aggregates arrived before the end
    assert.ok(sink.runs.some((r) => r.status === 'running' && (r.macro?.requests?.length ?? 0) > 0));
    assert.equal(out.summary.macro?.requests?.length, 16 + 64);
    // Each update of the findings, the live ones too, cites run-folder files that are there to open.
    assert.ok(sink.findings.length > 1, 'no live findings update came before the end');
    assert.deepEqual(sink.missingCited, []);
  });

  it("records the server's queue and batch per level and names the level past which more load only waits", async function () {
    // The simulator batches at most 4 requests: c=16 queues 12 while throughput stays where c=4 had it.
    const sim = await simulator({ maxBatch: 4 });
    const sink = new RecordingSink();
    const out = await runMacroPhase(context(sim, sink), { ...base, outputLen: 64, concurrency: [2, 4, 16] });
    assert.equal(out.agent.status, 'completed', out.agent.reason);
    const findings = sink.findings.at(-1)!;
    const state = findings.tables.find((t) => t.id === 'macro-server-state');
    assert.ok(state, `no server-state table in the findings: ${findings.tables.map((t) => t.id).join(', ')}`);
    const [c2, c4, c16] = state.rows;
    // never more requests in the server than the client had sent
    assert.ok((c2.running_max as number) <= 2 && (c2.waiting_max as number) <= 2, `c=2: ${JSON.stringify(c2)}`);
    assert.equal(c4.running_max, 4);
    assert.equal(c16.running_max, 4, 'the server never ran more than its batch');
    assert.ok((c16.waiting_max as number) >= 10, `c=16 queued ${String(c16.waiting_max)} at most; 12 expected`);
    const saturated = findings.lines.filter((l) => /Over-saturated/.test(l));
    assert.equal(saturated.length, 1, findings.lines.join('\n'));
    assert.match(saturated[0], /from c=16: the server queued \d+\.\d requests on average/);
    assert.match(saturated[0], /past c=4 more load only waits/);
    // The same seconds as a Chrome trace: one bar per request on lanes that never overlap, the server's counters beneath.
    assert.ok(findings.lines.some((l) => l.includes(`.inference-bench/runs/${out.run.info.id}/requests.trace.json`)));
    const trace = JSON.parse(readFileSync(join(out.run.dir, 'requests.trace.json'), 'utf8')) as {
      traceEvents: { name: string; ph: string; pid: number; tid?: number; ts?: number; dur?: number; args?: Record<string, number> }[];
    };
    const bars = trace.traceEvents.filter((e) => e.ph === 'X' && e.name.startsWith('request'));
    assert.equal(
      bars.length,
      out.levels.reduce((n, l) => n + l.completed, 0),
    );
    for (const [pid, c] of [
      [1, 2],
      [2, 4],
      [3, 16],
    ]) {
      const lanes = new Set(bars.filter((b) => b.pid === pid).map((b) => b.tid));
      assert.equal(lanes.size, c, `level c=${c} drew ${lanes.size} lanes`);
    }
    const queued = trace.traceEvents.filter((e) => e.ph === 'C' && e.name === 'requests').map((e) => e.args!.waiting);
    assert.ok(Math.max(...queued) >= 10, `the server's queue on the trace: ${queued.join(', ')}`);
  });

  it("measures a shared-prefix workload's prefix-cache hit rate from the server's own counters, as the workload implies", async function () {
    // 20 requests in 4 groups, one at a time: each group's first misses, the other 16 find their 64 prefix tokens cached.
    const sim = await simulator();
    const sink = new RecordingSink();
    const out = await runMacroPhase(context(sim, sink), {
      ...base,
      warmup: 0,
      outputLen: 4,
      concurrency: [1],
      requests: 20,
      dataset: 'prefix_repetition',
      prefixRepetition: { prefixLen: 64, suffixLen: 32, numPrefixes: 4 },
    });
    assert.equal(out.agent.status, 'completed', out.agent.reason);
    const findings = sink.findings.at(-1)!;
    assert.match(findings.lines.join('\n'), /prompts in 4 groups sharing a prefix \(vllm bench serve's prefix_repetition\): 64 shared \+ 32 own tokens/);
    const state = findings.tables.find((t) => t.id === 'macro-server-state');
    assert.ok(state?.columns.some((c) => c.label === 'Prefix-cache hit %'));
    within(state!.rows[0].hit_rate as number, (100 * 16 * 64) / (20 * 96), 0.001, 0, 'prefix-cache hit % at c=1');
  });

  it("trims a level's ramp and drain: its steady window holds the batch the level names", async function () {
    // step = 10 + 2 x running ms. Eight streams keep 8 running, but for the step after each finish (the next
    // request joins a step later), so inside the window a step holds 7 or 8: TPOT between step(7) and step(8), and
    // tokens/s between 7/step(7) and 8/step(8). The whole level's figures include the ramp and the drain.
    const sim = await simulator({ stepBaseMs: 10, stepPerSeqMs: 2, prefillPerTokenMs: 0 });
    const out = await runMacroPhase(context(sim, new RecordingSink()), {
      ...base,
      warmup: 0,
      inputLen: 16,
      outputLen: 32,
      rangeRatio: 0.5,
      concurrency: [8],
      requests: 40,
    });
    assert.equal(out.agent.status, 'completed', out.agent.reason);
    const steady = steadyWindow(out.levels[0]);
    assert.ok(steady, `no steady window: ${JSON.stringify(out.levels[0].steady)}`);
    const step = (running: number) => 10 + 2 * running;
    const tpot = steady.mean_tpot_ms!;
    assert.ok(tpot >= step(7) * 0.99 && tpot <= step(8) * 1.01, `steady TPOT ${tpot} ms, between ${step(7)} and ${step(8)} expected`);
    const tput = steady.output_throughput;
    assert.ok(tput >= (7000 / step(7)) * 0.98 && tput <= (8000 / step(8)) * 1.02, `steady output ${tput} tok/s`);
    assert.ok(out.levels[0].output_throughput < tput, "the ramp and drain lower the whole level's throughput");
    assert.ok(steady.start_s > 0 && steady.end_s < out.levels[0].duration, `window ${steady.start_s}–${steady.end_s} s of ${out.levels[0].duration} s`);
  });

  it('reports faults as failures with reasons and keeps them out of the latency figures', async function () {
    const sim = await simulator({ faults: ['error500:every=4', 'cut:every=5:after=3'] });
    const sink = new RecordingSink();
    const out = await runMacroPhase(context(sim, sink), { ...base, warmup: 0, concurrency: [4], requests: 20 });
    assert.equal(out.agent.status, 'completed', out.agent.reason);
    const [level] = out.levels;
    // requests 4, 8, 12, 16, 20 answer HTTP 500; 5, 10, 15 are cut after 3 tokens
    assert.equal(level.failed, 8);
    assert.equal(level.completed, 12);
    assert.deepEqual(level.failures, { http_500: 5, stream_cut: 3 });
    assert.ok((level.errors as string[]).some((e) => /HTTP 500: simulated internal server error/.test(e)));
    assert.equal(level.total_output_tokens, 12 * OUTPUT, 'cut streams add no tokens to the totals');
    // Only complete requests count: their TPOT is the model's, not dragged by the cut ones.
    const tpot = level.median_tpot_ms as number;
    assert.ok(tpot >= 10 + 0.5 * 3 && tpot < 10 + 0.5 * 4 + 1.5, `median TPOT ${tpot} ms is not a batch-3..4 step`);
    assert.match(out.summary.headline ?? '', /8 failed/);
    const failures = sink.findings.at(-1)!.tables.find((t) => t.id === 'macro-failures');
    assert.ok(failures, 'a failures table is written to the findings');
    assert.deepEqual(failures.rows.map((r) => r.reason).sort(), ['http_500', 'stream_cut']);
  });

  it('keeps the finished levels when cancelled mid-sweep, and stops promptly', async () => {
    const sim = await simulator();
    const sink = new RecordingSink();
    const abort = new AbortController();
    const ctx = context(sim, sink, abort.signal);
    const inner = ctx.sink.runChanged;
    let cancelledAt = 0;
    ctx.sink = {
      ...ctx.sink,
      runChanged: (r) => {
        inner(r);
        if (!cancelledAt && r.macro?.levels.some((l) => !l.partial)) {
          cancelledAt = Date.now();
          setTimeout(() => abort.abort(), 300);
        }
      },
    };
    const out = await runMacroPhase(ctx, { ...base, warmup: 0, concurrency: [1, 2], requests: 4 });
    const stoppedAfter = Date.now() - cancelledAt;
    assert.equal(out.agent.status, 'cancelled');
    assert.ok(stoppedAfter < 4000, `took ${stoppedAfter} ms to stop`);
    assert.equal(out.levels.length >= 1, true);
    assert.equal(out.levels[0].completed, 4);
    const stored = out.run.readResult<{ levels: MacroLevelSummary[]; cancelled: boolean }>();
    assert.equal(stored?.levels[0].completed, 4, 'result.json keeps the finished level');
    assert.equal(stored?.cancelled, true);
    assert.equal(out.run.info.status, 'cancelled');
    // The c=2 level was cut 300 ms in: marked so in result.json, the table and the findings, and
    // never the headline's peak, although its few requests may well have the higher rate.
    const cut = stored!.levels.find((l) => l.max_concurrency === 2)!;
    assert.ok(cut, 'the cut level is kept');
    assert.equal(cut.partial, true);
    assert.equal(cut.cut?.reason, 'cancelled');
    assert.equal(cut.cut?.planned, 4);
    assert.ok(cut.cut!.done < 4, `cut after ${cut.cut!.done} of 4`);
    assert.doesNotMatch(out.summary.headline ?? '', /peak .* at c=2/);
    assert.match(out.summary.headline ?? '', /c=2 cut short/);
    const update = sink.findings.at(-1)!;
    assert.match(update.lines.join('\n'), /c=2 was cut short: \d of 4 requests \(cancelled\)/);
    // The document quotes a few figures per level; the run folder keeps the full table.
    const quoted = update.tables.find((t) => t.id === 'macro-quoted')!;
    assert.deepEqual(
      quoted.rows.map((r) => r.level),
      ['c=1', `c=2 (cut short: ${cut.cut!.done} of 4 requests (cancelled))`],
    );
    const full = readFileSync(join(out.run.dir, 'serving-table.md'), 'utf8');
    assert.match(full, /\| c=2 \(cut short: \d of 4 requests \(cancelled\)\) +\|/);
    assert.match(full, /ITL p99/);
  });

  it('tells the seed story: the default preset decodes at about 46 tok/s single stream', async () => {
    const sim = await startSimulator({ port: 0 });
    sims.push(sim);
    const out = await runMacroPhase(context(sim, new RecordingSink()), { concurrency: [1], requests: 3, inputLen: 64, outputLen: 24, warmup: 0 });
    assert.equal(out.agent.status, 'completed', out.agent.reason);
    assert.match(sim.model, /Kimi-K2\.5.*\(simulated\)/);
    // The preset's own single-stream rate, from the simulator's timing model.
    const { stdout } = await pexec('python3', [resolve('simulator', 'vllm_sim.py'), '--describe']);
    const model = (JSON.parse(stdout) as { single_stream_tok_s: number }).single_stream_tok_s;
    const m = /^decode ([\d.]+) tok\/s at c=1 \(1\/TPOT\)$/.exec(out.summary.headline ?? '');
    assert.ok(m, `headline: ${out.summary.headline}`);
    // As TPOT in the tests above: within 3% + 0.2 ms of the model's step (a busy host delays a stamp by a few ms).
    within(1000 / Number(m[1]), 1000 / model, 0.03, 0.2, 'single-stream TPOT of the seed preset (ms)');
  });

  /** Each finished request's record as the agent sent it (the run folder's event log). */
  function requestRecords(out: { run: { readEvents(): unknown[] } }): { id: number; ok: boolean; prompt_tokens: number; output_tokens: number }[] {
    return (out.run.readEvents() as { type?: string; record?: { id: number; ok: boolean; prompt_tokens: number; output_tokens: number } }[])
      .filter((e) => e.type === 'macro.request' && e.record)
      .map((e) => e.record!);
  }

  it('sends each request its own prompt and output length within the range ratio, the ones its seed and index draw', async () => {
    const sim = await simulator();
    const sink = new RecordingSink();
    const out = await runMacroPhase(context(sim, sink), { ...base, warmup: 0, concurrency: [4], requests: 24, rangeRatio: 0.5, seed: 7, workers: 2 });
    assert.equal(out.agent.status, 'completed', out.agent.reason);
    const records = requestRecords(out);
    assert.equal(records.length, 24);
    // vLLM's bounds for --random-range-ratio 0.5: floor(100 x 0.5) to ceil(100 x 1.5), and 16 to 48.
    for (const r of records) {
      assert.ok(r.ok && r.prompt_tokens >= 50 && r.prompt_tokens <= 150, `prompt of ${r.prompt_tokens} tokens`);
      assert.ok(r.output_tokens >= 16 && r.output_tokens <= 48, `output of ${r.output_tokens} tokens`);
    }
    const prompts = records.map((r) => r.prompt_tokens);
    assert.ok(new Set(prompts).size >= 15 && Math.max(...prompts) - Math.min(...prompts) >= 50, `prompt lengths barely spread: ${prompts.join(', ')}`);
    // The server's usage counts are exactly what the agent's draw for each request's index gives (the
    // simulator's tokenizer counts a word as one token): two worker processes drew the same.
    const { stdout } = await pexec('python3', [
      '-c',
      [
        'import json, sys',
        "sys.path.insert(0, 'agent')",
        'from infbench_agent.macro.prompts import PromptMaker',
        `m = PromptMaker('completions', 'm', ${INPUT}, ${OUTPUT}, True, 7, range_ratio=0.5)`,
        `print(json.dumps([m.lengths(i) for i in ${JSON.stringify(records.map((r) => r.id))}]))`,
      ].join('\n'),
    ]);
    assert.deepEqual(
      records.map((r) => [r.prompt_tokens, r.output_tokens]),
      JSON.parse(stdout),
    );
    const [level] = out.levels;
    assert.equal(level.range_ratio, 0.5);
    assert.deepEqual(level.input_len_range, [50, 150]);
    assert.equal(
      level.total_input_tokens,
      prompts.reduce((a, b) => a + b, 0),
    );
    const update = sink.findings.at(-1)!;
    assert.match(update.lines.join('\n'), /random prompts, 100 → 32 tokens, each ±50% \(50–150 → 16–48, range ratio 0\.5\)/);
    // The full table (the results view's, and serving-table.md in the run folder) says what each level sent.
    const row = levelTable(out.levels).rows[0];
    assert.equal(row.mean_input_tokens, level.total_input_tokens / 24);
  });

  it("sends a ShareGPT file's first turns with their second turns' lengths, leaving out what vLLM filters", async () => {
    const sim = await simulator();
    const sink = new RecordingSink();
    const fixture = resolve('test/fixtures/sharegpt/sharegpt-small.json');
    // What vllm bench serve --dataset-name sharegpt keeps, counted with this server's /tokenize.
    const count = async (text: string) =>
      ((await (await fetch(`${sim.url}/tokenize`, { method: 'POST', body: JSON.stringify({ prompt: text }) })).json()) as { count: number }).count;
    const entries = JSON.parse(readFileSync(fixture, 'utf8')) as { conversations: { value: string }[] }[];
    const kept = new Set<string>();
    const dropped = new Set<string>();
    for (const e of entries.filter((x) => x.conversations.length >= 2)) {
      const [p, o] = [await count(e.conversations[0].value), await count(e.conversations[1].value)];
      (p < 4 || o < 4 || p > 1024 || p + o > 2048 ? dropped : kept).add(`${p}/${o}`);
    }
    assert.equal(kept.size, 5);
    const out = await runMacroPhase(context(sim, sink), { ...base, warmup: 0, concurrency: [2], requests: 10, dataset: 'sharegpt', datasetPath: fixture });
    assert.equal(out.agent.status, 'completed', out.agent.reason);
    const sent = requestRecords(out).map((r) => `${r.prompt_tokens}/${r.output_tokens}`);
    assert.equal(sent.length, 10);
    for (const pair of sent) assert.ok(kept.has(pair), `a request of ${pair} prompt/output tokens is no kept conversation`);
    assert.deepEqual(new Set(sent), kept, 'ten requests over five kept conversations send each of them');
    const [level] = out.levels;
    assert.equal(level.dataset_name, 'sharegpt');
    assert.equal(level.dataset_path, fixture);
    const stored = out.run.readResult<{ prompts: { sharegpt: { kept: number; dropped: Record<string, number>; lengths_by: string } } }>()!;
    assert.deepEqual(stored.prompts.sharegpt.dropped, { prompt_too_short: 1, output_too_short: 1, prompt_too_long: 1, total_too_long: 1 });
    assert.equal(stored.prompts.sharegpt.lengths_by, 'tokenize');
    const update = sink.findings.at(-1)!;
    assert.match(update.lines.join('\n'), /ShareGPT conversations from .*sharegpt-small\.json, each with its second turn's output length/);
    assert.ok(levelTable(out.levels).columns.some((c) => c.label === 'Output tok mean'));
  });

  it('refuses bad load options with a message that names them, before anything runs', async () => {
    const sim = await simulator();
    const ctx = context(sim, new RecordingSink());
    await assert.rejects(runMacroPhase(ctx, { concurrency: [0, 8] }), /concurrency values must be positive/);
    await assert.rejects(runMacroPhase(ctx, { concurrency: [1.5] }), /whole numbers/);
    await assert.rejects(runMacroPhase(ctx, { outputLen: 0 }), /output length must be a whole number/);
  });

  it('infbench macro reads a ShareGPT file named as vllm bench serve names it, with every output length replaced', async () => {
    const sim = await simulator();
    const outFile = join(workspace, 'cli-sharegpt.json');
    await pexec(
      'node',
      [
        resolve('dist/cli.js'),
        'macro',
        '--target',
        'local',
        '--url',
        sim.url,
        '--concurrency',
        '7',
        '--requests',
        '7',
        '--dataset-name',
        'sharegpt',
        '--dataset-path',
        resolve('test/fixtures/sharegpt/sharegpt-small.json'),
        '--sharegpt-output-len',
        '4',
        '--warmup',
        '0',
        '--workspace',
        workspace,
        '--out',
        outFile,
      ],
      { env: { ...process.env, XDG_CACHE_HOME: cache } },
    );
    const result = JSON.parse(readFileSync(outFile, 'utf8')) as { levels: MacroLevelSummary[]; prompts: { sharegpt: { kept: number } } };
    // The one-word answer and the long story pass once their second turns no longer count: seven kept.
    assert.equal(result.prompts.sharegpt.kept, 7);
    assert.equal(result.levels[0].completed, 7);
    assert.equal(result.levels[0].total_output_tokens, 7 * 4);
    assert.equal(result.levels[0].output_len, 4);
  });

  it('infbench macro writes one object per level with vLLM field names', async () => {
    const sim = await simulator();
    const outFile = join(workspace, 'cli-result.json');
    const { stdout } = await pexec(
      'node',
      [
        resolve('dist/cli.js'),
        'macro',
        '--target',
        'local',
        '--url',
        sim.url,
        '--concurrency',
        '1,2',
        '--requests',
        '4',
        '--input-len',
        '32',
        '--output-len',
        '8',
        '--warmup',
        '0',
        '--workspace',
        workspace,
        '--out',
        outFile,
      ],
      { env: { ...process.env, XDG_CACHE_HOME: cache } },
    );
    assert.match(stdout, /SIMULATOR/);
    assert.match(stdout, /c=1 .*\n.*c=2/s);
    const result = JSON.parse(readFileSync(outFile, 'utf8')) as { levels: MacroLevelSummary[] };
    assert.deepEqual(
      result.levels.map((l) => l.max_concurrency),
      [1, 2],
    );
    assert.deepEqual(
      result.levels.map((l) => l.completed),
      [4, 4],
    );
    assert.ok(result.levels.every((l) => typeof l.mean_tpot_ms === 'number' && typeof l.p99_ttft_ms === 'number'));
  });
});
