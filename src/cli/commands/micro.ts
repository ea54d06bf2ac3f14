import { writeFileSync } from 'node:fs';
import { CliCommand, parseCommandArgs, phaseExitCode, UsageError } from '../command';
import { agentFlags, agentFlagUsage, flagOf } from '../agentFlags';
import { agentChoiceList, agentNumberList, agentValue } from '../flags';
import { cliPhaseContext, openCliTarget, TARGET_OPTIONS, targetUsage } from '../targetOptions';
import { MICRO_PARTS, MicroOptions, MicroOptionsError } from '../../core/micro/options';
import { CollectiveModel, microTables } from '../../core/micro/tables';
import { runMicroPhase } from '../../core/phases/micro';
import { renderTextTable } from '../../shared/table';
import { withServerStopped } from '../../core/server/phaseServer';
import { ServerControlError } from '../../core/server/serverChange';
import { cliConsent, cliServerProgress, warnPendingServerChange } from './server';
import { sayHint } from '../../shared/remedy';

// Handed to the agent: named, typed and explained by its option table (agent/infbench_agent/options.py).
const SHAPE_FLAGS = ['model', 'config', 'hidden', 'tp', 'm', 'shape', 'only', 'dtype', 'group-size'] as const;
const RUN_FLAGS = ['device', 'allow-busy', 'busy-threshold', 'skip', 'repeats', 'launch-kernels', 'ar-world-size', 'ar-backend', 'ar-max-bytes'] as const;

const USAGE = `infbench micro — how fast are the pieces: GEMMs at the model's shapes, all-reduce, launch overhead

Usage: infbench micro [options]

Runs PyTorch on the target's GPUs (the agent's \`micro\` command) and compares each piece with the
device's own measured ceilings (a copy and a large matmul). Refuses when the GPUs are mostly taken
(for example by the running server) unless ${flagOf('micro', 'allowBusy')} is given.

${targetUsage('the Python with PyTorch (and vLLM) on the target')}
Shapes:
${agentFlagUsage('micro', SHAPE_FLAGS)}
Run:
${agentFlagUsage('micro', RUN_FLAGS)}
  --stop-server             stop the server first (its pid, after a yes showing the exact command),
                            and start it again afterwards, also on failure or Ctrl-C
  --yes                     agree to --stop-server's stop and start without asking
Output:
  --out FILE                write the result JSON to FILE
  --json                    print the result JSON on stdout instead of tables

Example: infbench micro --target local --python /usr/bin/python3 --model kimi-k2.5 --tp 8 --m 1,8,64`;

/** What the command parses: the target's flags, the agent's for this phase, and its own. */
const OPTIONS = {
  ...TARGET_OPTIONS,
  ...agentFlags('micro', SHAPE_FLAGS),
  ...agentFlags('micro', RUN_FLAGS),
  'stop-server': { type: 'boolean' },
  yes: { type: 'boolean' },
  out: { type: 'string' },
  json: { type: 'boolean' },
} as const;

export const microCommand: CliCommand = {
  name: 'micro',
  summary: "micro-benchmarks: GEMMs at the model's shapes, all-reduce at decode sizes, launch overhead",
  usage: USAGE,
  options: OPTIONS,
  async run(argv: string[]): Promise<number> {
    const parsed = parseCommandArgs('micro', {
      args: argv,
      options: OPTIONS,
      strict: true,
    });
    const v = parsed.values;
    const options: MicroOptions = {
      model: agentValue('micro', 'model', v),
      config: agentValue('micro', 'config', v),
      tp: agentValue('micro', 'tp', v),
      m: agentNumberList('micro', 'm', v),
      shapes: agentValue('micro', 'shape', v)?.slice(),
      only: agentValue('micro', 'only', v)?.slice(),
      dtype: agentValue('micro', 'dtype', v),
      groupSize: agentValue('micro', 'groupSize', v),
      device: agentValue('micro', 'device', v),
      allowBusy: agentValue('micro', 'allowBusy', v),
      busyThreshold: agentValue('micro', 'busyThreshold', v),
      skip: agentChoiceList('micro', 'skip', v, MICRO_PARTS),
      repeats: agentValue('micro', 'repeats', v),
      launchKernels: agentValue('micro', 'launchKernels', v),
      arWorldSize: agentValue('micro', 'arWorldSize', v),
      arBackend: agentValue('micro', 'arBackend', v),
      arMaxBytes: agentValue('micro', 'arMaxBytes', v),
      hidden: agentValue('micro', 'hidden', v),
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
