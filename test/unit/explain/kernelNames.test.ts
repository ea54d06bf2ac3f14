import * as assert from 'node:assert/strict';
import { profileInputFrom } from '../../../src/core/explain/inputs';

describe('kernel names the budget reads from a stored profile', () => {
  it('show the control characters of a result written before names were cleaned as U+FFFD', () => {
    const evil = '\u001b]0;owned\u0007nvjet_gemm';
    const result = {
      overall: { stepMs: { mean: 1 }, categories: [{ category: 'gemm', msPerStep: 0.5, kernelsPerStep: 1 }] },
      ranks: [
        { rank: 0, decode: { count: 10, stepMs: { mean: 1 } }, topKernels: [{ name: evil, category: 'gemm', totalMs: 5 }], kernelTotals: [{ name: evil }] },
      ],
    };
    const input = profileInputFrom('run-1', { breakdown: result, ...result });
    assert.ok(input, 'no profile input');
    const text = JSON.stringify(input);
    assert.ok(text.includes('\ufffd]0;owned\ufffdnvjet_gemm'), text);
    assert.doesNotMatch(text, /\\u001b|\\u0007/);
  });
});
