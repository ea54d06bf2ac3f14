// Two micro runs side by side: GEMM time per shape and M, all-reduce time and bus bandwidth per
// message size, launch overhead per mode.
import { MicroInput } from '../explain/inputs';
import { differenceTable, summarize } from './macro';
import { judgeFixed } from './noise';
import { Comparison, Difference, RunRef } from './types';

// Micro points are medians of many CUDA-graph-amortised replays, so run-to-run spread comes from
// clocks and cache state rather than sampling: flag a change beyond 5% that is also more than 1 us
// (twice the ~0.5 us resolution of CUDA events, so timer granularity alone cannot trip it).
const RELATIVE = 0.05;
const ABSOLUTE_US = 1;

export function compareMicro(a: RunRef, ma: MicroInput, b: RunRef, mb: MicroInput): Comparison {
  const differences: Difference[] = [];
  const unmatched: string[] = [];
  const pair = <T>(kind: string, listA: T[], listB: T[], key: (p: T) => string, value: (p: T) => number, unit: string) => {
    const mapB = new Map(listB.map((p) => [key(p), p]));
    const keysA = new Set(listA.map(key));
    for (const pA of listA) {
      const k = key(pA);
      const pB = mapB.get(k);
      if (!pB) {
        unmatched.push(`${kind} ${k} only in ${a.id}`);
        continue;
      }
      const va = value(pA);
      const vb = value(pB);
      const v = judgeFixed(va, vb, RELATIVE, ABSOLUTE_US);
      differences.push({
        where: `${kind} ${k}`,
        metric: `time (${unit})`,
        a: va,
        b: vb,
        delta: v.delta,
        relative: v.relative,
        threshold: v.threshold,
        flagged: v.flagged,
        better: v.flagged ? (v.delta < 0 ? 'b' : 'a') : undefined,
        reading: v.flagged
          ? `${kind} ${k}: ${va.toFixed(1)} → ${vb.toFixed(1)} ${unit} (${v.delta >= 0 ? '+' : '−'}${Math.abs(v.relative * 100).toFixed(1)}%): ${v.delta < 0 ? b.id : a.id} is faster.`
          : undefined,
      });
    }
    for (const pB of listB) if (!keysA.has(key(pB))) unmatched.push(`${kind} ${key(pB)} only in ${b.id}`);
  };
  pair(
    'GEMM',
    ma.gemm,
    mb.gemm,
    (p) => `${p.shape.includes(`${p.n}x${p.k}`) ? p.shape : `${p.shape} ${p.n}x${p.k}`} M=${p.m}`,
    (p) => p.time_us,
    'us',
  );
  pair(
    'all-reduce',
    ma.allreduce,
    mb.allreduce,
    (p) => `${p.size_bytes} B`,
    (p) => p.time_us,
    'us',
  );
  pair(
    'launch',
    ma.launch,
    mb.launch,
    (p) => p.mode,
    (p) => p.us_per_kernel,
    'us per kernel',
  );
  const table = differenceTable(
    'compare-micro',
    `Micro: ${a.label} (A) vs ${b.label} (B)`,
    differences,
    a,
    b,
    `Flagged (▲) when a point moves by more than ${RELATIVE * 100}% and ${ABSOLUTE_US} us.`,
  );
  return { phase: 'micro', a, b, differences, summary: summarize(differences, a, b), unmatched, tables: [table] };
}
