import * as assert from 'node:assert/strict';
import { microTables } from '../../../src/core/micro/tables';
import { ALLREDUCE_TABLE_ID } from '../../../src/shared/microTables';

describe('micro all-reduce on one GPU', () => {
  const point = (worldSize: number, bytes: number) => ({
    kind: 'allreduce' as const,
    backend: 'nccl',
    dtype: 'bfloat16',
    world_size: worldSize,
    bytes,
    us: 8,
    mode: 'graph',
  });
  const sizes = Array.from({ length: 22 }, (_, i) => 1024 << i);

  it('tables nothing at world size 1, where an all-reduce has no one to reduce with', () => {
    const tables = microTables(sizes.map((b) => point(1, b)));
    assert.ok(!tables.some((t) => t.id === ALLREDUCE_TABLE_ID), tables.map((t) => t.id).join(', '));
  });

  it('still tables the sizes of a run over several GPUs', () => {
    const table = microTables(sizes.map((b) => point(8, b))).find((t) => t.id === ALLREDUCE_TABLE_ID);
    assert.ok(table);
    assert.equal(table.rows.length, 22);
  });
});
