import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { CliCommand, UsageError } from '../command';
import { compareRunFolders, CompareError, findRun } from '../../core/compare/compareRuns';
import { Comparison } from '../../core/compare/types';
import { renderTextTable } from '../../shared/table';

const USAGE = `infbench compare — two runs of the same phase side by side, with the differences that matter flagged

Usage: infbench compare RUN_A RUN_B [options]

RUN_A and RUN_B are run folders (a path, a folder name under .inference-bench/runs/, or a unique start
of one). Macro: throughput at each concurrency and the TTFT/TPOT/ITL/E2EL statistics, flagged beyond
3 standard errors of the difference (from each run's std and its requests over the concurrency) and 1%. Profile: the
step, each category's ms and share, kernels that appeared or vanished. Micro: each GEMM shape and M,
all-reduce size and launch mode, flagged beyond 5% and 1 us. A \`vllm bench serve\` result imported
with \`infbench import-vllm\` is a macro run like ours. Runs of two server configurations (each run
records the server's flags and environment it measured) are compared, but said first: every difference
then includes the configuration's change.

  --workspace DIR   where runs are kept (default: current folder)
  --all             print every quantity compared, not only the flagged ones
  --json            print the comparison as JSON

Example: infbench compare 2026-12-01_05-15-00-000-macro 2026-12-01_06-02-11-482-macro`;

export function comparisonText(c: Comparison, all: boolean): string {
  const out = [`A: ${c.a.label}`, `B: ${c.b.label}`, ''];
  // Runs of two server configurations: said before anything else, as every difference includes that change.
  if (c.configurations) out.push(`⚠ ${c.configurations}`, '');
  const summary = c.summary.filter((s) => s !== c.configurations);
  // A flagged change is marked; the one line saying there is none (or nothing to compare) is not.
  const flagged = c.differences.some((d) => d.flagged) || summary.length > 1;
  for (const s of summary) out.push(`${flagged ? '▲ ' : ''}${s}`);
  out.push('');
  for (const t of c.tables) {
    const rows = all ? t.rows : t.rows.filter((r) => r.flag !== '');
    if (!rows.length) continue;
    out.push(renderTextTable({ ...t, rows }), '');
  }
  if (!all && c.differences.some((d) => !d.flagged))
    out.push(`(${c.differences.filter((d) => !d.flagged).length} quantities within noise not shown; --all shows them.)`);
  for (const u of c.unmatched) out.push(`Not compared: ${u}`);
  return `${out.join('\n').trimEnd()}\n`;
}

export const compareCommand: CliCommand = {
  name: 'compare',
  summary: 'compare two runs of one phase, flagging differences beyond noise',
  usage: USAGE,
  async run(argv) {
    let parsed: { values: { workspace?: string; all?: boolean; json?: boolean }; positionals: string[] };
    try {
      parsed = parseArgs({
        args: argv,
        options: { workspace: { type: 'string' }, all: { type: 'boolean' }, json: { type: 'boolean' } },
        allowPositionals: true,
      });
    } catch (err) {
      throw new UsageError(`${(err as Error).message}\n\n${USAGE}`);
    }
    if (parsed.positionals.length !== 2) throw new UsageError(`compare takes two runs; got ${parsed.positionals.length}.\n\n${USAGE}`);
    const workspace = resolve(parsed.values.workspace ?? '.');
    let comparison: Comparison;
    try {
      const [a, b] = parsed.positionals.map((ref) => findRun(workspace, ref));
      comparison = compareRunFolders(a, b);
    } catch (err) {
      if (err instanceof CompareError) throw new UsageError(err.message);
      throw err;
    }
    process.stdout.write(parsed.values.json ? `${JSON.stringify(comparison, null, 2)}\n` : comparisonText(comparison, Boolean(parsed.values.all)));
    return 0;
  },
};
