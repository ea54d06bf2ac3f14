import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { checkOutPath, CliCommand, UsageError, writeOutputFile } from '../command';
import { findingsFlagPath } from '../findingsFile';
import { campaignReportHtml, reportPathFor, reportRuns } from '../../core/findings/report';
import { readStoredRun } from '../../core/runs/storedRuns';
import { runsRoot } from '../../core/runs/runFolder';
import { RunSummary } from '../../shared/results';

const USAGE = `infbench report — the campaign as one self-contained HTML file to share

Usage: infbench report --findings FILE [options]

Renders the findings document (your words and the tool's tables) and lists the runs it quotes, in one
HTML file with no script and nothing loaded from elsewhere: it opens from a mail or a chat as it is.

  --findings FILE      the findings document, e.g. k25b6000bench1.md
  --workspace DIR      where the document and the runs are (default: current folder)
  --out FILE           the HTML file to write (default: the document's name with .html)

Example: infbench report --findings k25b6000bench1.md`;

export const reportCommand: CliCommand = {
  name: 'report',
  summary: 'the campaign as one self-contained HTML file: the findings document and its runs',
  usage: USAGE,
  async run(argv) {
    let v: { findings?: string; workspace?: string; out?: string };
    try {
      v = parseArgs({
        args: argv,
        options: { findings: { type: 'string' }, workspace: { type: 'string' }, out: { type: 'string' } },
        allowPositionals: false,
      }).values;
    } catch (err) {
      throw new UsageError(`${(err as Error).message}\n\n${USAGE}`);
    }
    if (!v.findings) throw new UsageError(`--findings FILE is needed: the document to report.\n\n${USAGE}`);
    const workspace = resolve(v.workspace ?? '.');
    const file = findingsFlagPath(workspace, v.findings);
    if (!existsSync(file))
      throw new UsageError(`--findings ${v.findings}: no such file in ${workspace}; run a phase with --findings first, or pass --workspace.`);
    const out = v.out ?? reportPathFor(file);
    checkOutPath(out);
    const text = readFileSync(file, 'utf8');
    const runs = reportRuns(await storedRuns(workspace), text);
    const html = campaignReportHtml(text, runs, { title: basename(file), madeAt: new Date() });
    if (!writeOutputFile('report', out, html)) return 1;
    process.stdout.write(`Report: ${out} (${runs.length} run${runs.length === 1 ? '' : 's'})\n`);
    return 0;
  },
};

/** Every stored run of the workspace, for the report to pick the ones its document quotes. */
async function storedRuns(workspace: string): Promise<RunSummary[]> {
  const root = runsRoot(workspace);
  if (!existsSync(root)) return [];
  return (await Promise.all(readdirSync(root).map((name) => readStoredRun(join(root, name))))).filter((r): r is RunSummary => r !== undefined);
}
