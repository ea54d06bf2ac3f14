// What the results view draws of an Nsight Systems profile: the decode step by layer and module type,
// per rank (src/core/trace/nsysModules.ts computes it; src/core/trace/nsysView.ts shapes it for here).

/** A module type's part of one decode step. */
export interface NsysModuleShareView {
  module: string;
  msPerStep: number;
  /** Percent of the mean step's wall time. */
  sharePct: number;
  kernelsPerStep: number;
}

/** One kernel of a layer, per decode step. */
export interface NsysLayerKernelView {
  name: string;
  /** Its module type, and the NVTX module path it ran in. */
  module: string;
  path: string;
  msPerStep: number;
  countPerStep: number;
}

export interface NsysLayerView {
  layer: number;
  msPerStep: number;
  sharePct: number;
  kernelsPerStep: number;
  /** The layer's module types, largest first. */
  modules: NsysModuleShareView[];
  kernels: NsysLayerKernelView[];
}

/** Layers of one module type side by side, the slow one named. */
export interface NsysSkewView {
  module: string;
  layers: number;
  slowestLayer: number;
  slowestMs: number;
  fastestLayer: number;
  fastestMs: number;
  meanMs: number;
  slowestOverMeanPct: number;
}

export interface NsysRankView {
  device: number;
  deviceName: string | null;
  pid: number | null;
  steps: number;
  /** The mean decode step on the GPU, ms. */
  stepMs: number | null;
  replayedPct: number;
  /** By module type, largest first; "(no NVTX range)" and "(idle)" included so the shares add up to the step. */
  modules: NsysModuleShareView[];
  layers: NsysLayerView[];
  skew: NsysSkewView[];
}

export interface NsysModulesView {
  /** The findings' sentence: "The MoE blocks take 38% of a decode step...". */
  headline: string;
  file: string;
  ranks: NsysRankView[];
  warnings: string[];
}

/** The module types a breakdown names that are not kinds of work: kept apart, drawn last. */
export const NSYS_NO_RANGE = '(no NVTX range)';
export const NSYS_IDLE = '(idle)';
