// An Nsight Systems profile's decode step by layer and module type: what the layer chart stacks, the
// tables beside it (the same figures, readable without colour), the slow layer in words, and a layer's
// kernels for a click. Pure functions over the run, so the unit tests run them in plain Node.
import type { RunSummary } from '../../../src/shared/results';
import { NSYS_IDLE, NSYS_NO_RANGE, type NsysLayerView, type NsysModulesView, type NsysRankView } from '../../../src/shared/nsysView';
import type { ResultTable, TableCell } from '../../../src/shared/table';
import { shortKernelName } from './profile';

/** The row that holds the step's modules outside every layer (embedding, lm head, sampling, no range). */
export const OUTSIDE_LAYERS = 'outside layers';

/** The run's layer and module breakdown, if it is an Nsight Systems profile that has one. */
export function nsysData(run: RunSummary | undefined): NsysModulesView | undefined {
  const n = run?.profile?.nsys;
  // The host's shape (core/trace/nsysView.ts): a step's time a number, not the analyzer's distribution.
  const drawable = (r: NsysRankView) => Array.isArray(r.modules) && Array.isArray(r.layers) && (r.stepMs === null || typeof r.stepMs === 'number');
  return n && Array.isArray(n.ranks) && n.ranks.length && n.ranks.every(drawable) ? n : undefined;
}

/** The rank's module types in stacking order: largest first, "no range" then idle last. */
export function moduleOrder(rank: NsysRankView): string[] {
  const rest = rank.modules.filter((m) => m.module !== NSYS_NO_RANGE && m.module !== NSYS_IDLE).map((m) => m.module);
  for (const l of rank.layers) for (const m of l.modules) if (!rest.includes(m.module)) rest.push(m.module);
  return [...rest, ...(rank.modules.some((m) => m.module === NSYS_NO_RANGE) ? [NSYS_NO_RANGE] : [])];
}

/** Per module type, its time outside the layers: the step's total for the type less what its layers ran. */
export function outsideLayers(rank: NsysRankView): Map<string, number> {
  const out = new Map<string, number>();
  for (const m of rank.modules) {
    if (m.module === NSYS_IDLE) continue;
    const inLayers = rank.layers.reduce((s, l) => s + (l.modules.find((x) => x.module === m.module)?.msPerStep ?? 0), 0);
    // Sums of the same kernels in another order: a remainder below a nanosecond is rounding.
    const left = m.msPerStep - inLayers;
    if (left > 1e-6) out.set(m.module, left);
  }
  return out;
}

/** The slowest layer of each module type that is well over its mean (10%), by layer: "slowest attention, 22% over the mean". */
export function slowLayers(rank: NsysRankView, thresholdPct = 10): Map<number, string[]> {
  const out = new Map<number, string[]>();
  for (const k of rank.skew) {
    if (k.slowestOverMeanPct < thresholdPct) continue;
    const list = out.get(k.slowestLayer) ?? [];
    list.push(`slowest ${k.module}, ${k.slowestOverMeanPct.toFixed(0)}% over the mean`);
    out.set(k.slowestLayer, list);
  }
  return out;
}

/** The slow layer in one sentence, or undefined when the layers of each kind run alike. */
export function slowLayerSentence(rank: NsysRankView, thresholdPct = 10): string | undefined {
  // Of the module types whose slowest layer is well over their mean, the one that costs the step most (as the findings' sentence).
  const k = rank.skew.filter((s) => s.slowestOverMeanPct >= thresholdPct).sort((a, b) => b.slowestMs - b.meanMs - (a.slowestMs - a.meanMs))[0];
  if (!k) return undefined;
  return (
    `Layer ${k.slowestLayer} is the slow one: its ${k.module} takes ${k.slowestMs.toFixed(3)} ms per step, ` +
    `${k.slowestOverMeanPct.toFixed(0)}% over the mean of its ${k.layers} layers (${k.meanMs.toFixed(3)} ms; fastest layer ${k.fastestLayer}, ${k.fastestMs.toFixed(3)} ms).`
  );
}

export interface LayerBars {
  /** One bar per layer, then one for the modules outside the layers where there are any. */
  labels: string[];
  /** The layer number of each bar (null for the outside row). */
  layers: (number | null)[];
  stacks: { module: string; values: number[] }[];
}

/** What the horizontal stacked bars draw: ms per step of each module type, per layer. */
export function layerBars(rank: NsysRankView): LayerBars {
  const modules = moduleOrder(rank);
  const outside = outsideLayers(rank);
  const slow = slowLayers(rank);
  const layers: (number | null)[] = [...rank.layers.map((l) => l.layer), ...(outside.size ? [null] : [])];
  const labels = layers.map((l) => (l === null ? OUTSIDE_LAYERS : slow.has(l) ? `layer ${l} ▲ slow` : `layer ${l}`));
  const cell = (l: number | null, m: string) =>
    l === null ? (outside.get(m) ?? 0) : (rank.layers.find((x) => x.layer === l)?.modules.find((x) => x.module === m)?.msPerStep ?? 0);
  const stacks = modules.map((module) => ({ module, values: layers.map((l) => cell(l, module)) })).filter((s) => s.values.some((v) => v > 0));
  return { labels, layers, stacks };
}

/** The bars as a table: a row per layer, a column per module type, the slow layer said in words. */
export function layerTable(rank: NsysRankView): ResultTable {
  const bars = layerBars(rank);
  const slow = slowLayers(rank);
  const total = (i: number) => bars.stacks.reduce((s, x) => s + x.values[i], 0);
  const step = rank.stepMs ?? 0;
  const rows = bars.layers.map((l, i): Record<string, TableCell> => ({
    layer: l === null ? OUTSIDE_LAYERS : `layer ${l}`,
    layer_number: l,
    ms: total(i),
    pct: step > 0 ? (100 * total(i)) / step : undefined,
    ...Object.fromEntries(bars.stacks.map((s) => [`m:${s.module}`, s.values[i]])),
    note: l === null ? '' : (slow.get(l) ?? []).join('; '),
  }));
  return {
    id: 'nsys-layers',
    title: 'Decode step by layer and module type (ms per step)',
    columns: [
      { key: 'layer', label: 'layer', align: 'left' },
      { key: 'ms', label: 'ms per step', digits: 3 },
      { key: 'pct', label: '% of step', digits: 1 },
      ...bars.stacks.map((s) => ({ key: `m:${s.module}`, label: s.module, digits: 3 })),
      { key: 'note', label: 'skew', align: 'left' as const },
    ],
    rows,
    note: `${rank.steps} decode steps of ${step.toFixed(3)} ms on device ${rank.device}${rank.deviceName ? ` (${rank.deviceName})` : ''}; ${rank.replayedPct.toFixed(0)}% of kernels replayed from CUDA graphs. Click a layer for its kernels.`,
  };
}

/** The step by module type, as the findings document tables it. */
export function moduleTable(rank: NsysRankView): ResultTable {
  return {
    id: 'nsys-modules',
    title: 'Decode step by module type',
    columns: [
      { key: 'module', label: 'module', align: 'left' },
      { key: 'ms', label: 'ms per step', digits: 3 },
      { key: 'pct', label: '% of step', digits: 1 },
      { key: 'kernels', label: 'kernels per step', digits: 1 },
    ],
    rows: rank.modules.map((m) => ({ module: m.module, ms: m.msPerStep, pct: m.sharePct, kernels: m.kernelsPerStep })),
  };
}

/** One layer's kernels, largest first: what a click on the layer lists. */
export function layerKernelTable(layer: NsysLayerView): ResultTable {
  return {
    id: 'nsys-layer-kernels',
    title: `Layer ${layer.layer}: its kernels per decode step (${layer.msPerStep.toFixed(3)} ms, ${layer.kernelsPerStep.toFixed(1)} kernels)`,
    columns: [
      { key: 'name', label: 'kernel', align: 'left' },
      { key: 'module', label: 'module', align: 'left' },
      { key: 'ms', label: 'ms per step', digits: 4 },
      { key: 'count', label: 'count per step', digits: 1 },
      { key: 'path', label: 'NVTX module path', align: 'left' },
    ],
    rows: layer.kernels.map((k) => ({
      name: shortKernelName(k.name),
      full_name: k.name,
      module: k.module,
      ms: k.msPerStep,
      count: k.countPerStep,
      path: k.path,
    })),
    note: layer.kernels.length ? undefined : 'This breakdown was written before kernels were kept per layer: profile again to list them.',
  };
}
