// Two profilers of one server should tell the same story: the kernel categories of an Nsight Systems
// capture against the torch profile of the same server configuration. Shares are of kernel time, not of
// the step's wall time: the gaps between kernels are what the two profilers' own overheads change (the
// torch profiler's hooks on eager code, nsys's on every launch), the kernels are the GPU's work either way.

import { configurationOfRun, isKnown } from '../runs/serverConfiguration';
import { RunFolder } from '../runs/runFolder';
import { IDLE_CATEGORY } from '../trace/families';
import { TraceBreakdown } from '../trace/types';
import { ResultTable } from '../../shared/table';

export interface CategoryAgreement {
  category: string;
  nsysPct: number;
  torchPct: number;
  /** nsysPct - torchPct, in percentage points. */
  diffPoints: number;
}

export interface ProfilerAgreement {
  /** The torch profile run it is set against. */
  torchRunId: string;
  /** Largest difference of a category's share of kernel time, in percentage points. */
  maxDiffPoints: number;
  /** Kernel time per decode step (categories' ms, idle left out) in each. */
  nsysKernelMs: number;
  torchKernelMs: number;
  /** Every category either profile saw, largest share (nsys) first. */
  categories: CategoryAgreement[];
}

/** Each category's share of the kernel time of a decode step (idle left out), overall. */
export function kernelShares(b: TraceBreakdown): { shares: Map<string, number>; kernelMs: number } {
  const busy = b.overall.categories.filter((c) => c.category !== IDLE_CATEGORY);
  const kernelMs = busy.reduce((sum, c) => sum + c.msPerStep, 0);
  const shares = new Map(busy.map((c) => [c.category, kernelMs > 0 ? (100 * c.msPerStep) / kernelMs : 0]));
  return { shares, kernelMs };
}

/** The nsys capture's categories against the torch profile's; undefined when either has no decode step. */
export function compareProfilers(nsys: TraceBreakdown, torch: TraceBreakdown, torchRunId: string): ProfilerAgreement | undefined {
  const a = kernelShares(nsys);
  const b = kernelShares(torch);
  if (!(a.kernelMs > 0 && b.kernelMs > 0)) return undefined;
  const names = [...new Set([...a.shares.keys(), ...b.shares.keys()])];
  const categories = names
    .map((category) => {
      const nsysPct = a.shares.get(category) ?? 0;
      const torchPct = b.shares.get(category) ?? 0;
      return { category, nsysPct, torchPct, diffPoints: nsysPct - torchPct };
    })
    .sort((x, y) => y.nsysPct - x.nsysPct || y.torchPct - x.torchPct);
  return {
    torchRunId,
    maxDiffPoints: Math.max(...categories.map((c) => Math.abs(c.diffPoints))),
    nsysKernelMs: a.kernelMs,
    torchKernelMs: b.kernelMs,
    categories,
  };
}

/**
 * The newest completed torch profile of the same target and the same known server configuration as
 * `run`, with its breakdown: the one an nsys capture is set against. None when the configuration is
 * unknown (two unknown servers are not known to be one).
 */
export function torchProfileOfSameServer(workspace: string, run: RunFolder): { run: RunFolder; breakdown: TraceBreakdown } | undefined {
  const wanted = configurationOfRun(run.info);
  if (!isKnown(wanted)) return undefined;
  for (const other of RunFolder.list(workspace)) {
    const info = other.info;
    if (info.id === run.info.id || info.phase !== 'profile' || info.target !== run.info.target || info.status !== 'completed') continue;
    if (info.options.profiler === 'nsys' || configurationOfRun(info).id !== wanted.id) continue;
    const breakdown = other.readResult<TraceBreakdown>();
    if (breakdown?.overall?.categories?.length) return { run: other, breakdown };
  }
  return undefined;
}

/** One sentence for the findings: how far apart the two profiles' categories are. */
export function agreementSentence(a: ProfilerAgreement): string {
  const worst = a.categories.reduce((w, c) => (Math.abs(c.diffPoints) > Math.abs(w.diffPoints) ? c : w));
  const top = a.categories.slice(0, 3).map((c) => `${c.category} ${c.nsysPct.toFixed(2)}% against ${c.torchPct.toFixed(2)}%`);
  return (
    `Against the torch profile of the same server configuration (run \`${a.torchRunId}\`), the kernel categories agree within ` +
    `${a.maxDiffPoints.toFixed(2)} points of kernel time (the widest: ${worst.category}); ${top.join(', ')}; kernel time per decode step ` +
    `${a.nsysKernelMs.toFixed(3)} ms in this capture, ${a.torchKernelMs.toFixed(3)} ms in the torch profile.`
  );
}

/** The categories side by side, as the findings document shows them. */
export function agreementTable(a: ProfilerAgreement): ResultTable {
  return {
    id: 'profile-nsys-vs-torch',
    title: 'Kernel categories: Nsight Systems against the torch profile (% of kernel time)',
    columns: [
      { key: 'category', label: 'category', align: 'left' },
      { key: 'nsys', label: 'nsys %', align: 'right', digits: 2 },
      { key: 'torch', label: 'torch %', align: 'right', digits: 2 },
      { key: 'diff', label: 'points apart', align: 'right', digits: 2 },
    ],
    rows: a.categories.map((c) => ({ category: c.category, nsys: c.nsysPct, torch: c.torchPct, diff: c.diffPoints })),
    note: `torch profile: run ${a.torchRunId}; kernel time per decode step ${a.nsysKernelMs.toFixed(3)} ms (nsys) against ${a.torchKernelMs.toFixed(3)} ms (torch).`,
  };
}
