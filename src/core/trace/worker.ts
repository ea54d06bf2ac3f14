// Worker-thread entry: analyses one trace file off the main thread (bundled as dist/traceWorker.js).
import { parentPort, workerData } from 'node:worker_threads';
import { analyzeTraceFile } from './analyze';
import { TraceAnalysisOptions } from './types';

export interface TraceWorkerInput {
  path: string;
  fallbackRank: number;
  options: TraceAnalysisOptions;
}

/** Messages from the worker: progress while reading, then one result or one error. */
export type TraceWorkerMessage =
  | { type: 'progress'; fileBytesRead: number; fileBytes: number }
  | { type: 'result'; rank: import('./types').RankBreakdown }
  | { type: 'error'; message: string; formatError: boolean };

const input = workerData as TraceWorkerInput;
const post = (m: TraceWorkerMessage) => parentPort!.postMessage(m);

analyzeTraceFile(input.path, input.fallbackRank, input.options, {
  onProgress: (fileBytesRead, fileBytes) => post({ type: 'progress', fileBytesRead, fileBytes }),
}).then(
  (rank) => post({ type: 'result', rank }),
  (err: unknown) =>
    post({ type: 'error', message: err instanceof Error ? err.message : String(err), formatError: err instanceof Error && err.name === 'TraceFormatError' }),
);
