import { writeFileSync } from 'node:fs';
import { CliCommand, parseCommandArgs, phaseExitCode, UsageError } from '../command';
import { agentChoice, positiveWholeNumber, positiveWholeNumberList } from '../flags';
import { cliPhaseContext, openCliTarget, TARGET_OPTIONS, targetUsage } from '../targetOptions';
import { MICRO_PARTS, MicroOptions, MicroOptionsError, MicroPart } from '../../core/micro/options';
import { CollectiveModel, microTables } from '../../core/micro/tables';
import { runMicroPhase } from '../../core/phases/micro';
import { renderTextTable } from '../../shared/table';
import { withServerStopped } from '../../core/server/phaseServer';
import { ServerControlError } from '../../core/server/serverChange';
import { cliConsent, cliServerProgress, warnPendingServerChange } from './server';
import { sayHint } from '../../shared/remedy';

const USAGE = `infbench micro — how fast are the pieces: GEMMs at the model's shapes, all-reduce, launch overhead

Usage: infbench micro [options]

Runs PyTorch on the target's GPUs (the agent's \`micro\` command) and compares each piece with the
device's own measured ceilings (a copy and a large matmul). Refuses when the GPUs are mostly taken
(for example by the running server) unless --allow-busy is given.

${targetUsage('the Python with PyTorch (and vLLM) on the target')}
Shapes:
  --model NAME              a preset (kimi-k2.5, deepseek-v3, llama-3-70b, llama-3-8b, qwen3-235b-a22b,
                            qwen3-30b-a3b), a model folder or a Hugging Face id in the target's cache
  --config PATH             the model's config.json (or its folder) on the target
  --tp N                    tensor-parallel size the shapes are split by (default 1)
  --m 1,8,64                token counts M (default 1,2,4,...,256)
  --shape NAME=NxK          an extra GEMM (repeatable); with no model, the only shapes
  --only TEXT               keep only shapes whose name contains TEXT (repeatable)
  --dtype auto|bf16|fp16|fp32|fp8|int4   GEMM weights (auto follows the model: int4 -> Marlin, fp8 -> scaled_mm)
Run:
  --device auto|cuda|cuda:N|cpu
  --allow-busy              run even when the GPUs are mostly taken (sized to the free memory)
  --busy-threshold F        fraction of GPU memory in use that counts as busy (default 0.5)
  --stop-server             stop the server first (its pid, after a yes showing the exact command),
                            and start it again afterwards, also on failure or Ctrl-C
  --yes                     agree to --stop-server's stop and start without asking
  --skip ${MICRO_PARTS.join(',')}   leave parts out
  --repeats N               timed repeats per point, median reported (default 10)
  --ar-world-size N         all-reduce processes (default one per GPU; 2 on CPU)
  --ar-backend auto|nccl|gloo
  --ar-max-bytes N          largest all-reduce message of the doubling sweep
Output:
  --out FILE                write the result JSON to FILE
  --json                    print the result JSON on stdout instead of tables

Example: infbench micro --target local --python /usr/bin/python3 --model kimi-k2.5 --tp 8 --m 1,8,64`;

export const microCommand: CliCommand = {
  name: 'micro',
  summary: "micro-benchmarks: GEMMs at the model's shapes, all-reduce at decode sizes, launch overhead",
  usage: USAGE,
  async run(argv: string[]): Promise<number> {
    const parsed = parseCommandArgs('micro', {
      args: argv,
      options: {
        ...TARGET_OPTIONS,
        model: { type: 'string' },
        config: { type: 'string' },
        tp: { type: 'string' },
        m: { type: 'string' },
        shape: { type: 'string', multiple: true },
        only: { type: 'string', multiple: true },
        dtype: { type: 'string' },
        'group-size': { type: 'string' },
        device: { type: 'string' },
        'allow-busy': { type: 'boolean' },
        'stop-server': { type: 'boolean' },
        yes: { type: 'boolean' },
        'busy-threshold': { type: 'string' },
        skip: { type: 'string' },
        repeats: { type: 'string' },
        'launch-kernels': { type: 'string' },
        'ar-world-size': { type: 'string' },
        'ar-backend': { type: 'string' },
        'ar-max-bytes': { type: 'string' },
        hidden: { type: 'string' },
        out: { type: 'string' },
        json: { type: 'boolean' },
      },
      strict: true,
    });
    const v = parsed.values;
    const dtype = agentChoice('micro', 'dtype', v.dtype);
    const arBackend = agentChoice('micro', 'arBackend', v['ar-backend']);
    const skip = v.skip
      ?.split(',')
      .map((s) => s.trim())
      .filter(Boolean) as MicroPart[] | undefined;
    const threshold = v['busy-threshold'] === undefined ? undefined : Number(v['busy-threshold']);
    const options: MicroOptions = {
      model: v.model,
      config: v.config,
      tp: positiveWholeNumber(v.tp, '--tp'),
      m: positiveWholeNumberList(v.m, '--m'),
      shapes: v.shape,
      only: v.only,
      dtype,
      groupSize: positiveWholeNumber(v['group-size'], '--group-size'),
      device: v.device,
      allowBusy: v['allow-busy'],
      busyThreshold: threshold,
      skip,
      repeats: positiveWholeNumber(v.repeats, '--repeats'),
      launchKernels: positiveWholeNumber(v['launch-kernels'], '--launch-kernels'),
      arWorldSize: positiveWholeNumber(v['ar-world-size'], '--ar-world-size'),
      arBackend,
      arMaxBytes: positiveWholeNumber(v['ar-max-bytes'], '--ar-max-bytes'),
      hidden: positiveWholeNumber(v.hidden, '--hidden'),
    };
    for (const k of Object.keys(options) as (keyof MicroOptions)[]) if (options[k] === undefined) delete options[k];

    const opened = await openCliTarget(v, 'micro', 'Stopping: the points measured so far are kept…');
    try {
      let printed = 0;
      const ctx = cliPhaseContext(opened, (run) => {
        const points = run.micro?.points ?? [];
        for (; printed < points.length; printed++) process.stderr.write(`${pointLine(points[printed])}\n`);
      });
      warnPendingServerChange(opened);
      let outcome;
      try {
        outcome = v['stop-server']
          ? (
              await withServerStopped(ctx, 'micro', { consent: cliConsent(v.yes), onProgress: cliServerProgress, signal: opened.signal }, () =>
                runMicroPhase(ctx, options),
              )
            ).value
          : await runMicroPhase(ctx, options);
      } catch (err) {
        if (err instanceof MicroOptionsError) throw new UsageError(err.message);
        if (err instanceof ServerControlError) {
          process.stderr.write(`infbench micro: ${err.message}\n`);
          return 1;
        }
        throw err;
      }
      if (outcome.busy) {
        process.stderr.write(
          `infbench micro: ${outcome.busy.message}\n${sayHint(outcome.busy.hint ?? '', outcome.busy.remedies)}\nRun folder: ${outcome.run.dir}\n`,
        );
        return 3;
      }
      const result = outcome.run.readResult<Record<string, unknown>>() ?? { points: outcome.points };
      if (v.out) writeFileSync(v.out, JSON.stringify(result, null, 2));
      if (v.json) {
        process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
      } else {
        const kernel = outcome.points.find((p) => p.kind === 'gemm')?.kernel;
        if (outcome.summary.headline) process.stdout.write(`${outcome.summary.headline}\n\n`);
        const model = (result.cluster as { plan?: CollectiveModel } | undefined)?.plan;
        for (const table of microTables(outcome.points, { kernel: typeof kernel === 'string' ? kernel : undefined, model })) {
          process.stdout.write(`${renderTextTable(table)}\n\n`);
        }
        process.stdout.write(`Run folder: ${outcome.run.dir}${v.out ? `\nResult: ${v.out}` : ''}\n`);
      }
      return phaseExitCode('micro', outcome.agent.status, outcome.agent.reason);
    } finally {
      await opened.close();
    }
  },
};

/** One progress line per measured point, on stderr while the run goes. */
function pointLine(p: Record<string, unknown>): string {
  const f = (x: unknown, d = 1) => (typeof x === 'number' ? x.toFixed(d) : '?');
  switch (p.kind) {
    case 'gemm':
      return `gemm ${String(p.shape)} M=${String(p.m)}: ${f(p.us)} µs, ${f(p.tbps, 2)} TB/s${typeof p.pct_peak_bw === 'number' ? ` (${f(p.pct_peak_bw, 0)}% of peak)` : ''}`;
    case 'allreduce':
    case 'alltoall':
      return `${p.kind === 'alltoall' ? 'all-to-all' : 'all-reduce'}${p.scope ? ` ${String(p.scope)}` : ''} ${String(p.bytes)} B ${String(p.mode)}: ${f(p.us)} µs, busbw ${f(p.busbw_gbps, 2)} GB/s`;
    case 'launch':
      return `launch ${String(p.mode)}: ${f(p.us_per_kernel, 2)} µs per kernel`;
    case 'peak':
      return p.what === 'copy' ? `peak copy: ${f(p.tbps, 2)} TB/s` : `peak matmul: ${f(p.tflops, 1)} TFLOP/s`;
    default:
      return JSON.stringify(p);
  }
}
