import { CliCommand, parseCommandArgs } from '../command';
import { agentFlags, agentFlagUsage } from '../agentFlags';
import { agentValue } from '../flags';
import { cliPhaseContext, openCliTarget, TARGET_OPTIONS, targetUsage } from '../targetOptions';
import { runClusterProbe } from '../../core/phases/probe';
import { probeSummaryLines } from '../../core/probe/tables';

// Handed to the agent: named, typed and explained by its option table (agent/infbench_agent/options.py).
const PROBE_FLAGS = ['timeout'] as const;

const USAGE = `infbench probe — what is on the target: Python and packages, GPUs and who holds them, the server

Usage: infbench probe [options]

${targetUsage()}
Probe:
${agentFlagUsage('probe', PROBE_FLAGS)}
Output:
  --json                    print the probe result as JSON

Example: infbench probe --target gpu-box --url http://127.0.0.1:8000`;

/** What the command parses: the target's flags, the agent's for this phase, and its own. */
const OPTIONS = { ...TARGET_OPTIONS, ...agentFlags('probe', PROBE_FLAGS), json: { type: 'boolean' } } as const;

export const probeCommand: CliCommand = {
  name: 'probe',
  summary: 'what the target has: Python and packages, GPUs and their processes, the server, its model and profiler',
  usage: USAGE,
  options: OPTIONS,
  async run(argv: string[]): Promise<number> {
    const parsed = parseCommandArgs('probe', {
      args: argv,
      options: OPTIONS,
      strict: true,
    });
    const v = parsed.values;
    const timeoutS = agentValue('probe', 'timeout', v);
    const opened = await openCliTarget(v, 'probe', 'Stopping the probe…');
    try {
      const outcomes = await runClusterProbe(cliPhaseContext(opened), { timeoutS });
      const failed = outcomes.filter((o) => !o.result);
      for (const o of failed) {
        process.stderr.write(`infbench probe: ${o.agent.status} on ${o.summary.target}: ${o.agent.reason ?? 'no result'}\nRun folder: ${o.run.dir}\n`);
      }
      const found = outcomes.filter((o) => o.result);
      // One host: its result as it was; a cluster: one result per host, the head first.
      if (v.json) process.stdout.write(`${JSON.stringify(opened.nodes ? found.map((o) => o.result) : found[0]?.result, null, 2)}\n`);
      else
        for (const [i, o] of found.entries()) {
          const label = opened.nodes?.[outcomes.indexOf(o)]?.transport.label ?? opened.transport.label;
          process.stdout.write(
            `${i ? '\n' : ''}${[`Target ${o.summary.target} (${label})`, ...probeSummaryLines(o.result!), `Run folder: ${o.run.dir}`].join('\n')}\n`,
          );
        }
      return failed.length ? 1 : 0;
    } finally {
      await opened.close();
    }
  },
};
