import { assembleRank, combineRanks, rankBreakdown, RankFileFacts } from './breakdown';
import { OnlineAnalyzer } from './online';
import { CollectedTrace, TraceCollector } from './collect';
import { KernelClassifier } from './families';
import { ReadOptions, readTraceFile, SourceSummary } from './source';
import { findSteps, kernelOrder } from './steps';
import { RankBreakdown, TraceAnalysisOptions, TraceBreakdown } from './types';

/**
 * Analyses one rank's trace file, streaming it (plain JSON or gzip), in one pass. Runs on the
 * calling thread. Kernels go to the server's named steps as they arrive; a trace that names none
 * is cut into steps from the kernels the same pass collected, or, past its first kernels, as they
 * stream (online.ts). Only annotated kernels that come out of order for streaming, and GPU-side step
 * annotations that come after their kernels (as Kineto writes them) in a long trace with no CPU
 * step annotation, make it read the file a second time.
 */
export async function analyzeTraceFile(path: string, fallbackRank: number, options: TraceAnalysisOptions = {}, read: ReadOptions = {}): Promise<RankBreakdown> {
  const classifier = new KernelClassifier(options.extraFamilies);
  let collected: { trace: CollectedTrace; summary: SourceSummary } | undefined;
  let collectedInOnePass = false;
  if (options.mode !== 'in-memory') {
    let online = new OnlineAnalyzer(options);
    let summary = await readTraceFile(path, online.onEvent, read);
    let parts = online.finish(factsOf(path, fallbackRank, summary));
    if ('reread' in parts) {
      // GPU-side step annotations came after their kernels (Kineto writes them last): once more, knowing them.
      online = new OnlineAnalyzer(options, parts.reread);
      summary = await readTraceFile(path, online.onEvent, read);
      const again = online.finish(factsOf(path, fallbackRank, summary));
      parts = 'reread' in again ? { fallback: 'GPU-side steps could not be cut while streaming' } : again;
    }
    if ('collected' in parts) {
      collected = { trace: parts.collected, summary };
      collectedInOnePass = true;
    } else if (!('fallback' in parts)) return assembleRank(parts, options.topKernels);
  }
  if (!collected) {
    const collector = new TraceCollector();
    const summary = await readTraceFile(path, collector.onEvent, read);
    collected = { trace: collector.result(), summary };
  }
  const { trace, summary } = collected;
  const onePass = collectedInOnePass;
  const order = kernelOrder(trace);
  // A cut file's last pass is cut too, as the first part of a trace is.
  const steps = findSteps(trace, order, options, summary.truncated !== undefined);
  const rank = rankBreakdown({ ...factsOf(path, fallbackRank, summary), trace, order, steps }, classifier, options.topKernels);
  return onePass ? { ...rank, analysis: 'streaming' } : rank;
}

function factsOf(file: string, fallbackRank: number, summary: SourceSummary): RankFileFacts {
  return {
    file,
    fallbackRank,
    metadata: summary.metadata,
    events: summary.events,
    jsonBytes: summary.bytes,
    fileBytes: summary.fileBytes,
    compressed: summary.compressed,
    truncated: summary.truncated,
  };
}

/** Analyses one file per rank, one after the other, on the calling thread (the worker uses this). */
export async function analyzeTraceFiles(paths: readonly string[], options: TraceAnalysisOptions = {}, read: ReadOptions = {}): Promise<TraceBreakdown> {
  const ranks: RankBreakdown[] = [];
  for (let i = 0; i < paths.length; i++) ranks.push(await analyzeTraceFile(paths[i], i, options, read));
  return combineRanks(ranks, new KernelClassifier(options.extraFamilies).categoryOrder);
}
