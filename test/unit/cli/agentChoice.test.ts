import * as assert from 'node:assert/strict';
import { UsageError } from '../../../src/cli/command';
import { agentChoice } from '../../../src/cli/flags';

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
