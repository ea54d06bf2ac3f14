import { checkOutPath, CliCommand, parseCommandArgs, SIMULATOR_BANNER, UsageError, writeOutputFile } from '../command';
import { agentFlags, agentFlagUsage } from '../agentFlags';
import { cliPhaseContext, openCliTarget, TARGET_OPTIONS, targetUsage } from '../targetOptions';
import { MacroOptionsError } from '../../core/macro/options';
import { levelLine } from '../../core/macro/tables';
import { parseConfiguration, ServerConfiguration } from '../../core/server/configurations';
import { configurationsTable, runConfigurationsCompared } from '../../core/server/configurationsCompared';
import { ServerControlError } from '../../core/server/serverChange';
import { renderTextTable } from '../../shared/table';
import { macroOptionsFromFlags } from './macro';
import { cliConsent, cliServerProgress, warnPendingServerChange } from './server';

// The macro workload each configuration is measured by, handed to the agent as infbench macro hands it.
const WORKLOAD_FLAGS = [
  'concurrency',
  'request-rate',
  'requests',
  'input-len',
  'output-len',
  'warmup',
  'seed',
  'trials',
  'slo',
  'search',
  'search-max',
] as const;

const USAGE = `infbench configs — the same server under other flag sets, each measured by the same workload

Usage: infbench configs --config "NAME: FLAGS" --config "NAME: FLAGS" [...] [options]

Adopts the server that answers at the target's URL, shows every configuration's exact command and
asks once; then starts the server with each configuration in turn (no restart for one that is the
server as it runs), measures it with the same macro workload, and puts the original back at the end
(also on Ctrl-C or a failure). A configuration whose start fails is said, with the server's last log
lines, and the next one goes on. The first configuration is the baseline of the table.

FLAGS edit the server's command line: "--flag VALUE" or "--flag=VALUE" sets a flag (replacing the
value it runs with), "--switch" adds a switch, "!--flag" removes a flag (and its value) it runs with.
Empty FLAGS is the server as it runs. --port and --host cannot change.

${targetUsage()}
Configurations:
  --config "NAME: FLAGS"    one configuration (repeatable, at least two), for example
                            --config "tp8:" --config "tp4pp2: --tensor-parallel-size 4 --pipeline-parallel-size 2"
  --yes                     agree to the restarts without asking (needed where there is no terminal)
Workload (as infbench macro):
${agentFlagUsage('macro', WORKLOAD_FLAGS, {
  concurrency: 'closed-loop levels, comma-separated (default 1,8,32,64)',
  seed: 'prompt seed, the same for every configuration; default random',
})}
Output:
  --out FILE                write the comparison (each configuration's command, run and levels) as JSON
  --json                    print that JSON instead of the table

Example: infbench configs --target gpu-box --config "tp8:" --config "no-custom-ar: --disable-custom-all-reduce" --concurrency 1,16`;

/** What the command parses: the target's flags, the agent's for the workload, and its own. */
const OPTIONS = {
  ...TARGET_OPTIONS,
  config: { type: 'string', multiple: true },
  yes: { type: 'boolean' },
  ...agentFlags('macro', WORKLOAD_FLAGS),
  out: { type: 'string' },
  json: { type: 'boolean' },
} as const;

export const configsCommand: CliCommand = {
  name: 'configs',
  summary: 'server configurations compared: restart with each flag set (with consent), same macro workload, original put back',
  usage: USAGE,
  options: OPTIONS,
  async run(argv: string[]): Promise<number> {
    const parsed = parseCommandArgs('configs', {
      args: argv,
      options: OPTIONS,
      strict: true,
    });
    const v = parsed.values;
    let configs: ServerConfiguration[];
    try {
      configs = (v.config ?? []).map(parseConfiguration);
    } catch (err) {
      throw new UsageError(`--config ${err instanceof Error ? err.message : String(err)}`);
    }
    if (configs.length < 2) throw new UsageError('Give at least two --config "NAME: FLAGS" (the first is the baseline; empty FLAGS is the server as it runs).');
    const { config: _configs, yes: _yes, out: _out, json: _json, ...workload } = v;
    let macro;
    try {
      macro = macroOptionsFromFlags(workload);
    } catch (err) {
      if (err instanceof MacroOptionsError) throw new UsageError(err.message);
      throw err;
    }
    if (v.out) checkOutPath(v.out);
    const opened = await openCliTarget(v, 'macro', 'Stopping: the configurations measured so far are kept, and the original server is put back…');
    try {
      warnPendingServerChange(opened);
      let printed = 0;
      const ctx = cliPhaseContext(opened, (run) => {
        const levels = run.macro?.levels.filter((l) => !l.partial || l.cut) ?? [];
        if (levels.length < printed) printed = 0;
        for (; printed < levels.length; printed++) process.stderr.write(`${levelLine(levels[printed])}\n`);
      });
      let compared;
      try {
        compared = await runConfigurationsCompared(ctx, configs, macro, { consent: cliConsent(v.yes), onProgress: cliServerProgress, signal: opened.signal });
      } catch (err) {
        if (!(err instanceof ServerControlError)) throw err;
        process.stderr.write(`infbench configs: ${err.message}\n`);
        return 1;
      }
      const json = JSON.stringify(compared, null, 2);
      const outWritten = !v.out || writeOutputFile('configs', v.out, json);
      if (v.json) process.stdout.write(`${json}\n`);
      else {
        if (compared.configurations.some((c) => c.simulated)) process.stdout.write(SIMULATOR_BANNER);
        process.stdout.write(`${renderTextTable(configurationsTable(compared))}\n`);
        for (const c of compared.configurations)
          process.stdout.write(
            `\n${c.name} (configuration ${c.id}): ${c.command}${c.runId ? `\n  run ${c.runId}` : ''}${c.error ? `\n  not measured: ${c.error}` : ''}${c.slo ? `\n  SLO: ${c.slo.line}` : ''}`,
          );
        process.stdout.write(`\n\nThe original recipe and every step: ${compared.changeDir}\n`);
      }
      if (opened.signal.aborted) return 130;
      const measured = compared.configurations.filter((c) => c.status === 'completed').length;
      return measured === configs.length && outWritten ? 0 : 1;
    } finally {
      await opened.close();
    }
  },
};
