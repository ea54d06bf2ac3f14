import { assembleRank, combineRanks, rankBreakdown } from './breakdown';
import { OnlineAnalyzer } from './online';
import { TraceCollector } from './collect';
import { KernelClassifier } from './families';
import { ReadOptions, readTraceFile } from './source';
import { findSteps, kernelOrder } from './steps';
import { RankBreakdown, TraceAnalysisOptions, TraceBreakdown } from './types';

/**
 * Analyses one rank's trace file, streaming it (plain JSON or gzip). Runs on the calling thread.
 * One pass routes kernels to steps as they arrive; traces whose steps can only be found with every
 * kernel at hand (GPU-side annotations, idle gaps, an unusual layout) are read a second time.
 */
export async function analyzeTraceFile(path: string, fallbackRank: number, options: TraceAnalysisOptions = {}, read: ReadOptions = {}): Promise<RankBreakdown> {
  if (options.mode !== 'in-memory') {
    const online = new OnlineAnalyzer(options);
    const summary = await readTraceFile(path, online.onEvent, read);
    const parts = online.finish({
      file: path, fallbackRank, metadata: summary.metadata, events: summary.events, jsonBytes: summary.bytes,
      fileBytes: summary.fileBytes, compressed: summary.compressed, truncated: summary.truncated,
    });
    if (!('fallback' in parts)) return assembleRank(parts, options.topKernels);
  }
  const classifier = new KernelClassifier(options.extraFamilies);
  const collector = new TraceCollector();
  const summary = await readTraceFile(path, collector.onEvent, read);
  const trace = collector.result();
  const order = kernelOrder(trace);
  const steps = findSteps(trace, order, options);
  return rankBreakdown(
    {
      file: path,
      fallbackRank,
      trace,
      order,
      steps,
      metadata: summary.metadata,
      events: summary.events,
      jsonBytes: summary.bytes,
      fileBytes: summary.fileBytes,
      compressed: summary.compressed,
      truncated: summary.truncated,
    },
    classifier,
    options.topKernels,
  );
}

/** Analyses one file per rank, one after the other, on the calling thread (the worker uses this). */
export async function analyzeTraceFiles(paths: readonly string[], options: TraceAnalysisOptions = {}, read: ReadOptions = {}): Promise<TraceBreakdown> {
  const ranks: RankBreakdown[] = [];
  for (let i = 0; i < paths.length; i++) ranks.push(await analyzeTraceFile(paths[i], i, options, read));
  return combineRanks(ranks, new KernelClassifier(options.extraFamilies).categoryOrder);
}
