// Builds small Kineto-shaped traces for tests whose answer must be known exactly (the real traces
// captured on an H200 are in test/fixtures/traces; these cover what one GPU cannot produce: several
// ranks, all-reduce kernels, overlapping streams).
export interface KernelSpec {
  name: string;
  /** Start, microseconds from the step's start. */
  at: number;
  dur: number;
  stream?: number;
  cat?: 'kernel' | 'gpu_memcpy' | 'gpu_memset';
}

export interface StepSpec {
  annotation?: string;
  kernels: KernelSpec[];
  /** Gap after the step on the GPU, us. */
  gapAfter: number;
  graph?: boolean;
}

export function kinetoTrace(steps: StepSpec[], opts: { rank?: number; worldSize?: number; distributedInfoLast?: boolean; t0?: number } = {}): string {
  const events: object[] = [];
  let t = opts.t0 ?? 1_000_000;
  let corr = 1;
  for (const step of steps) {
    const cpuStart = t - 50;
    let end = t;
    const launches: object[] = [];
    const graphCorr = step.graph ? corr++ : -1;
    if (step.graph)
      launches.push({ ph: 'X', cat: 'cuda_runtime', name: 'cudaGraphLaunch', pid: 1, tid: 1, ts: cpuStart + 1, dur: 5, args: { correlation: graphCorr } });
    step.kernels.forEach((k, i) => {
      const c = step.graph ? graphCorr : corr++;
      if (!step.graph)
        launches.push({ ph: 'X', cat: 'cuda_runtime', name: 'cudaLaunchKernel', pid: 1, tid: 1, ts: cpuStart + 1 + i, dur: 0.5, args: { correlation: c } });
      events.push({
        ph: 'X',
        cat: k.cat ?? 'kernel',
        name: k.name,
        pid: 0,
        tid: k.stream ?? 7,
        ts: t + k.at,
        dur: k.dur,
        args: { device: 0, stream: k.stream ?? 7, correlation: c },
      });
      end = Math.max(end, t + k.at + k.dur);
    });
    if (step.annotation)
      events.push({ ph: 'X', cat: 'user_annotation', name: step.annotation, pid: 1, tid: 1, ts: cpuStart, dur: step.kernels.length + 10, args: {} });
    events.push(...launches);
    t = end + step.gapAfter;
  }
  const head: Record<string, unknown> = { schemaVersion: 1, deviceProperties: [{ id: 0, name: 'Test GPU' }] };
  const info = opts.rank === undefined ? undefined : { rank: opts.rank, world_size: opts.worldSize ?? 1 };
  if (info && !opts.distributedInfoLast) head.distributedInfo = info;
  const doc: Record<string, unknown> = { ...head, traceEvents: events };
  if (info && opts.distributedInfoLast) doc.distributedInfo = info;
  doc.traceName = 'synthetic';
  return JSON.stringify(doc, null, 1);
}
