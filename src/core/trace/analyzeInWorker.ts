import { existsSync } from 'node:fs';
import { availableParallelism, freemem } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { analyzeTraceFile } from './analyze';
import { combineRanks } from './breakdown';
import { KernelClassifier } from './families';
import { TraceFormatError } from './jsonReader';
import { RankBreakdown, TraceAnalysisOptions, TraceBreakdown } from './types';
import type { TraceWorkerInput, TraceWorkerMessage } from './worker';

export interface WorkerAnalysisOptions {
  signal?: AbortSignal;
  /** Progress of one file: file bytes read so far out of its size. */
  onProgress?: (path: string, fileBytesRead: number, fileBytes: number) => void;
  /** Files analysed at once, one worker each; default: poolSize(). */
  concurrency?: number;
}

/**
 * What one worker holds at its peak while it streams a trace: its isolate (about 10 MB), the 4 MB
 * read buffer and the analysis (measured peak RSS of one file alone: 80-110 MB whatever its size,
 * docs/BENCHMARKS.md), rounded up.
 */
export const WORKER_PEAK_BYTES = 160 << 20;

/**
 * How many rank files are analysed at once: one per core (the calling thread only waits), and no
 * more than half the memory free now holds at each worker's peak, so that the ranks of a capture
 * together stay within what the machine has.
 */
export function poolSize(files: number, cores = availableParallelism(), freeBytes = freemem()): number {
  const byMemory = Math.floor(freeBytes / 2 / WORKER_PEAK_BYTES);
  return Math.max(1, Math.min(files, cores, byMemory));
}

/** Where the worker script is: bundled beside us (dist/traceWorker.js), or the TypeScript source under tsx. */
function workerScript(): { file: string; execArgv: string[] } | undefined {
  const bundled = join(__dirname, 'traceWorker.js');
  if (existsSync(bundled)) return { file: bundled, execArgv: [] };
  const source = join(__dirname, 'worker.ts');
  if (__filename.endsWith('.ts') && existsSync(source)) return { file: source, execArgv: ['--require', 'tsx/cjs'] };
  return undefined;
}

function analyzeOne(script: { file: string; execArgv: string[] }, input: TraceWorkerInput, options: WorkerAnalysisOptions): Promise<RankBreakdown> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(script.file, { workerData: input, execArgv: script.execArgv });
    let settled = false;
    const finish = (fn: () => void) => {
      if (settled) return;
      settled = true;
      options.signal?.removeEventListener('abort', onAbort);
      void worker.terminate();
      fn();
    };
    const onAbort = () => finish(() => reject(new Error('Trace analysis was cancelled.')));
    options.signal?.addEventListener('abort', onAbort, { once: true });
    worker.on('message', (m: TraceWorkerMessage) => {
      if (m.type === 'progress') options.onProgress?.(input.path, m.fileBytesRead, m.fileBytes);
      else if (m.type === 'result') finish(() => resolve(m.rank));
      else finish(() => reject(m.formatError ? new TraceFormatError(`${input.path}: ${m.message}`, 0) : new Error(`${input.path}: ${m.message}`)));
    });
    worker.on('error', (err) => finish(() => reject(new Error(`The trace analysis worker failed on ${input.path}: ${err.message}`))));
    worker.on('exit', (code) =>
      finish(() => reject(new Error(`The trace analysis worker stopped (exit code ${code}) before finishing ${input.path}; it may have run out of memory.`))),
    );
  });
}

/**
 * Analyses trace files (one per rank) in worker threads, so that the caller's thread (the
 * extension host) stays responsive; files go to separate workers in parallel, as many at once as
 * poolSize() allows, each rank's result in its place whatever order they finish in: the same
 * breakdown as analyzeTraceFiles on the calling thread.
 */
export async function analyzeTracesInWorker(
  paths: readonly string[],
  options: TraceAnalysisOptions = {},
  run: WorkerAnalysisOptions = {},
): Promise<TraceBreakdown> {
  if (run.signal?.aborted) throw new Error('Trace analysis was cancelled.');
  const classifier = new KernelClassifier(options.extraFamilies); // validates the user's patterns before any worker starts
  const script = workerScript();
  const ranks: RankBreakdown[] = new Array(paths.length);
  const limit = Math.max(1, Math.min(paths.length, run.concurrency ?? poolSize(paths.length)));
  let next = 0;
  const lane = async () => {
    while (next < paths.length) {
      const i = next++;
      const input: TraceWorkerInput = { path: paths[i], fallbackRank: i, options };
      ranks[i] = script
        ? await analyzeOne(script, input, run)
        : await analyzeTraceFile(paths[i], i, options, { signal: run.signal, onProgress: (r, t) => run.onProgress?.(paths[i], r, t) });
    }
  };
  await Promise.all(Array.from({ length: limit }, lane));
  return combineRanks(ranks, classifier.categoryOrder);
}
