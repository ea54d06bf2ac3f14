import { assembleRank, combineRanks, rankBreakdown, RankFileFacts } from './breakdown';
import { OnlineAnalyzer } from './online';
import { CollectedTrace, TraceCollector } from './collect';
import { KernelClassifier } from './families';
import { EventView } from './jsonReader';
import { phaseWarnings, PhasePairs } from './phases';
import { beforeLaunchWarning, EventSanity, skippedWarnings, withoutKernelsBeforeLaunch } from './sanity';
import { ReadOptions, readTraceFile, SourceSummary } from './source';
import { findSteps, kernelOrder } from './steps';
import { RankBreakdown, TraceAnalysisOptions, TraceBreakdown } from './types';

type Span = { lo: number; hi: number };

/**
 * Analyses one rank's trace file, streaming it (plain JSON or gzip), in one pass. Runs on the
 * calling thread. Kernels go to the server's named steps as they arrive; a trace that names none
 * is cut into steps from the kernels the same pass collected, or, past its first kernels, as they
 * stream (online.ts). Only annotated kernels that come out of order for streaming, and GPU-side step
 * annotations that come after their kernels (as Kineto writes them) in a long trace with no CPU
 * step annotation, make it read the file a second time. Every event passes sanity.ts first: what
 * no profile can hold is left out and counted in the warnings.
 */
export async function analyzeTraceFile(path: string, fallbackRank: number, options: TraceAnalysisOptions = {}, read: ReadOptions = {}): Promise<RankBreakdown> {
  const first = await analyzeWithin(path, fallbackRank, options, read);
  if ('rank' in first) return first.rank;
  // The first events were the ones far from the rest (a zeroed timestamp first): again, from the rest's span.
  const again = await analyzeWithin(path, fallbackRank, options, read, first.rereadSpan);
  if (!('rank' in again)) throw new Error('unreachable: a second reading with a span set asks for no third');
  return again.rank;
}

async function analyzeWithin(
  path: string,
  fallbackRank: number,
  options: TraceAnalysisOptions,
  read: ReadOptions,
  span?: Span,
): Promise<{ rank: RankBreakdown } | { rereadSpan: Span }> {
  let sanity = new EventSanity(span);
  let phases = new PhasePairs(() => undefined);
  /** Reads the file once more, pairs joined (phases.ts) and through a sanity check of its own (the counts are those of the last reading). */
  const readChecked = async (onEvent: (e: EventView) => void) => {
    sanity = new EventSanity(span);
    const check = sanity;
    phases = new PhasePairs((e) => {
      if (!check.reject(e)) onEvent(e);
    });
    const summary = await readTraceFile(path, phases.onEvent, read);
    phases.finish();
    return summary;
  };
  const done = (rank: RankBreakdown) => {
    rank.warnings.push(...skippedWarnings(sanity.skipped), ...phaseWarnings(phases.counts));
    return { rank };
  };
  /** Set when this is the first reading and most events lay outside the span it started from. */
  const misanchored = () => (span ? undefined : sanity.rereadSpan());
  const classifier = new KernelClassifier(options.extraFamilies);
  let collected: { trace: CollectedTrace; summary: SourceSummary } | undefined;
  let collectedInOnePass = false;
  if (options.mode !== 'in-memory') {
    let online = new OnlineAnalyzer(options);
    let summary = await readChecked(online.onEvent);
    const rereadSpan = misanchored();
    if (rereadSpan) return { rereadSpan };
    let parts = online.finish(factsOf(path, fallbackRank, summary));
    if ('reread' in parts) {
      // GPU-side step annotations came after their kernels (Kineto writes them last): once more, knowing them.
      online = new OnlineAnalyzer(options, parts.reread);
      summary = await readChecked(online.onEvent);
      const again = online.finish(factsOf(path, fallbackRank, summary));
      parts = 'reread' in again ? { fallback: 'GPU-side steps could not be cut while streaming' } : again;
    }
    if ('collected' in parts) {
      collected = { trace: parts.collected, summary };
      collectedInOnePass = true;
    } else if (!('fallback' in parts)) return done(assembleRank(parts, options.topKernels));
  }
  if (!collected) {
    const collector = new TraceCollector();
    const summary = await readChecked(collector.onEvent);
    const rereadSpan = misanchored();
    if (rereadSpan) return { rereadSpan };
    collected = { trace: collector.result(), summary };
  }
  const { summary } = collected;
  const { trace, dropped } = withoutKernelsBeforeLaunch(collected.trace);
  const onePass = collectedInOnePass;
  const order = kernelOrder(trace);
  // A cut file's last pass is cut too, as the first part of a trace is.
  const steps = findSteps(trace, order, options, summary.truncated !== undefined);
  const rank = rankBreakdown({ ...factsOf(path, fallbackRank, summary), trace, order, steps }, classifier, options.topKernels);
  if (dropped) rank.warnings.push(beforeLaunchWarning(dropped));
  return done(onePass ? { ...rank, analysis: 'streaming' } : rank);
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
