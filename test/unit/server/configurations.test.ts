import * as assert from 'node:assert/strict';
import { configuredRecipe, parseConfiguration } from '../../../src/core/server/configurations';
import { configurationsTable, ConfigurationsCompared } from '../../../src/core/server/configurationsCompared';
import { ServerRecipe } from '../../../src/remote/agentProtocol';
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
