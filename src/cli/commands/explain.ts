import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { CliCommand, UsageError } from '../command';
import { stderrLogger } from '../cliLogger';
import { FindingsFile, findingsFlagPath } from '../findingsFile';
import { positiveWholeNumber } from '../flags';
import { Budget } from '../../core/explain/budget';
import { explainRuns, ExplainError, selectRuns } from '../../core/explain/campaign';
import { budgetFindings, budgetScopeLine, budgetTables } from '../../core/explain/findings';
import { MODEL_PRESETS } from '../../core/explain/modelStructure';
import { renderTextTable } from '../../shared/table';

const USAGE = `infbench explain — where the milliseconds of a decode step go, from the macro, micro and profile runs

Usage: infbench explain [options]

Builds one account of a decode step at the profiled batch size: measured (the macro run's TPOT at that
concurrency, the profiler's ms per step), explained (the profiler's time per kernel category) and
predicted (the micro run's all-reduce, GEMM and launch costs at the step's sizes), with the gap
between each pair. Runs of another target, server, model or server configuration (the server's flags
and environment, recorded with every run) are never set beside each other; newer runs left out are
named with why. Micro's runs are taken whatever configuration served meanwhile: micro measures the
GPUs in isolation at its own shapes. A phase
that has no run is named with the command that fills it in. Where the newest probe of the same server
read the served model's config.json, micro's model and the trace are checked against it, and nothing is
predicted from a model that was not served.

  --workspace DIR      where runs are kept (default: current folder)
  --target NAME        account this target's runs (default: the target of the newest macro or profile run)
  --runs ID,ID,ID      the runs to use, one per phase, all of one target, server and configuration (default:
                       the newest completed run of each phase that measured the same target, server URL,
                       model and configuration)
  --configuration NAME account this server configuration (its name, such as production or a configs
                       flag set's name, or its id) (default: the newest profile run's, else the newest
                       macro run's)
  --model NAME         model structure when the micro run names none (${Object.keys(MODEL_PRESETS).join(', ')})
  --batch N            the batch to account for when there is no profile (default 1)
  --findings FILE      also write the account into the findings document's "Where the milliseconds go"
  --json               print the budget as JSON

Example: infbench explain --workspace . --findings k25b6000bench1.md`;

export function budgetText(b: Budget): string {
  const runs = Object.entries(b.runs)
    .filter(([, id]) => id)
    .map(([phase, id]) => `${phase} ${id}`);
  const scope = budgetScopeLine(b);
  const out = [b.view.title, ...(scope ? [scope.replace(/\*\*|`/g, '')] : []), ...(b.modelLine ? [b.modelLine] : []), `Runs: ${runs.join(', ') || 'none'}`, ''];
  for (const r of b.readings) out.push(`• ${r}`);
  if (b.readings.length) out.push('');
  for (const t of budgetTables(b)) out.push(renderTextTable(t), '');
  for (const c of b.caveats) out.push(`Caveat: ${c}`);
  return `${out.join('\n').trimEnd()}\n`;
}

export const explainCommand: CliCommand = {
  name: 'explain',
  summary: "where a decode step's milliseconds go: macro, micro and profile runs reconciled",
  usage: USAGE,
  async run(argv) {
    let v: {
      workspace?: string;
      target?: string;
      runs?: string;
      configuration?: string;
      model?: string;
      batch?: string;
      findings?: string;
      json?: boolean;
    };
    try {
      v = parseArgs({
        args: argv,
        options: {
          workspace: { type: 'string' },
          target: { type: 'string' },
          runs: { type: 'string' },
          configuration: { type: 'string' },
          model: { type: 'string' },
          batch: { type: 'string' },
          findings: { type: 'string' },
          json: { type: 'boolean' },
        },
        allowPositionals: false,
      }).values;
    } catch (err) {
      throw new UsageError(`${(err as Error).message}\n\n${USAGE}`);
    }
    const workspace = resolve(v.workspace ?? '.');
    const model = v.model ? MODEL_PRESETS[v.model.toLowerCase()] : undefined;
    if (v.model && !model) throw new UsageError(`--model ${v.model}: no such preset; use one of ${Object.keys(MODEL_PRESETS).join(', ')}.`);
    const batch = positiveWholeNumber(v.batch, '--batch');
    let budget: Budget;
    try {
      const selection = selectRuns(
        workspace,
        v.runs
          ?.split(',')
          .map((s) => s.trim())
          .filter(Boolean),
        { target: v.target, configuration: v.configuration },
      );
      if (v.target && !selection.macro && !selection.micro && !selection.profile) {
        throw new ExplainError(
          `No completed macro, micro or profile run of target ${v.target} in ${workspace}/.inference-bench/runs. Run a phase on it first (infbench macro --target ${v.target}), or leave out --target.`,
        );
      }
      if (!selection.macro && !selection.micro && !selection.profile) {
        throw new ExplainError(
          `No completed macro, micro or profile run in ${workspace}/.inference-bench/runs. Run a phase first (infbench macro, infbench micro, infbench profile), or import one with infbench import-vllm FILE.json; pass --workspace if the runs are elsewhere.`,
        );
      }
      budget = explainRuns(selection, { model, batch });
    } catch (err) {
      if (err instanceof ExplainError) throw new UsageError(err.message);
      throw err;
    }
    if (v.findings) new FindingsFile(findingsFlagPath(workspace, v.findings), stderrLogger(), { workspace }).findings(budgetFindings(budget));
    if (v.json) process.stdout.write(`${JSON.stringify(budget, null, 2)}\n`);
    else process.stdout.write(budgetText(budget));
    return 0;
  },
};
