import { checkOutPath, CliCommand, parseCommandArgs, phaseExitCode, SIMULATOR_BANNER, UsageError, writeOutputFile } from '../command';
import { agentFlags, agentFlagUsage, flagOf } from '../agentFlags';
import { agentValue, agentValueAs, kernelFamilyFlag } from '../flags';
import { cliPhaseContext, openCliTarget, TARGET_OPTIONS, targetUsage } from '../targetOptions';
import { ProfileOptions, runProfilePhase } from '../../core/phases/profile';
import { renderBreakdownText } from '../../core/trace/format';
import { withNsysServer, withProfilerServer } from '../../core/server/phaseServer';
import { renderNsysText } from '../../core/trace/nsysModules';
import { ServerControlError } from '../../core/server/serverChange';
import { cliConsent, cliServerProgress, PROFILER_ITERATION_OPTIONS, profilerIterations, warnPendingServerChange } from './server';

// Handed to the agent: named, typed and explained by its option table (agent/infbench_agent/options.py).
const WORKLOAD_FLAGS = ['concurrency', 'output-len', 'input-len', 'model'] as const;
const TRACE_FLAGS = ['trace-dir', 'expect-ranks', 'stop-timeout', 'delay-steps', 'num-steps', 'record-shapes', 'with-stack'] as const;
const PROFILER_FLAGS = ['profiler', 'nsys'] as const;

const USAGE = `infbench profile — where each decode step's GPU time goes, from the server's own torch profiler

Usage: infbench profile [options]

Starts the server's profiler (/start_profile), drives a short decode workload, stops it, copies the
trace of every rank into the run folder and breaks each decode step down by kernel category.
vLLM must run with a profiler configured (the error says how for its version); SGLang always can.

${targetUsage()}
Workload:
${agentFlagUsage('profile', WORKLOAD_FLAGS)}
Traces:
${agentFlagUsage('profile', TRACE_FLAGS)}
  --family CAT=REGEX        a kernel family tried before the built-in ones (repeatable)
  --step-annotation REGEX   the server's step annotation, if not a known one
Profiler:
${agentFlagUsage('profile', PROFILER_FLAGS, {
  // What the CLI does around the agent: it restarts the server under nsys and puts it back.
  profiler:
    "torch: the server's torch profiler writes the traces (default). nsys: restart the server under Nsight Systems (asks first, showing the exact command), bound the capture with /start_profile and /stop_profile, stop it so nsys writes its report, export and read the report on the host, put the original back; the step is broken down by layer and NVTX module beside the kernel categories",
  nsys: 'the nsys on the host (default: found on PATH, in the CUDA toolkit, Nsight installs)',
})}
Server:
  --restart-with-profiler   restart a server that runs without the profiler with it on (the flag or
                            variable of its version), profile, then put the original back; asks
                            first, showing the exact commands
  --restart-trace-dir DIR   where the restarted server writes traces on the host (default: a new
                            folder in the agent's cache there)
  --profiler-delay-iterations N   vLLM: engine steps skipped after /start_profile (steady state)
  --profiler-max-iterations N     vLLM: engine steps recorded at most
  --yes                     agree to the restart without asking
Output:
  --out FILE                also write the breakdown JSON to FILE
  --json                    print the breakdown JSON instead of tables

Example: infbench profile --url http://127.0.0.1:8000 --concurrency 8 --output-len 64`;

/** What the command parses: the target's flags, the agent's for this phase, and its own. */
const OPTIONS = {
  ...TARGET_OPTIONS,
  ...agentFlags('profile', WORKLOAD_FLAGS),
  ...agentFlags('profile', TRACE_FLAGS),
  ...agentFlags('profile', PROFILER_FLAGS),
  family: { type: 'string', multiple: true },
  'step-annotation': { type: 'string' },
  'restart-with-profiler': { type: 'boolean' },
  'restart-trace-dir': { type: 'string' },
  ...PROFILER_ITERATION_OPTIONS,
  yes: { type: 'boolean' },
  out: { type: 'string' },
  json: { type: 'boolean' },
} as const;

export const profileCommand: CliCommand = {
  name: 'profile',
  summary: "profiler phase: capture the server's torch traces and break each decode step down by kernel category",
  usage: USAGE,
  options: OPTIONS,
  async run(argv: string[]): Promise<number> {
    const parsed = parseCommandArgs('profile', {
      args: argv,
      options: OPTIONS,
      strict: true,
    });
    const v = parsed.values;
    const families = (v.family ?? []).map(kernelFamilyFlag);
    const options: ProfileOptions = {
      concurrency: agentValue('profile', 'concurrency', v),
      outputLen: agentValue('profile', 'outputLen', v),
      inputLen: agentValue('profile', 'inputLen', v),
      model: agentValue('profile', 'model', v),
      // As given: the agent resolves it on the target (a path of this machine means nothing over SSH).
      traceDir: agentValue('profile', 'traceDir', v),
      expectRanks: agentValue('profile', 'expectRanks', v),
      stopTimeoutS: agentValue('profile', 'stopTimeout', v),
      delaySteps: agentValue('profile', 'delaySteps', v),
      numSteps: agentValue('profile', 'numSteps', v),
      recordShapes: agentValue('profile', 'recordShapes', v),
      withStack: agentValue('profile', 'withStack', v),
      analysis: { extraFamilies: families.length ? families : undefined, stepAnnotation: v['step-annotation'] },
    };
    const profiler = agentValue('profile', 'profiler', v) ?? 'torch';
    const iterations = profilerIterations(v);
    if (profiler === 'nsys' && v['restart-with-profiler'])
      throw new UsageError(`${flagOf('profile', 'profiler')} nsys restarts the server under nsys itself: leave out --restart-with-profiler.`);
    // A bad --out is said before the run, not after it.
    if (v.out) checkOutPath(v.out);
    const opened = await openCliTarget(v, 'profile', 'Stopping the profile run…');
    try {
      warnPendingServerChange(opened);
      const ctx = cliPhaseContext(opened);
      let outcome;
      try {
        outcome =
          profiler === 'nsys'
            ? (
                await withNsysServer(
                  ctx,
                  'profile',
                  { nsys: agentValue('profile', 'nsys', v), consent: cliConsent(v.yes), onProgress: cliServerProgress, signal: opened.signal },
                  (server) => runProfilePhase(ctx, { ...options, nsys: server }),
                )
              ).value
            : v['restart-with-profiler']
              ? (
                  await withProfilerServer(
                    ctx,
                    'profile',
                    {
                      profilerDir: agentValueAs('server', 'profilerDir', 'restart-trace-dir', v) ?? 'auto',
                      ...iterations,
                      consent: cliConsent(v.yes),
                      onProgress: cliServerProgress,
                      signal: opened.signal,
                    },
                    () => runProfilePhase(ctx, options),
                  )
                ).value
              : await runProfilePhase(ctx, options);
      } catch (err) {
        if (!(err instanceof ServerControlError)) throw err;
        process.stderr.write(`infbench profile: ${err.message}\n`);
        return 1;
      }
      const b = outcome.breakdown;
      if (b) {
        if (v.out && !writeOutputFile('profile', v.out, `${JSON.stringify(b, null, 2)}\n`, outcome.run.dir)) return 1;
        if (v.json) process.stdout.write(`${JSON.stringify(outcome.nsys ? { ...b, nsys: outcome.nsys } : b, null, 2)}\n`);
        else {
          if (outcome.summary.simulated) process.stdout.write(SIMULATOR_BANNER);
          if (outcome.nsys) process.stdout.write(`${renderNsysText(outcome.nsys, { categories: false })}\n`);
          process.stdout.write(renderBreakdownText(b));
          process.stdout.write(`\nRun folder: ${outcome.run.dir}${v.out ? `\nBreakdown: ${v.out}` : ''}\n`);
        }
      }
      if (outcome.summary.errorCode === 'profiler_disabled')
        process.stderr.write(
          'Or let infbench restart the server with the profiler for this run and put the original back: add --restart-with-profiler (it asks first).\n',
        );
      return phaseExitCode('profile', outcome.summary.status, outcome.summary.reason);
    } finally {
      await opened.close();
    }
  },
};
