import * as assert from 'node:assert/strict';
import { UsageError } from '../../../src/cli/command';
import { agentChoice, agentChoiceList, agentNumberList, agentValue, agentValueAs } from '../../../src/cli/flags';
import { flagOf } from '../../../src/cli/agentFlags';
import { MICRO_PARTS } from '../../../src/remote/agentOptions';
import { AGENT_OPTIONS, AgentOptionSpec } from '../../../src/remote/agentOptions';

describe("the CLI's choices for flags it hands to the agent", () => {
  it("takes a value the agent's option table lists and refuses another, naming the table's choices", () => {
    assert.equal(agentChoice('micro', 'dtype', 'fp8'), 'fp8');
    assert.equal(agentChoice('micro', 'dtype', undefined), undefined);
    assert.throws(
      () => agentChoice('micro', 'dtype', 'int8'),
      (e: Error) => e instanceof UsageError && e.message === '--dtype must be one of auto, bf16, fp16, fp32, fp8, int4; got "int8".',
    );
    assert.throws(() => agentChoice('micro', 'arBackend', 'mpi'), /--ar-backend must be one of auto, nccl, gloo; got "mpi"/);
  });
});

describe("the CLI's checks of the values it hands to the agent, from the agent's option table", () => {
  it('reads a flag under its name or an alias, and checks its kind and minimum as the table says, naming the flag as typed', () => {
    assert.equal(agentValue('micro', 'tp', { tp: '8' }), 8);
    assert.equal(agentValue('micro', 'tp', {}), undefined);
    assert.equal(agentValue('macro', 'rangeRatio', { 'random-range-ratio': '0.5' }), 0.5);
    assert.equal(agentValue('macro', 'burstiness', { burstiness: '0.5' }), 0.5);
    assert.equal(agentValue('macro', 'datasetName', { 'dataset-name': 'sharegpt' }), 'sharegpt');
    const refused: [() => unknown, string][] = [
      [() => agentValue('micro', 'tp', { tp: '0' }), '--tp takes a positive whole number; got "0".'],
      [() => agentValue('micro', 'repeats', { repeats: '2.5' }), '--repeats takes a positive whole number; got "2.5".'],
      [() => agentValue('macro', 'rangeRatio', { 'random-range-ratio': '-1' }), '--random-range-ratio takes a non-negative number; got "-1".'],
      [() => agentValue('macro', 'burstiness', { burstiness: 'often' }), '--burstiness takes a number; got "often".'],
      [() => agentValue('profile', 'profiler', { profiler: 'perf' }), '--profiler must be one of torch, nsys; got "perf".'],
    ];
    for (const [call, message] of refused) assert.throws(call, (e: Error) => e instanceof UsageError && e.message === message, message);
  });

  it('puts a minimum only on a number (int and float rows)', () => {
    for (const [command, specs] of Object.entries(AGENT_OPTIONS))
      for (const spec of Object.values(specs as Record<string, AgentOptionSpec>))
        if (spec.minimum !== undefined) assert.ok(spec.kind === 'int' || spec.kind === 'float', `${command} ${spec.flag}`);
  });

  it('reads a switch as true and a repeatable flag as its values', () => {
    assert.equal(agentValue('micro', 'allowBusy', { 'allow-busy': true }), true);
    assert.equal(agentValue('micro', 'allowBusy', {}), undefined);
    assert.deepEqual(agentValue('micro', 'shape', { shape: ['a=1x2', 'b=3x4'] }), ['a=1x2', 'b=3x4']);
    assert.equal(agentValue('micro', 'shape', { shape: [] }), undefined);
  });

  it("checks a comma-separated row's every number, naming the flag and giving the table's example", () => {
    assert.deepEqual(agentNumberList('micro', 'm', { m: '1, 8,,64' }), [1, 8, 64]);
    assert.equal(agentNumberList('micro', 'm', {}), undefined);
    assert.deepEqual(agentNumberList('macro', 'requestRate', { 'request-rate': '2,INF' }), [2, Infinity]);
    const refused: [() => unknown, string][] = [
      [() => agentNumberList('micro', 'm', { m: '1,0' }), '--m takes a comma-separated list of positive whole numbers, for example --m 1,8,64; got "1,0".'],
      [() => agentNumberList('micro', 'm', { m: '' }), '--m takes a comma-separated list of positive whole numbers, for example --m 1,8,64; got "".'],
      [
        () => agentNumberList('macro', 'concurrency', { concurrency: '1,inf' }),
        '--concurrency takes a comma-separated list of positive whole numbers, for example --concurrency 1,8,32; got "1,inf".',
      ],
      [
        () => agentNumberList('macro', 'percentiles', { percentiles: '50,p99' }),
        '--percentiles takes a comma-separated list of numbers, for example --percentiles P,P; got "50,p99".',
      ],
    ];
    for (const [call, message] of refused) assert.throws(call, (e: Error) => e instanceof UsageError && e.message === message, message);
  });

  it("checks a comma-separated row's every word against its choices; an empty one names none", () => {
    assert.deepEqual(agentChoiceList('micro', 'skip', { skip: 'gemm, launch' }, MICRO_PARTS), ['gemm', 'launch']);
    assert.deepEqual(agentChoiceList('micro', 'skip', { skip: '' }, MICRO_PARTS), []);
    assert.throws(
      () => agentChoiceList('micro', 'skip', { skip: 'gemm,nccl' }, MICRO_PARTS),
      (e: Error) => e instanceof UsageError && e.message === '--skip takes a comma-separated list of peak, gemm, launch, allreduce; got "nccl".',
    );
  });

  it("checks a flag of the CLI's own name by the agent row it is handed to, naming the CLI's flag", () => {
    assert.equal(agentValueAs('server', 'profileMaxIterations', 'profiler-max-iterations', { 'profiler-max-iterations': '64' }), 64);
    assert.equal(agentValueAs('server', 'profileMaxIterations', 'profiler-max-iterations', {}), undefined);
    assert.throws(
      () => agentValueAs('server', 'profileDelayIterations', 'profiler-delay-iterations', { 'profiler-delay-iterations': '0' }),
      (e: Error) => e instanceof UsageError && e.message === '--profiler-delay-iterations takes a positive whole number; got "0".',
    );
  });

  it("names a flag in a message by the table's row", () => {
    assert.equal(flagOf('profile', 'numSteps'), '--num-steps');
    assert.equal(flagOf('macro', 'rangeRatio'), '--range-ratio');
  });
});
