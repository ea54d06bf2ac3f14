import { CliCommand, parseCommandArgs } from '../command';
import { cliPhaseContext, openCliTarget, TARGET_OPTIONS, targetUsage } from '../targetOptions';
import { probeSummaryLines, runProbePhase } from '../../core/phases/probe';

const USAGE = `infbench probe — what is on the target: Python and packages, GPUs and who holds them, the server

Usage: infbench probe [options]

${targetUsage()}
Output:
  --json                    print the probe result as JSON

Example: infbench probe --target gpu-box --url http://127.0.0.1:8000`;

export const probeCommand: CliCommand = {
  name: 'probe',
  summary: 'what the target has: Python and packages, GPUs and their processes, the server, its model and profiler',
  usage: USAGE,
  async run(argv: string[]): Promise<number> {
    const parsed = parseCommandArgs('probe', {
      args: argv,
      options: { ...TARGET_OPTIONS, timeout: { type: 'string' }, json: { type: 'boolean' } },
      strict: true,
    });
    const v = parsed.values;
    const opened = await openCliTarget(v, 'Stopping the probe…');
    const { target, transport } = opened;
    try {
      const outcome = await runProbePhase(cliPhaseContext(opened), { timeoutS: v.timeout ? Number(v.timeout) : undefined });
      if (!outcome.result) {
        process.stderr.write(
          `infbench probe: ${outcome.agent.status} on ${transport.label}: ${outcome.agent.reason ?? 'no result'}\nRun folder: ${outcome.run.dir}\n`,
        );
        return 1;
      }
      if (v.json) process.stdout.write(`${JSON.stringify(outcome.result, null, 2)}\n`);
      else
        process.stdout.write(
          `${[`Target ${target.name} (${transport.label})`, ...probeSummaryLines(outcome.result), `Run folder: ${outcome.run.dir}`].join('\n')}\n`,
        );
      return 0;
    } finally {
      await opened.close();
    }
  },
};
