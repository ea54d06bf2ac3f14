// The campaign as one self-contained HTML file to share: the findings document rendered (the user's
// words and the tool's tables), then the runs it drew on. No script, no outside resource: it opens
// from a mail attachment or a chat, and its Content-Security-Policy forbids loading anything.
import MarkdownIt from 'markdown-it';
import { escapeHtml } from '../../shared/html';
import { hasResults, RunSummary } from '../../shared/results';
import { chartLevels, ChartLevel, macroChartsSvg } from './reportCharts';
import { paretoPictures } from './reportPareto';
import { gpusOfCommand, ParetoPoint, paretoPoint } from '../../shared/pareto';

export interface ReportRun {
  id: string;
  phase: string;
  target: string;
  startedAt: string;
  status: string;
  simulated?: boolean;
  headline?: string;
  /** A macro run's levels, for its charts. */
  levels?: ChartLevel[];
  /** A macro run's whole levels as Pareto points (its configuration's name for the series). */
  pareto?: ParetoPoint[];
  /** The configurations comparison the run was part of, to draw its front across configurations. */
  comparison?: string;
}

// The tool's own note under each section it writes (render.ts): `<sub>Written by Inference Bench at …</sub>`
// on a line of its own. Markdown viewers show it as small text; the report does too, its inside
// rendered as markdown with HTML still off.
const TOOL_NOTE = /^<sub>(.+)<\/sub>\s*$/;

function toolNote(state: MarkdownIt.StateBlock, startLine: number, _endLine: number, silent: boolean): boolean {
  // Four spaces in: a code block, shown as written.
  if (state.sCount[startLine] - state.blkIndent >= 4) return false;
  const match = TOOL_NOTE.exec(state.src.slice(state.bMarks[startLine] + state.tShift[startLine], state.eMarks[startLine]));
  if (!match) return false;
  if (silent) return true;
  state.push('tool_note_open', 'p', 1).map = [startLine, startLine + 1];
  const inline = state.push('inline', '', 0);
  inline.content = match[1];
  inline.map = [startLine, startLine + 1];
  inline.children = [];
  state.push('tool_note_close', 'p', -1);
  state.line = startLine + 1;
  return true;
}

// html: false escapes any HTML the document holds, so nothing in it runs or loads.
const markdown = new MarkdownIt({ html: false, linkify: false, typographer: false });
markdown.block.ruler.before('paragraph', 'tool_note', toolNote, { alt: ['paragraph'] });
markdown.renderer.rules.tool_note_open = () => '<p class="tool-note"><small>';
markdown.renderer.rules.tool_note_close = () => '</small></p>\n';

const STYLE = `
:root { color-scheme: light dark; --fg: #1f2328; --bg: #ffffff; --muted: #59636e; --rule: #d1d9e0; --head: #f6f8fa; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --bg: #0d1117; --muted: #9198a1; --rule: #3d444d; --head: #151b23; } }
body { font: 15px/1.55 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); max-width: 72rem; margin: 2rem auto; padding: 0 1.5rem; }
h1, h2, h3 { line-height: 1.25; } h2 { border-bottom: 1px solid var(--rule); padding-bottom: .3rem; margin-top: 2rem; }
table { border-collapse: collapse; margin: 1rem 0; font-variant-numeric: tabular-nums; display: block; overflow-x: auto; }
th, td { border: 1px solid var(--rule); padding: .3rem .6rem; text-align: left; } th { background: var(--head); }
td:not(:first-child) { text-align: right; }
code { font: 13px ui-monospace, SFMono-Regular, Menlo, monospace; } pre { overflow-x: auto; padding: .8rem; background: var(--head); }
footer, .muted, .tool-note { color: var(--muted); font-size: 13px; }
.charts { display: flex; flex-wrap: wrap; gap: 1rem; margin: .5rem 0 1.5rem; }
.chart { max-width: 100%; height: auto; border: 1px solid var(--rule); }
.chart text { fill: var(--fg); font: 11px system-ui, sans-serif; } .chart .tick { fill: var(--muted); } .chart .chart-title { font-size: 12px; font-weight: 600; }
.chart .grid { stroke: var(--rule); stroke-width: 1; }
`;

// A file on its own: its one <style> block and markdown-it's column alignment need inline styles.
const REPORT_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";

/**
 * The report as a preview inside the editor shows it (a webview, in desktop VS Code and in a browser
 * alike): the same page, its policy tightened to the page's one style block by nonce, so that no
 * inline style attribute applies and nothing runs or loads.
 */
export function reportPreviewHtml(html: string, nonce: string): string {
  if (!/^[A-Za-z0-9+/=]+$/.test(nonce)) throw new Error('A nonce is base64.');
  return html
    .replace(`content="${REPORT_CSP}"`, `content="default-src 'none'; style-src 'nonce-${nonce}'; img-src data:"`)
    .replace('<style>', `<style nonce="${nonce}">`);
}

// The tool's region markers (markers.ts): HTML comments that would show as text once escaped.
const MARKER = /<!--\s*inference-bench:(begin|end)\b[^>]*-->\s*$/;

/** The findings document without the tool's region markers; a line that held only a marker goes. */
export function withoutMarkers(text: string): string {
  return text
    .split(/\r?\n/)
    .flatMap((line) => {
      if (!MARKER.test(line)) return [line];
      const rest = line.replace(MARKER, '');
      return rest.trim() ? [rest] : [];
    })
    .join('\n');
}

/** The report's HTML: the findings rendered, the macro runs' charts, a table of the runs, then when and by what it was made. */
export function campaignReportHtml(findings: string, runs: readonly ReportRun[], options: { title: string; madeAt: Date }): string {
  const body = markdown.render(withoutMarkers(findings));
  const rows = runs
    .map(
      (r) =>
        `<tr><td><code>${escapeHtml(r.id)}</code></td><td>${escapeHtml(r.phase)}</td><td>${escapeHtml(r.target)}${r.simulated ? ' (simulator)' : ''}</td>` +
        `<td>${escapeHtml(r.status)}</td><td>${escapeHtml(r.headline ?? '')}</td></tr>`,
    )
    .join('\n');
  const charted = runs.filter((r) => r.phase === 'macro' && r.levels?.length);
  const charts = charted.length
    ? `<h2>Charts</h2>\n${charted
        .map(
          (r) =>
            `<h3>Macro run <code>${escapeHtml(r.id)}</code> on ${escapeHtml(r.target)}${r.simulated ? ' (simulator)' : ''}</h3>\n` +
            `<div class="charts">\n${macroChartsSvg(r.levels!)}\n${paretoPictures(r.pareto ?? [], 'over the levels')}\n</div>`,
        )
        .join('\n')}${comparisonPictures(runs)}`
    : '';
  const runsTable = runs.length
    ? `<h2>Runs</h2>\n<table><thead><tr><th>Run</th><th>Phase</th><th>Target</th><th>Status</th><th>Headline</th></tr></thead>\n<tbody>\n${rows}\n</tbody></table>`
    : '';
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${REPORT_CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(options.title)}</title>
<style>${STYLE}</style>
</head>
<body>
<main>
${body}
${charts}
${runsTable}
</main>
<footer>Made by Inference Bench on ${escapeHtml(options.madeAt.toISOString())} from ${escapeHtml(options.title)}.</footer>
</body>
</html>
`;
}

/** The runs a document quotes by id (every run with results when it quotes none), oldest first. */
export function reportRuns(all: readonly RunSummary[], findings: string): ReportRun[] {
  const measured = all.filter((r) => hasResults(r));
  const quoted = measured.filter((r) => findings.includes(r.id));
  return (quoted.length ? quoted : measured)
    .slice()
    .sort((a, b) => a.startedAt.localeCompare(b.startedAt))
    .map((r) => ({
      id: r.id,
      phase: r.phase,
      target: r.target,
      startedAt: r.startedAt,
      status: r.status,
      simulated: r.simulated,
      headline: r.headline,
      levels: r.macro?.levels.length ? chartLevels(r.macro.levels) : undefined,
      pareto: r.macro?.levels.length ? paretoPointsOf(r) : undefined,
      comparison: r.configuration?.comparison,
    }));
}

function paretoPointsOf(r: RunSummary): ParetoPoint[] {
  const series = r.configuration?.name ?? r.id;
  const gpus = gpusOfCommand(r.configuration?.argv);
  return (r.macro?.levels ?? []).map((l) => paretoPoint(series, l, gpus)).filter((p): p is ParetoPoint => p !== undefined);
}

/** One Pareto picture per configurations comparison: every configuration's every load, the front across them. */
function comparisonPictures(runs: readonly ReportRun[]): string {
  const byComparison = new Map<string, ReportRun[]>();
  for (const r of runs) if (r.comparison && r.pareto?.length) byComparison.set(r.comparison, [...(byComparison.get(r.comparison) ?? []), r]);
  return [...byComparison.entries()]
    .filter(([, compared]) => compared.length > 1)
    .map(
      ([id, compared]) =>
        `\n<h3>Configurations compared <code>${escapeHtml(id)}</code></h3>\n<div class="charts">\n${paretoPictures(
          compared.flatMap((r) => r.pareto ?? []),
          'across the configurations',
        )}\n</div>`,
    )
    .join('');
}

/** Where a findings document's report goes: beside it, with .html for its extension. */
export function reportPathFor(findingsPath: string): string {
  return `${findingsPath.replace(/\.(md|markdown)$/i, '')}.html`;
}
