import * as vscode from 'vscode';
import { ProfileOptions, runProfilePhase } from '../../core/phases/profile';
import { readSettings } from '../settings';
import { PhaseRunner } from './phaseRunner';

const WORKLOADS = [
  {
    label: 'Decode batch of 4',
    detail: '4 requests decoding at once, 48 tokens each (about 48 decode steps profiled)',
    options: { concurrency: 4, outputLen: 48 },
  },
  { label: 'Single stream', detail: 'one request, 48 tokens: the decode step that single-stream tok/s measures', options: { concurrency: 1, outputLen: 48 } },
  { label: 'Decode batch of 32', detail: '32 requests decoding at once, 48 tokens each', options: { concurrency: 32, outputLen: 48 } },
];

/**
 * The profiler phase: the server's torch profiler around a short decode workload, the per-rank
 * traces fetched into the run folder and broken down in worker threads.
 */
export const profileRunner: PhaseRunner = {
  phase: 'profile',
  title: 'Profiler phase (decode step breakdown)',
  needsGpusFree: false,
  async pickOptions(target, defaults) {
    if (defaults) return { ...WORKLOADS[0].options };
    const picked = await vscode.window.showQuickPick(
      WORKLOADS.map((w) => ({ ...w, description: '' })),
      {
        title: `Run Profiler Phase on ${target.name}`,
        placeHolder: `The server at ${target.serverUrl} must run with its profiler enabled (vLLM: --profiler-config)`,
        matchOnDetail: true,
        ignoreFocusOut: true,
      },
    );
    return picked ? { ...picked.options } : undefined;
  },
  async run(ctx, options) {
    const outcome = await runProfilePhase(ctx, { ...(options as ProfileOptions), analysis: readSettings().traceAnalysis });
    return outcome.summary;
  },
};
