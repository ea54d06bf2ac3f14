// The decode step by layer and module, from an Nsight Systems report: every kernel arrives with the
// NVTX module path the agent's reader (agent/infbench_agent/profile/nsys_report.py) gave it, straight from the
// launch's ranges when it ran eagerly, through its graph node's capture-time ranges when replayed.
// Here the paths become layers and module types, summed per step, beside the kernel categories of
// families.ts. A kernel with no range stays "(no NVTX range)": counted, never guessed.

import { distribution } from './breakdown';
import { KernelClassifier } from './families';
import { Distribution, KernelFamilySpec } from './types';

/** Bump when a field changes meaning or goes away. */
export const NSYS_BREAKDOWN_VERSION = 1;
export const NO_RANGE = '(no NVTX range)';
export const IDLE = '(idle)';

/** One line of the reader's output (see profile/nsys_report.py). */
export type NsysRecord =
  | {
      type: 'nsys-header';
      version: number;
      file: string;
      stepSource: 'nvtx-range' | 'graph-launch' | 'none';
      stepRange: string;
      nvtx: boolean;
      graphNodes: boolean;
      /** Windows between cudaProfilerStart and cudaProfilerStop that bound the steps kept (0: none, all steps kept). */
      profilerWindows?: number;
      devices: { id: number; name: string }[];
    }
  | {
      type: 'kernel' | 'memcpy' | 'memset';
      start: number;
      end: number;
      name: string;
      device: number;
      stream: number;
      pid: number | null;
      graphed: boolean;
      step: number | null;
      module: string | null;
    }
  | {
      type: 'nsys-summary';
      kernels: number;
      graphed: number;
      attributed: number;
      unattributed: number;
      outsideSteps: number;
      noLaunchRecord: number;
      noCaptureNode: number;
      /** Replayed kernels inside steps whose graph node was captured with no module range open. */
      replayedWithoutRange?: number;
      steps: number;
    };

/** Where a module path sits: its layer (null outside the layers), its block and the kind of module. */
export interface ModulePlace {
  layer: number | null;
  /** The block's own name: `self_attn`, `mlp`, `moe`, `lm_head`... */
  block: string;
  type: string;
}

const LAYER = /(?:^|\.)(?:layers|layer|h|blocks|decoder_layers)\.(\d+)(?=\.|$)/;
// Most specific first: an all-reduce inside an attention block is all-reduce; a MoE router is MoE.
const TYPES: [string, RegExp][] = [
  ['all-reduce', /all_?reduce|allreduce|all_gather|reduce_scatter/i],
  ['moe', /moe|experts?(\.|$)|block_sparse|router|(^|\.)gate($|\.)|shared_expert/i],
  ['attention', /attn|attention|rotary|qkv|o_proj/i],
  ['mlp', /mlp|ffn|feed_forward|gate_up|up_proj|down_proj/i],
  ['norm', /norm/i],
  ['embedding', /embed/i],
  ['lm head', /lm_head|logits/i],
  ['sampling', /sampl/i],
];

/** Reads a module path such as `model.layers.2.self_attn.o_proj` (vLLM's and SGLang's layerwise hooks). */
export function placeOf(path: string): ModulePlace {
  const m = LAYER.exec(path);
  const layer = m ? Number(m[1]) : null;
  const rest = m ? path.slice(m.index + m[0].length).replace(/^\./, '') : path.replace(/^(model|top)\./, '');
  const block = rest.split('.')[0] || (m ? '(layer)' : path);
  for (const [type, re] of TYPES) if (re.test(rest)) return { layer, block, type };
  // The layer's own range (residual adds between its blocks) or a module no rule names.
  return { layer, block, type: rest ? block : 'layer (between blocks)' };
}

export interface ModuleShare {
  module: string;
  /** Kernel time per step, overlap between streams counted twice. */
  msPerStep: number;
  /** msPerStep as a percentage of the mean step's wall time. */
  sharePct: number;
  kernelsPerStep: number;
}

export interface NsysCategoryShare {
  category: string;
  msPerStep: number;
  sharePct: number;
  kernelsPerStep: number;
}

/** One kernel of a layer, per step: what a click on the layer lists. */
export interface LayerKernel {
  name: string;
  /** Its module type (attention, mlp, moe...) and the NVTX module path it ran in. */
  module: string;
  path: string;
  msPerStep: number;
  countPerStep: number;
}

export interface LayerShare extends ModuleShare {
  layer: number;
  /** The layer's module types, largest first. */
  modules: ModuleShare[];
  /** Its kernels, largest first (at most LAYER_KERNELS); absent in breakdowns written before they were kept. */
  kernels?: LayerKernel[];
}

/** The kernels kept per layer: a layer runs a few dozen, so this keeps all but the smallest. */
export const LAYER_KERNELS = 60;

/** Layers of one module type side by side: the slow one named. */
export interface LayerSkew {
  module: string;
  layers: number;
  slowestLayer: number;
  slowestMs: number;
  fastestLayer: number;
  fastestMs: number;
  meanMs: number;
  /** (slowest - mean) / mean, in percent. */
  slowestOverMeanPct: number;
}

export interface NsysRankBreakdown {
  /** The process id and device the kernels ran on (one rank per pair). */
  pid: number | null;
  device: number;
  deviceName: string | null;
  steps: number;
  /** Wall time of a step on the GPU, first kernel start to last kernel end, ms. */
  stepMs: Distribution | null;
  /** Kernel time per step, ms. */
  busyMsPerStep: number;
  kernelsPerStep: number;
  /** By module type, largest first; `(no NVTX range)` and `(idle)` included so the shares add up to the step. */
  modules: ModuleShare[];
  /** By layer, in layer order. */
  layers: LayerShare[];
  skew: LayerSkew[];
  /** The kernel categories of families.ts over the same steps, largest first (no idle: see modules). */
  categories: NsysCategoryShare[];
  /** Kernels per step replayed from a CUDA graph, percent. */
  replayedPct: number;
  /** Kernels in the report that fall in no step (start-up, warm-up, capture). */
  kernelsOutsideSteps: number;
}

export interface NsysBreakdown {
  version: number;
  file: string;
  stepSource: string;
  stepRange: string;
  headline: string;
  ranks: NsysRankBreakdown[];
  warnings: string[];
}

interface StepAcc {
  first: number;
  last: number;
}

class RankAcc {
  readonly steps = new Map<number, StepAcc>();
  readonly byType = new Map<string, [number, number]>();
  readonly byLayer = new Map<number, Map<string, [number, number]>>();
  readonly byCategory = new Map<string, [number, number]>();
  /** Per layer, per kernel name and module path: time and launches. */
  readonly layerKernels = new Map<number, Map<string, { name: string; path: string; type: string; ns: number; n: number }>>();
  busyNs = 0;
  kernels = 0;
  replayed = 0;
  outside = 0;
  constructor(
    readonly pid: number | null,
    readonly device: number,
  ) {}
}

function add(map: Map<string, [number, number]>, key: string, ns: number): void {
  const cell = map.get(key);
  if (cell) {
    cell[0] += ns;
    cell[1] += 1;
  } else map.set(key, [ns, 1]);
}

/** Folds the reader's records as they stream; `finish` gives the breakdown. Memory grows with steps and module names, not kernels. */
export class NsysModuleAnalyzer {
  private header: Extract<NsysRecord, { type: 'nsys-header' }> | undefined;
  private summary: Extract<NsysRecord, { type: 'nsys-summary' }> | undefined;
  private readonly ranks = new Map<string, RankAcc>();
  private readonly places = new Map<string, ModulePlace>();
  private readonly classifier: KernelClassifier;

  constructor(extraFamilies: readonly KernelFamilySpec[] = []) {
    this.classifier = new KernelClassifier(extraFamilies);
  }

  readonly onRecord = (r: NsysRecord): void => {
    if (r.type === 'nsys-header') this.header = r;
    else if (r.type === 'nsys-summary') this.summary = r;
    else {
      const key = `${r.pid}:${r.device}`;
      let rank = this.ranks.get(key);
      if (!rank) this.ranks.set(key, (rank = new RankAcc(r.pid, r.device)));
      if (r.step === null) {
        rank.outside++;
        return;
      }
      const ns = r.end - r.start;
      const step = rank.steps.get(r.step);
      if (step) {
        step.first = Math.min(step.first, r.start);
        step.last = Math.max(step.last, r.end);
      } else rank.steps.set(r.step, { first: r.start, last: r.end });
      rank.busyNs += ns;
      rank.kernels++;
      if (r.graphed) rank.replayed++;
      add(rank.byCategory, this.classifier.classify(r.name, r.type !== 'kernel'), ns);
      if (r.module === null) {
        add(rank.byType, NO_RANGE, ns);
        return;
      }
      let place = this.places.get(r.module);
      if (!place) this.places.set(r.module, (place = placeOf(r.module)));
      add(rank.byType, place.type, ns);
      if (place.layer !== null) {
        let layer = rank.byLayer.get(place.layer);
        if (!layer) rank.byLayer.set(place.layer, (layer = new Map()));
        add(layer, place.type, ns);
        let kernels = rank.layerKernels.get(place.layer);
        if (!kernels) rank.layerKernels.set(place.layer, (kernels = new Map()));
        const key = `${r.name}\u0000${r.module}`;
        const k = kernels.get(key);
        if (k) {
          k.ns += ns;
          k.n++;
        } else kernels.set(key, { name: r.name, path: r.module, type: place.type, ns, n: 1 });
      }
    }
  };

  finish(): NsysBreakdown {
    const warnings: string[] = [];
    const h = this.header;
    if (!h) throw new Error('The Nsight Systems reader wrote no header: it stopped before reading the report (see its message above).');
    if (!this.summary) warnings.push('The reader stopped before its summary: the report was read only in part.');
    if (!h.nvtx)
      warnings.push(
        "The report holds no NVTX ranges: profile with --trace=cuda,nvtx and the server's layerwise NVTX flag, or every kernel stays unattributed.",
      );
    if (this.summary && this.summary.noCaptureNode > 0)
      warnings.push(
        `${this.summary.noCaptureNode} replayed kernels have no capture-time graph node in the report: profile with --cuda-graph-trace=node and from the server's start (a capture range that opens after start-up loses the capture's ranges).`,
      );
    const lost = this.summary?.replayedWithoutRange ?? 0;
    if (lost > 0 && (this.summary?.attributed ?? 0) > 0)
      warnings.push(
        `${lost} replayed kernels had no NVTX range open when their CUDA graph node was captured, though other kernels had: the ranges of the graph capture at start-up were not recorded. A capture bounded with --capture-range=cudaProfilerApi drops them; record from the server's start and let its CUDA profiler switch (/start_profile, /stop_profile) bound the steps.`,
      );
    if (h.stepSource === 'graph-launch')
      warnings.push(`No NVTX range matched the step pattern /${h.stepRange}/: each CUDA graph launch was taken as one step.`);
    const ranks: NsysRankBreakdown[] = [];
    for (const acc of this.ranks.values()) {
      const n = acc.steps.size;
      if (!n) {
        warnings.push(`Device ${acc.device} (pid ${acc.pid}): ${acc.outside} kernels, none inside a step.`);
        continue;
      }
      const walls = [...acc.steps.values()].map((s) => (s.last - s.first) / 1e6);
      const stepMs = distribution(walls);
      const wallMean = stepMs ? stepMs.mean : 0;
      const share = (map: Map<string, [number, number]>): ModuleShare[] =>
        [...map.entries()]
          .map(([module, [ns, k]]) => ({
            module,
            msPerStep: ns / 1e6 / n,
            sharePct: wallMean > 0 ? (100 * ns) / 1e6 / n / wallMean : 0,
            kernelsPerStep: k / n,
          }))
          .sort((a, b) => b.msPerStep - a.msPerStep);
      const busyMsPerStep = acc.busyNs / 1e6 / n;
      const modules = share(acc.byType);
      const idle = wallMean - busyMsPerStep;
      if (idle > 0) modules.push({ module: IDLE, msPerStep: idle, sharePct: (100 * idle) / wallMean, kernelsPerStep: 0 });
      const layers: LayerShare[] = [...acc.byLayer.entries()]
        .sort((a, b) => a[0] - b[0])
        .map(([layer, map]) => {
          let ns = 0;
          let k = 0;
          for (const [t, c] of map) {
            void t;
            ns += c[0];
            k += c[1];
          }
          return {
            layer,
            module: `layer ${layer}`,
            msPerStep: ns / 1e6 / n,
            sharePct: wallMean > 0 ? (100 * ns) / 1e6 / n / wallMean : 0,
            kernelsPerStep: k / n,
            modules: share(map),
            kernels: [...(acc.layerKernels.get(layer)?.values() ?? [])]
              .sort((a, b) => b.ns - a.ns)
              .slice(0, LAYER_KERNELS)
              .map((x) => ({ name: x.name, module: x.type, path: x.path, msPerStep: x.ns / 1e6 / n, countPerStep: x.n / n })),
          };
        });
      ranks.push({
        pid: acc.pid,
        device: acc.device,
        deviceName: h.devices.find((d) => d.id === acc.device)?.name ?? null,
        steps: n,
        stepMs,
        busyMsPerStep,
        kernelsPerStep: acc.kernels / n,
        modules,
        layers,
        skew: skewOf(layers),
        categories: share(acc.byCategory).map(({ module, ...rest }) => ({ category: module, ...rest })),
        replayedPct: acc.kernels ? (100 * acc.replayed) / acc.kernels : 0,
        kernelsOutsideSteps: acc.outside,
      });
    }
    const b: NsysBreakdown = { version: NSYS_BREAKDOWN_VERSION, file: h.file, stepSource: h.stepSource, stepRange: h.stepRange, headline: '', ranks, warnings };
    b.headline = findingSentence(b);
    return b;
  }
}

/** For each module type found in two or more layers: the slowest and fastest layer against the mean. */
export function skewOf(layers: readonly LayerShare[]): LayerSkew[] {
  const byType = new Map<string, { layer: number; ms: number }[]>();
  for (const l of layers)
    for (const m of l.modules) {
      let list = byType.get(m.module);
      if (!list) byType.set(m.module, (list = []));
      list.push({ layer: l.layer, ms: m.msPerStep });
    }
  const out: LayerSkew[] = [];
  for (const [module, list] of byType) {
    if (list.length < 2) continue;
    let slow = list[0];
    let fast = list[0];
    for (const x of list) {
      if (x.ms > slow.ms) slow = x;
      if (x.ms < fast.ms) fast = x;
    }
    const meanMs = list.reduce((a, x) => a + x.ms, 0) / list.length;
    out.push({
      module,
      layers: list.length,
      slowestLayer: slow.layer,
      slowestMs: slow.ms,
      fastestLayer: fast.layer,
      fastestMs: fast.ms,
      meanMs,
      slowestOverMeanPct: meanMs > 0 ? (100 * (slow.ms - meanMs)) / meanMs : 0,
    });
  }
  return out.sort((a, b) => b.slowestOverMeanPct - a.slowestOverMeanPct);
}

const pct = (x: number) => `${x.toFixed(1)}%`;
const ms = (x: number) => `${x < 1 ? x.toFixed(3) : x.toFixed(2)} ms`;
const plural: Record<string, string> = {
  attention: 'attention blocks',
  mlp: 'dense MLP blocks',
  moe: 'MoE blocks',
  'all-reduce': 'all-reduces',
  norm: 'norms',
};

/** One sentence for the findings document: "the MoE blocks take 38% of a decode step; layer 2's attention 19% (...)". */
export function findingSentence(b: NsysBreakdown): string {
  const r = b.ranks[0];
  if (!r) return 'No decode step was found in the Nsight Systems report.';
  const top = r.modules.find((m) => m.module !== IDLE && m.module !== NO_RANGE);
  if (!top) return `No kernel of the ${r.steps} decode steps ran inside an NVTX module range: the server's layerwise NVTX markers were off.`;
  const mean = r.stepMs ? r.stepMs.mean : 0;
  let s = `The ${plural[top.module] ?? top.module} take ${pct(top.sharePct)} of a decode step (${ms(top.msPerStep)} of ${ms(mean)}, ${r.steps} steps)`;
  // Of the module types whose slowest layer is well over their mean, the one that costs the step most.
  const skew = r.skew.filter((k) => k.slowestOverMeanPct >= 10).sort((a, b) => b.slowestMs - b.meanMs - (a.slowestMs - a.meanMs))[0];
  if (skew) {
    const layer = r.layers.find((l) => l.layer === skew.slowestLayer);
    const cell = layer?.modules.find((m) => m.module === skew.module);
    s += `; layer ${skew.slowestLayer}'s ${skew.module} ${pct(cell?.sharePct ?? 0)}, ${pct(skew.slowestOverMeanPct)} over the mean of its ${skew.layers} layers`;
  }
  const none = r.modules.find((m) => m.module === NO_RANGE);
  if (none && none.sharePct >= 0.05) s += `; ${pct(none.sharePct)} ran outside any module range`;
  return `${s}.`;
}

function table(head: string[], rows: string[][]): string {
  const width = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(width[i]) : c.padStart(width[i]))).join('  ');
  return [line(head), ...rows.map(line)].join('\n');
}

/** The module breakdown as the CLI prints it; `categories: false` leaves out the kernel categories (printed by the trace analyzer beside it). */
export function renderNsysText(b: NsysBreakdown, options: { categories?: boolean } = {}): string {
  const out: string[] = [b.headline, ''];
  for (const r of b.ranks) {
    const step = r.stepMs ? `${ms(r.stepMs.mean)} per step (median ${ms(r.stepMs.median)})` : 'no step time';
    out.push(
      `${b.file}: device ${r.device}${r.deviceName ? ` (${r.deviceName})` : ''}, pid ${r.pid ?? '?'}: ${r.steps} decode steps, ${step}, ${r.kernelsPerStep.toFixed(0)} kernels per step, ${pct(r.replayedPct)} replayed from CUDA graphs; steps from ${b.stepSource === 'nvtx-range' ? `NVTX ranges /${b.stepRange}/` : b.stepSource}`,
      '',
    );
    const rows = (list: ModuleShare[]) => list.map((m) => [m.module, m.msPerStep.toFixed(3), m.sharePct.toFixed(1), m.kernelsPerStep.toFixed(1)]);
    out.push(table(['module', 'ms/step', 'share %', 'kernels/step'], rows(r.modules)), '');
    const layerRows = r.layers.map((l) => [
      `layer ${l.layer}`,
      l.msPerStep.toFixed(3),
      l.sharePct.toFixed(1),
      l.kernelsPerStep.toFixed(1),
      l.modules.map((m) => `${m.module} ${m.msPerStep.toFixed(3)}`).join(', '),
    ]);
    if (layerRows.length) out.push(table(['layer', 'ms/step', 'share %', 'kernels/step', 'modules (ms/step)'], layerRows), '');
    if (r.skew.length)
      out.push(
        table(
          ['module', 'layers', 'slowest', 'ms', 'fastest', 'ms', 'mean ms', 'slowest over mean'],
          r.skew.map((k) => [
            k.module,
            String(k.layers),
            `layer ${k.slowestLayer}`,
            k.slowestMs.toFixed(3),
            `layer ${k.fastestLayer}`,
            k.fastestMs.toFixed(3),
            k.meanMs.toFixed(3),
            pct(k.slowestOverMeanPct),
          ]),
        ),
        '',
      );
    if (options.categories !== false)
      out.push(
        table(['kernel category', 'ms/step', 'share %', 'kernels/step'], rows(r.categories.map(({ category, ...rest }) => ({ module: category, ...rest })))),
        '',
      );
  }
  for (const w of b.warnings) out.push(`warning: ${w}`);
  return `${out.join('\n').trimEnd()}\n`;
}
