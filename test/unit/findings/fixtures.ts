import { FindingsUpdate } from '../../../src/core/campaign/phaseContext';
import { ResultTable } from '../../../src/shared/table';

/** A macro update as the phase sends it after `rows` concurrency levels have finished. */
export function macroUpdate(rows: number, sectionId = 'macro-2026-12-01_10-00-00-000'): FindingsUpdate {
  const levels = [1, 2, 4, 8, 16, 32, 64, 128].slice(0, rows);
  const table: ResultTable = {
    id: 'macro-levels',
    title: 'Serving by concurrency',
    columns: [
      { key: 'c', label: 'concurrency', digits: 0 },
      { key: 'ttft', label: 'TTFT p50 (ms)', digits: 1 },
      { key: 'tpot', label: 'TPOT p50 (ms)', digits: 2 },
      { key: 'tput', label: 'output tok/s', digits: 1 },
    ],
    rows: levels.map((c) => ({ c, ttft: 40 + c * 3.5, tpot: 17.5 + c * 0.05, tput: (1000 / (17.5 + c * 0.05)) * c })),
    note: 'simulator, 200 requests per level',
  };
  return {
    sectionId,
    heading: 'Macro run 2026-12-01 10:00 UTC (simulator)',
    lines: [
      'Single-stream decode 57.1 tok/s at c=1.',
      'Target local · server simulator 1.0 · run folder `.inference-bench/runs/2026-12-01_10-00-00-000-macro`',
    ],
    tables: [table],
  };
}

export function profileUpdate(sectionId = 'profile-2026-12-01_11-00-00-000'): FindingsUpdate {
  return {
    sectionId,
    heading: 'Profiler run 2026-12-01 11:00 UTC',
    lines: ['All-reduce takes 51.5% of a decode step.'],
    tables: [
      {
        id: 'breakdown',
        title: 'Decode step by category',
        columns: [
          { key: 'cat', label: 'category', align: 'left' },
          { key: 'ms', label: 'ms / step' },
          { key: 'pct', label: '% of step', digits: 1 },
        ],
        rows: [
          { cat: 'all-reduce', ms: 11.17, pct: 51.5 },
          { cat: 'MoE GEMM', ms: 6.2, pct: 28.6 },
          { cat: 'idle', ms: 1.1, pct: 5.1 },
        ],
      },
    ],
  };
}
