import * as assert from 'node:assert/strict';
import { microHeadline, microTables } from '../../../src/core/micro/tables';

// A CPU run: the rotated weight copies fit in its caches, so a small GEMM reads them faster than the
// measured memory peak (a copy through memory). "214% of peak" was printed; the figure stays, the
// percentage goes, and the reason is named.
describe('a micro GEMM faster than the measured memory peak', () => {
  const gemm = (m: number, pct: number) => ({
    kind: 'gemm' as const,
    shape: 'moe.gate_up',
    m,
    n: 256,
    k: 64,
    us: 2.5,
    tbps: 0.09,
    tflops: 0.2,
    pct_peak_bw: pct,
  });

  it('says the operands were in cache instead of a share above 100%', () => {
    assert.equal(microHeadline([gemm(1, 214)]), 'moe.gate_up M=1: 2.5 µs, faster than the measured memory peak (operands in cache)');
    assert.equal(microHeadline([gemm(1, 46)]), 'moe.gate_up M=1: 2.5 µs, 46% of peak bandwidth');
    const bw = microTables([gemm(1, 214), gemm(2, 46)]).find((t) => t.id === 'micro-gemm-bw')!;
    const cells = bw.rows.flatMap((r) => Object.values(r)).map(String);
    assert.ok(cells.includes('0.09 (cached)') && cells.includes('0.09 (46%)'), cells.join(' | '));
    assert.ok(!cells.some((c) => c.includes('214%')));
    assert.match(bw.note ?? '', /"cached": faster than the measured memory peak/);
  });
});
