import * as assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { PhaseContext } from '../../src/core/campaign/phaseContext';
import { compareRunFolders } from '../../src/core/compare/compareRuns';
import { importVllmBench } from '../../src/core/compare/vllmBench';
import { explainRuns, selectRuns } from '../../src/core/explain/campaign';
import { silentLogger } from '../../src/core/log';
import { startSimulator, RunningSimulator } from '../../src/core/macro/simulator';
import { runMacroPhase } from '../../src/core/phases/macro';
import { runProfilePhase } from '../../src/core/phases/profile';
import { runMicroPhase } from '../../src/core/phases/micro';
import { deployAgent, DeployedAgent } from '../../src/remote/agentDeploy';
import { LocalTransport } from '../../src/remote/localTransport';

// Known answers: the simulator's default preset (simulator/sim_timing.py, kimi-k25-tp8) decodes one
// sequence in 21.5 + 0.2 = 21.7 ms, of which all-reduce is 10.919 (custom) + 0.251 (NCCL) = 11.17 ms
// (51.5%). Its traces write those durations exactly, so the profiled step and categories must match to
// within rounding (0.05 ms); the macro TPOT is measured over loopback HTTP and gets the macro tests'
// tolerance (3% + 0.2 ms).
const STEP_MS = 21.7;
const ALLREDUCE_MS = 10.919 + 0.251;
const pexec = promisify(execFile);

describe('decode-step budget from simulator runs (known answers)', function () {
  this.timeout(120_000);
  const workspace = mkdtempSync(join(tmpdir(), 'ib-explain-'));
  const profilerDir = mkdtempSync(join(tmpdir(), 'ib-explain-traces-'));
  const cache = mkdtempSync(join(tmpdir(), 'ib-explain-cache-'));
  const transport = new LocalTransport();
  const local = Object.create(transport) as LocalTransport;
  local.exec = (argv, options = {}) => transport.exec(argv, { ...options, env: { XDG_CACHE_HOME: cache, ...options.env } });
  let agent: DeployedAgent;
  let sim: RunningSimulator;

  before(async () => {
    assert.ok(existsSync('dist/agent.pyz'), 'dist/agent.pyz is missing: run `npm run build` first');
    agent = await deployAgent(local, 'dist/agent.pyz', 'python3');
    sim = await startSimulator({ port: 0, profilerDir, profileMaxSteps: 16 });
  });
  after(async () => {
    await sim?.stop();
    await transport.close();
  });

  it('accounts for the simulated step: TPOT, profiled step, all-reduce 11.17 of 21.7 ms, micro missing', async () => {
    const ctx: PhaseContext = {
      target: { name: 'sim', kind: 'local', serverUrl: sim.url, python: 'python3' },
      transport: local,
      agent,
      workspace,
      log: silentLogger,
      sink: { runChanged() {}, findings() {} },
    };
    const macro = await runMacroPhase(ctx, { concurrency: [1], requests: 4, inputLen: 64, outputLen: 24, warmup: 1 });
    assert.equal(macro.agent.status, 'completed', macro.agent.reason);

    // The profiler phase: the agent starts the simulator's profiler, decodes one request, stops it; the
    // simulator writes one Kineto trace per rank, which the phase copies and analyses.
    const profiled = await runProfilePhase(ctx, { concurrency: 1, outputLen: 12, inputLen: 32 });
    assert.equal(profiled.agent.status, 'completed', profiled.agent.reason ?? profiled.summary.reason);
    assert.equal(profiled.traces.length, 8, 'one trace per TP rank');
    const profile = profiled.run;

    const budget = explainRuns(selectRuns(workspace));
    assert.equal(budget.runs.macro, macro.run.info.id);
    assert.equal(budget.runs.profile, profile.info.id);
    assert.equal(budget.batch, 1);
    assert.equal(budget.simulated, true);
    const tpot = budget.measured.tpot!.median_ms!;
    assert.ok(Math.abs(tpot - STEP_MS) <= STEP_MS * 0.03 + 0.2, `served TPOT ${tpot} ms, model ${STEP_MS}`);
    assert.ok(Math.abs(budget.measured.step!.ms - STEP_MS) < 0.05, `profiled step ${budget.measured.step!.ms} ms`);
    const ar = budget.rows.find((r) => r.key === 'allreduce')!;
    assert.ok(Math.abs(ar.profiled_ms! - ALLREDUCE_MS) < 0.05, `all-reduce ${ar.profiled_ms} ms`);
    assert.equal(budget.rows[0].key, 'allreduce');
    const total = budget.rows.reduce((s, r) => s + (r.profiled_ms ?? 0), 0);
    assert.ok(Math.abs(total - budget.measured.step!.ms) < 0.01, 'the categories and idle add up to the step');
    assert.match(budget.readings[0], /^All-reduce takes 11\.1\d ms of 21\.[67]\d ms per step \(51\.\d%\)/);
    const host = budget.gaps.find((g) => g.key === 'host_overhead')!;
    assert.ok(Math.abs(host.ms) < STEP_MS * 0.03 + 0.2, `TPOT − step = ${host.ms} ms; the simulator spends no time outside its steps`);
    assert.deepEqual(
      budget.missing.map((m) => m.phase),
      ['micro'],
    );
    const parts = budget.view.bars.filter((b) => b.kind === 'part');
    assert.ok(Math.abs(parts.at(-1)!.base_ms + parts.at(-1)!.ms - budget.measured.step!.ms) < 1e-6, 'the waterfall stacks to the step');

    // The CLI prints the same account and writes it into the findings document.
    const { stdout } = await pexec('node', [resolve('dist/cli.js'), 'explain', '--workspace', workspace, '--findings', 'bench.md']);
    assert.match(stdout, /All-reduce takes 11\.1\d ms of 21\.[67]\d ms per step/);
    assert.match(stdout, /micro +infbench micro/);
    const doc = readFileSync(join(workspace, 'bench.md'), 'utf8');
    const section = doc.slice(doc.indexOf('## Where the milliseconds go'));
    assert.match(section, /### Decode-step budget at batch 1/);
    assert.match(section, /\| all-reduce +\| +11\.1\d\d \| +51\.\d \|/);
  });

  it('sets an imported vllm bench serve run beside ours and says where the two are not like for like', () => {
    const ours = selectRuns(workspace).macro!;
    const theirs = importVllmBench(workspace, resolve('test/fixtures/vllm-bench/kimi-sim-sweep.jsonl'));
    const c = compareRunFolders(ours, theirs);
    // Ours sent 64-token prompts for 24 tokens, theirs 1024 for 128: the comparison says so.
    assert.match(c.unmatched.join('\n'), /c=1: the workloads differ \(A 64 tokens in \/ 24 out per request, B 1024 \/ 128\)/);
    assert.ok(c.unmatched.includes(`c=4 only in ${theirs.info.id}`));
    // 23 more decode steps of 21.7 ms each cannot hide in noise: E2EL is flagged, ours shorter.
    const e2el = c.differences.find((d) => d.where === 'c=1' && d.metric === 'E2EL mean (ms)')!;
    assert.equal(e2el.flagged, true);
    assert.equal(e2el.better, 'a');
    assert.ok(Math.abs(e2el.b! - e2el.a! - (128 - 24) * STEP_MS) < 0.1 * 104 * STEP_MS, `E2EL difference ${e2el.b! - e2el.a!} ms`);
  });
  it("with a micro run made on this machine's CPU, takes the model's structure from it but predicts nothing from CPU times", async function () {
    // The micro phase needs PyTorch; scripts/setup-test-env.sh gives Debian's python3 a CPU build.
    const torchPython = '/usr/bin/python3';
    if (spawnSync(torchPython, ['-c', 'import torch'], { stdio: 'ignore' }).status !== 0) this.skip();
    const torchAgent = await deployAgent(local, 'dist/agent.pyz', torchPython);
    const ctx: PhaseContext = {
      target: { name: 'sim', kind: 'local', serverUrl: sim.url, python: torchPython },
      transport: local,
      agent: torchAgent,
      workspace,
      log: silentLogger,
      sink: { runChanged() {}, findings() {} },
    };
    const micro = await runMicroPhase(ctx, { model: 'kimi-k2.5', tp: 8, m: [1], device: 'cpu', repeats: 3, arMaxBytes: 65536 });
    assert.equal(micro.agent.status, 'completed', micro.agent.reason);

    const budget = explainRuns(selectRuns(workspace));
    assert.equal(budget.runs.micro, micro.run.info.id);
    assert.deepEqual(budget.missing, []);
    // The micro run's model gives the step's structure; its CPU times predict nothing for a GPU step.
    assert.equal(budget.model?.source, `micro run ${micro.run.info.id}`);
    assert.ok(
      budget.rows.every((r) => r.predicted_ms === undefined),
      'no prediction from CPU figures',
    );
    assert.match(budget.readings[0], /^All-reduce takes 11\.1\d ms of 21\.[67]\d ms per step \(51\.\d%\): 123 calls of 14 KiB, 90\.\d us each\.$/);
    // Said in no front end's words: the budget's caveats go to the shared findings document.
    assert.match(budget.caveats.join('\n'), /ran on a CPU .*Run the micro phase on the GPU host/);
  });
  it('answers bad input on the command line with what failed and what to do, and exit code 2', async () => {
    const cli = (...args: string[]) =>
      pexec('node', [resolve('dist/cli.js'), ...args]).then(
        (r) => ({ code: 0, ...r }),
        (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
      );
    const notVllm = await cli('import-vllm', resolve('package.json'), '--workspace', workspace);
    assert.equal(notVllm.code, 2);
    assert.match(notVllm.stderr, /package\.json lacks completed, duration, output_throughput: it does not look like a `vllm bench serve --save-result` file/);
    const runs = selectRuns(workspace);
    const mixed = await cli('compare', runs.macro!.info.id, runs.profile!.info.id, '--workspace', workspace);
    assert.equal(mixed.code, 2);
    assert.match(mixed.stderr, /is a macro run and .* a profile run; compare two runs of the same phase/);
    const empty = await cli('explain', '--workspace', mkdtempSync(join(tmpdir(), 'ib-explain-empty-')));
    assert.equal(empty.code, 2);
    assert.match(empty.stderr, /No completed macro, micro or profile run in .*Run a phase first/);
    const imported = await cli('import-vllm', resolve('test/fixtures/vllm-bench/kimi-sim-c1.json'), '--workspace', workspace);
    assert.equal(imported.code, 0);
    assert.match(imported.stdout, /Imported kimi-sim-c1\.json \(moonshotai\/Kimi-K2\.5-INT4 \(simulated\), simulator\)/);
  });
});
