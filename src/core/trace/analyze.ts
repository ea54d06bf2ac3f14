import { assembleRank, combineRanks, rankBreakdown, RankFileFacts } from './breakdown';
import { OnlineAnalyzer, PREFIX_KERNELS } from './online';
import { inTimeOrder, OrderWatch, OutOfOrder } from './order';
import { windowFor } from './unnamed';
import { CollectedTrace, TraceCollector } from './collect';
import { KernelClassifier } from './families';
import { EventCat, EventView } from './jsonReader';
import { phaseWarnings, PhasePairs } from './phases';
import { beforeLaunchWarning, EventSanity, skippedWarnings, withoutKernelsBeforeLaunch } from './sanity';
import { ReadOptions, readTraceFile, SourceSummary } from './source';
import { findSteps, kernelOrder } from './steps';
import { RankBreakdown, TraceAnalysisOptions, TraceBreakdown } from './types';

type Span = { lo: number; hi: number };
/** Read once (order.ts says why). */
const CPU_OP = EventCat.CpuOp;

/** Ends a streaming reading of a file in an order it cannot stream (kept out of the per-event closure, which then stays small). */
function stop(why: string): never {
  throw new OutOfOrder(why);
}

/** What a reading starts from, found by an earlier one. */
interface Reading {
  /** The span most events lie in (the first events were far from the rest). */
  span?: Span;
  /** The profile's first CPU-side event, for a file whose GPU events came before it. */
  firstCpu?: number;
  /** Why the file's order is not one to stream (order.ts): every kernel is kept and put in time order. */
  outOfOrder?: string;
}

/**
 * Analyses one rank's trace file, streaming it (plain JSON or gzip), in one pass. Runs on the
 * calling thread. Kernels go to the server's named steps as they arrive; a trace that names none
 * is cut into steps from the kernels the same pass collected, or, past its first kernels, as they
 * stream (online.ts). Only annotated kernels that come out of order for streaming, and GPU-side step
 * annotations that come after their kernels (as Kineto writes them) in a long trace with no CPU
 * step annotation, make it read the file a second time; a file whose events are in an order Kineto
 * does not write (shuffled, joined from pieces) is read again keeping every kernel, put in time
 * order (order.ts), so that its figures are those of the same events in Kineto's order. Every event
 * passes sanity.ts first: what no profile can hold is left out and counted in the warnings.
 */
export async function analyzeTraceFile(path: string, fallbackRank: number, options: TraceAnalysisOptions = {}, read: ReadOptions = {}): Promise<RankBreakdown> {
  let reading: Reading = {};
  // At most: a span found, the order found out, the first CPU event found (each asks once).
  for (let i = 0; i < 4; i++) {
    const r = await analyzeWithin(path, fallbackRank, options, read, reading);
    if ('rank' in r) return r.rank;
    reading = r.again;
  }
  throw new Error('unreachable: each reading asks for another at most once for each thing it found');
}

async function analyzeWithin(
  path: string,
  fallbackRank: number,
  options: TraceAnalysisOptions,
  read: ReadOptions,
  reading: Reading,
): Promise<{ rank: RankBreakdown } | { again: Reading }> {
  const { span } = reading;
  let sanity = new EventSanity(span, reading.firstCpu);
  let phases = new PhasePairs(() => undefined);
  const window = windowFor(Math.max(1, options.prefixKernels ?? PREFIX_KERNELS));
  let watch = new OrderWatch(window);
  /**
   * Reads the file once more, pairs joined (phases.ts) and through a sanity check of its own (the
   * counts are those of the last reading); `stopIfOutOfOrder`: a streaming reading stops as soon
   * as the file's order is one it cannot stream.
   */
  const readChecked = async (onEvent: (e: EventView) => void, stopIfOutOfOrder = false) => {
    sanity = new EventSanity(span, reading.firstCpu);
    watch = new OrderWatch(window);
    const check = sanity;
    const order = watch;
    const accept = (e: EventView) => {
      if (check.reject(e)) return;
      // CPU ops (most of a trace's events) tell nothing of the order the analysis needs.
      if (e.cat !== CPU_OP) {
        order.onEvent(e);
        if (stopIfOutOfOrder && order.why !== undefined) stop(order.why);
      }
      onEvent(e);
    };
    phases = new PhasePairs(accept);
    const pairs = phases;
    // Complete events, nearly all, go straight on; the rest through the pairing.
    const summary = await readTraceFile(path, (e) => (e.ph === 0x58 ? accept(e) : pairs.onEvent(e)), read);
    phases.finish();
    return summary;
  };
  const done = (rank: RankBreakdown) => {
    rank.warnings.push(...skippedWarnings(sanity.skipped), ...phaseWarnings(phases.counts));
    return { rank };
  };
  /** Set when this is the first reading and most events lay outside the span it started from. */
  const misanchored = () => {
    const again = span ? undefined : sanity.rereadSpan();
    return again ? { again: { span: again, outOfOrder: reading.outOfOrder } } : undefined;
  };
  /** Set when GPU work came before the CPU side it is judged against (a file not in Kineto's order): again, that known. */
  const judgedEarly = () =>
    reading.firstCpu === undefined && sanity.orderDependent()
      ? { again: { span, firstCpu: sanity.firstCpuStart, outOfOrder: reading.outOfOrder ?? watch.why ?? 'GPU work came before the CPU side' } }
      : undefined;
  const classifier = new KernelClassifier(options.extraFamilies);
  let collected: { trace: CollectedTrace; summary: SourceSummary } | undefined;
  let collectedInOnePass = false;
  if (options.mode !== 'in-memory' && !reading.outOfOrder) {
    let online = new OnlineAnalyzer(options);
    let summary: SourceSummary;
    try {
      summary = await readChecked(online.onEvent, true);
    } catch (err) {
      if (!(err instanceof OutOfOrder)) throw err;
      return { again: { span, outOfOrder: err.why } };
    }
    const again = misanchored() ?? judgedEarly();
    if (again) return again;
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
    const again = misanchored() ?? judgedEarly();
    if (again) return again;
    // Out of order, or in an order the in-memory way would read differently: the same collection, in time order.
    const outOfOrder = reading.outOfOrder ?? watch.why;
    collected = { trace: outOfOrder ? inTimeOrder(collector.result()) : collector.result(), summary };
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
