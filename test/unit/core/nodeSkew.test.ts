import * as assert from 'node:assert/strict';
import { nodeSkew } from '../../../src/core/phases/profile';
import { TraceBreakdown } from '../../../src/core/trace/types';

// Skew by host: a multi-node server's decode step is as slow as its slowest host's ranks.
describe('skew by host', () => {
  const rank = (file: string, r: number, mean: number) => ({ file, rank: r, decode: { stepMs: { mean } } });
  const breakdown = (ranks: ReturnType<typeof rank>[]) => ({ ranks }) as unknown as TraceBreakdown;
  const nodeOf = (file: string) => Number(/^node(\d+)-/.exec(file)?.[1]);

  it('names each host with its ranks and mean decode step, and the slowest', () => {
    const b = breakdown([rank('node0-a-rank0', 0, 10), rank('node0-a-rank1', 1, 12), rank('node1-b-rank2', 2, 13.2), rank('node1-b-rank3', 3, 13.2)]);
    assert.equal(
      nodeSkew(b, nodeOf, ['ssh a', 'ssh b']),
      'Skew by host: ssh a (ranks 0, 1) 11.00 ms per decode step; ssh b (ranks 2, 3) 13.20 ms per decode step — ssh b is 20% slower.',
    );
  });

  it('says nothing for one host, or without decode steps', () => {
    assert.equal(nodeSkew(breakdown([rank('node0-a-rank0', 0, 10), rank('node0-a-rank1', 1, 11)]), nodeOf, ['ssh a']), undefined);
    assert.equal(nodeSkew(breakdown([]), nodeOf, ['ssh a', 'ssh b']), undefined);
  });
});
