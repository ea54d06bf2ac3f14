import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { checkOutPath, CliCommand, UsageError, writeOutputFile } from '../command';
import { findingsFlagPath } from '../findingsFile';
import { campaignReportHtml, ReportRun } from '../../core/findings/report';
import { readStoredRun } from '../../core/runs/storedRuns';
import { runsRoot } from '../../core/runs/runFolder';
import { hasResults, RunSummary } from '../../shared/results';

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
    const out = v.out ?? file.replace(/\.(md|markdown)$/i, '') + '.html';
    checkOutPath(out);
    const text = readFileSync(file, 'utf8');
    const runs = await quotedRuns(workspace, text);
    const html = campaignReportHtml(text, runs, { title: basename(file), madeAt: new Date() });
    if (!writeOutputFile('report', out, html)) return 1;
    process.stdout.write(`Report: ${out} (${runs.length} run${runs.length === 1 ? '' : 's'})\n`);
    return 0;
  },
};

/** The runs the document quotes by id (all runs with results when it quotes none), oldest first. */
async function quotedRuns(workspace: string, text: string): Promise<ReportRun[]> {
  const root = runsRoot(workspace);
  if (!existsSync(root)) return [];
  const all = (await Promise.all(readdirSync(root).map((name) => readStoredRun(join(root, name))))).filter(
    (r): r is RunSummary => r !== undefined && hasResults(r),
  );
  const quoted = all.filter((r) => text.includes(r.id));
  return (quoted.length ? quoted : all)
    .sort((a, b) => a.startedAt.localeCompare(b.startedAt))
    .map((r) => ({ id: r.id, phase: r.phase, target: r.target, startedAt: r.startedAt, status: r.status, simulated: r.simulated, headline: r.headline }));
}
