import * as assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { nullSink, PhaseContext } from '../../../src/core/campaign/phaseContext';
import { silentLogger } from '../../../src/core/log';
import { runMacroPhase } from '../../../src/core/phases/macro';
import { RunFolder } from '../../../src/core/runs/runFolder';
import { readStoredRun } from '../../../src/core/runs/storedRuns';
import { configurationId, configurationName, configurationOf } from '../../../src/core/runs/serverConfiguration';
import { configuredRecipe, parseConfiguration, withServerConfigurations } from '../../../src/core/server/configurations';
import { configurationsTable, ConfigurationsCompared } from '../../../src/core/server/configurationsCompared';
import { ServerStep } from '../../../src/core/server/serverChange';
import { ServerRecipe } from '../../../src/remote/agentProtocol';
import { Transport } from '../../../src/remote/transport';
import { MacroLevelSummary } from '../../../src/shared/results';

const served: ServerRecipe = {
  url: 'http://127.0.0.1:8000',
  argv: ['vllm', 'serve', 'moonshotai/Kimi-K2.5', '--tensor-parallel-size', '8', '--disable-custom-all-reduce', '--max-model-len=32768', '--port', '8000'],
  cwd: '/srv',
  env: { CUDA_VISIBLE_DEVICES: '0,1,2,3,4,5,6,7' },
  user: 'ml',
  manager: { kind: 'process' } as ServerRecipe['manager'],
  kind: 'vllm' as ServerRecipe['kind'],
  version: '0.16.0',
  identity: { pid: 4242, start_ticks: 99 } as ServerRecipe['identity'],
};

describe('server configurations compared: NAME: FLAGS applied to the command line the server runs', () => {
  it('replaces a flag the server runs with, adds a switch and removes one, leaving the rest as it was', () => {
    const tp4pp2 = configuredRecipe(served, parseConfiguration('tp4pp2: --tensor-parallel-size 4 --pipeline-parallel-size 2 --enable-expert-parallel'));
    assert.deepEqual(tp4pp2.argv, [
      'vllm',
      'serve',
      'moonshotai/Kimi-K2.5',
      '--tensor-parallel-size',
      '4',
      '--disable-custom-all-reduce',
      '--max-model-len=32768',
      '--port',
      '8000',
      '--pipeline-parallel-size',
      '2',
      '--enable-expert-parallel',
    ]);
    const car = configuredRecipe(served, parseConfiguration('custom-ar: !--disable-custom-all-reduce --max-model-len=8192'));
    assert.deepEqual(car.argv, ['vllm', 'serve', 'moonshotai/Kimi-K2.5', '--tensor-parallel-size', '8', '--max-model-len', '8192', '--port', '8000']);
    // A new start: the process identity is not the running one's; folder, environment and user are kept.
    assert.equal(car.identity, null);
    assert.deepEqual([car.cwd, car.env, car.user], [served.cwd, served.env, served.user]);
    // No flags: the server as it runs.
    assert.deepEqual(configuredRecipe(served, parseConfiguration('as-is:')).argv, served.argv);
  });

  it('refuses what would not start the same server, saying what to write instead', () => {
    assert.throws(() => parseConfiguration('--tensor-parallel-size 4'), /NAME: FLAGS, for example "tp4pp2: /);
    assert.throws(() => parseConfiguration('other-port: --port 9000'), /--port is where the benchmark reaches the server/);
    assert.throws(() => parseConfiguration('typo: tensor-parallel-size 4'), /"tensor-parallel-size" is not a flag/);
    assert.throws(() => configuredRecipe(served, parseConfiguration('ep: !--enable-expert-parallel')), /has no --enable-expert-parallel to remove/);
  });

  it("tables each configuration's levels against the first one's at the same load", () => {
    const level = (c: number, tpot: number, tput: number) =>
      ({ max_concurrency: c, p50_ttft_ms: 40, p50_tpot_ms: tpot, output_throughput: tput }) as unknown as MacroLevelSummary;
    const compared: ConfigurationsCompared = {
      target: 'gpu-box',
      changeDir: '.inference-bench/server/x',
      configurations: [
        { name: 'tp8', id: '3f2a91c0d7e4', command: 'vllm serve m', runId: 'a', levels: [level(1, 20, 50), level(8, 25, 320)] },
        { name: 'tp4pp2', id: '9b1c0e22aa01', command: 'vllm serve m --tp 4', runId: 'b', levels: [level(1, 25, 40), level(8, 20, 400)] },
        { name: 'broken', id: '0d5e6f7a8b9c', command: 'vllm serve m --bad', error: 'the server did not start: unrecognized arguments: --bad' },
      ],
    };
    const t = configurationsTable(compared);
    assert.deepEqual(
      t.rows.map((r) => [r.configuration, r.level, r.tpot_vs_first, r.throughput_vs_first]),
      [
        ['tp8', 'c=1', null, null],
        ['tp8', 'c=8', null, null],
        ['tp4pp2', 'c=1', 25, -20],
        ['tp4pp2', 'c=8', -20, 25],
        ['broken', 'not measured: the server did not start: unrecognized arguments: --bad', undefined, undefined],
      ],
    );
    assert.equal(t.columns.find((c) => c.key === 'tpot_vs_first')?.label, 'TPOT vs tp8 %');
  });
});

// An agent that answers `server status` with the recipe of what serves now, and a macro run with one
// level: what is under test is what the tool records and asks, not the agent (its own tests run it).
function scriptedAgent(serving: () => ServerRecipe | null) {
  const calls: string[][] = [];
  const transport: Transport = {
    label: 'scripted',
    exec(argv) {
      calls.push([...argv]);
      const stdout = new PassThrough();
      const stderr = new PassThrough();
      const recipe = serving();
      const result = argv.includes('server')
        ? { action: 'status', recipe, running: recipe !== null }
        : { levels: [{ max_concurrency: 1, completed: 4, median_tpot_ms: 10 }], server: { model: 'm' }, cancelled: false };
      const events = [
        { type: 'result', result },
        { type: 'done', ok: true },
      ];
      stdout.end(events.map((e) => JSON.stringify({ v: 1, t: 1, ...e })).join('\n') + '\n');
      stderr.end();
      // As a real transport's exit (a child's 'close'), known once its output has been read.
      const done = new Promise<{ code: number; signal: null }>((resolve) => stdout.on('end', () => resolve({ code: 0, signal: null })));
      return { stdin: new PassThrough(), stdout, stderr, done, cancel: async () => undefined };
    },
    upload: async () => undefined,
    download: async () => undefined,
    close: async () => undefined,
  };
  return { transport, calls };
}

const context = (workspace: string, transport: Transport): PhaseContext => ({
  target: { name: 'gpu-box', kind: 'local', serverUrl: 'http://127.0.0.1:8000', python: 'python3' },
  transport,
  agent: { python: 'python3', path: 'agent.pyz', hash: 'x' },
  workspace,
  sink: nullSink,
  log: silentLogger,
});

describe('the server configuration a run measured', () => {
  it('is one id for one server, whatever the session it was started from, its secrets or the profiler (torch or nsys) switched on', () => {
    const id = configurationId(served);
    const restarted = {
      ...served,
      argv: [...served.argv, '--profiler-config', '{"profiler":"torch","torch_profiler_dir":"/x"}'],
      env: {
        SSH_CONNECTION: '10.0.0.5 5000 10.0.0.9 22',
        PWD: '/home/ml',
        SHLVL: '2',
        INVOCATION_ID: 'f00d',
        LC_ALL: 'C.UTF-8',
        VLLM_TORCH_PROFILER_DIR: '/x',
        ...served.env,
      },
    };
    assert.equal(configurationId(restarted), id);
    // Under Nsight Systems: vLLM's CUDA-profiler mode and its layerwise NVTX ranges (SGLang's marker too) are the profile's, not the server's.
    const underNsys = { ...served, argv: [...served.argv, '--profiler-config', '{"profiler":"cuda"}', '--enable-layerwise-nvtx-tracing'] };
    assert.equal(configurationId(underNsys), id);
    assert.equal(configurationId({ ...served, argv: [...served.argv, '--enable-layerwise-nvtx-marker'] }), id);
    assert.equal(
      configurationId({ ...served, argv: [...served.argv, '--api-key', 'sk-one'] }),
      configurationId({ ...served, argv: [...served.argv, '--api-key', 'sk-two'] }),
    );
    // What the server reads makes another configuration: a flag's value, a variable vLLM reads.
    assert.notEqual(configurationId(configuredRecipe(served, parseConfiguration('tp4: --tensor-parallel-size 4'))), id);
    assert.notEqual(configurationId({ ...served, env: { ...served.env, VLLM_ATTENTION_BACKEND: 'FLASHINFER' } }), id);
    assert.match(id, /^[0-9a-f]{12}$/);
  });

  it("keeps each variable's value as a hash only, and no secret", () => {
    const c = configurationOf(
      { argv: ['vllm', 'serve', 'm', '--api-key', 'sk-very-secret-1'], env: { HF_TOKEN: 'hf_abcdefghijklmnopqrst', NCCL_DEBUG: 'WARN' } },
      'production',
    );
    const text = JSON.stringify(c);
    for (const secret of ['sk-very-secret-1', 'hf_abcdefghijklmnopqrst', 'WARN']) assert.ok(!text.includes(secret), secret);
    assert.deepEqual(Object.keys(c.env!), ['HF_TOKEN', 'NCCL_DEBUG']);
    assert.deepEqual(c.argv, ['vllm', 'serve', 'm', '--api-key', 'REDACTED']);
  });

  it("is recorded in every run, named production for the server its user runs, a comparison's flag-set name for its runs", async () => {
    const workspace = mkdtempSync(join(tmpdir(), 'ib-configured-'));
    let serving: ServerRecipe | null = served;
    const { transport, calls } = scriptedAgent(() => serving);
    const ctx = context(workspace, transport);
    const first = await runMacroPhase(ctx, { concurrency: [1] });
    assert.deepEqual(calls[0].slice(-4), ['server', 'status', '--url', 'http://127.0.0.1:8000']);
    const meta = JSON.parse(readFileSync(join(first.run.dir, 'meta.json'), 'utf8'));
    assert.equal(meta.configuration.id, configurationId(served));
    assert.equal(meta.configuration.name, 'production');
    assert.equal((await readStoredRun(first.run.dir))?.configuration?.name, 'production', 'the views read it from the run folder');

    // A comparison's configuration: its run carries the flag set's name, its identity and its place.
    const slow = configurationOf(configuredRecipe(served, parseConfiguration('slow: --max-num-seqs 20')), 'slow', { comparison: 'c1', index: 1 });
    const configured = await runMacroPhase({ ...ctx, configuration: slow }, { concurrency: [1] });
    assert.deepEqual(RunFolder.open(configured.run.dir).info.configuration, slow);
    assert.equal(calls.filter((c) => c.includes('status')).length, 1, 'no status asked when the configuration is known');

    // Started by hand with other flags: a name made from its id, and the same name next time.
    serving = { ...served, argv: [...served.argv, '--enforce-eager'] };
    const other = await runMacroPhase(ctx, { concurrency: [1] });
    const name = RunFolder.open(other.run.dir).info.configuration!.name;
    assert.equal(name, `config-${configurationId(serving).slice(0, 6)}`);
    // Nothing answers: unknown, with why.
    serving = null;
    const none = await runMacroPhase(ctx, { concurrency: [1] });
    const unknown = RunFolder.open(none.run.dir).info.configuration!;
    assert.equal(unknown.id, 'unknown');
    assert.match(unknown.unknownReason!, /no server process was found behind http:\/\/127\.0\.0\.1:8000 on scripted/);
  });

  it('asks for the restarts naming each flag a configuration sets, adds or removes', async () => {
    const workspace = mkdtempSync(join(tmpdir(), 'ib-consent-'));
    const { transport } = scriptedAgent(() => served);
    let asked: ServerStep | undefined;
    const configs = ['fast: --max-model-len 8192 --enforce-eager !--disable-custom-all-reduce', 'same:'].map(parseConfiguration);
    await assert.rejects(
      withServerConfigurations(context(workspace, transport), configs, { consent: async (step) => ((asked = step), false) }, async () => undefined),
      /not agreed to/,
    );
    assert.deepEqual(asked?.changes, [
      'fast sets --max-model-len 8192 (was 32768)',
      'fast adds --enforce-eager',
      'fast removes --disable-custom-all-reduce',
      'same runs the server as it runs',
    ]);
    // The recipe adopted before anything changed is the server as its user runs it: production from now on.
    assert.equal(configurationName(workspace, 'gpu-box', configurationId(served)), 'production');
    const fast = configurationId(configuredRecipe(served, configs[0]));
    assert.equal(configurationName(workspace, 'gpu-box', fast), `config-${fast.slice(0, 6)}`);
  });
});
