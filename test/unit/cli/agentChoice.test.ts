import * as assert from 'node:assert/strict';
import { UsageError } from '../../../src/cli/command';
import { agentChoice, agentValue } from '../../../src/cli/flags';
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
});
