// An Nsight Systems breakdown (nsysModules.ts) as the results view draws it: per rank, the modules,
// the layers with their kernels, and the skew between layers of one kind. The host shapes it once.
import type { NsysModulesView } from '../../shared/nsysView';
import type { NsysBreakdown } from './nsysModules';

/** True for what NsysModuleAnalyzer.finish gives (a run's nsys-breakdown.json, result.json's `nsys`). */
export function isNsysBreakdown(value: unknown): value is NsysBreakdown {
  const v = value as Partial<NsysBreakdown> | undefined;
  return (
    !!v &&
    typeof v === 'object' &&
    typeof v.version === 'number' &&
    Array.isArray(v.ranks) &&
    v.ranks.every((r) => typeof r === 'object' && r !== null && Array.isArray(r.modules) && Array.isArray(r.layers))
  );
}

export function nsysViewOf(b: NsysBreakdown): NsysModulesView {
  return {
    headline: b.headline,
    file: b.file,
    warnings: b.warnings,
    ranks: b.ranks.map((r) => ({
      device: r.device,
      deviceName: r.deviceName,
      pid: r.pid,
      steps: r.steps,
      stepMs: r.stepMs ? r.stepMs.mean : null,
      replayedPct: r.replayedPct,
      modules: r.modules.map(({ module, msPerStep, sharePct, kernelsPerStep }) => ({ module, msPerStep, sharePct, kernelsPerStep })),
      layers: r.layers.map((l) => ({
        layer: l.layer,
        msPerStep: l.msPerStep,
        sharePct: l.sharePct,
        kernelsPerStep: l.kernelsPerStep,
        modules: l.modules.map(({ module, msPerStep, sharePct, kernelsPerStep }) => ({ module, msPerStep, sharePct, kernelsPerStep })),
        kernels: l.kernels ?? [],
      })),
      skew: r.skew,
    })),
  };
}
