import { formatCell, ResultTable } from '../../shared/table';

/** A GitHub-flavoured markdown table with its columns padded to line up in a plain-text editor. */
export function renderMarkdownTable(table: ResultTable): string {
  const escape = (s: string) => s.replace(/\|/g, '\\|').replace(/\r?\n/g, ' ');
  const header = table.columns.map((c) => escape(c.label));
  const body = table.rows.map((row) => table.columns.map((c) => escape(formatCell(row[c.key], c))));
  const widths = header.map((h, i) => Math.max(3, h.length, ...body.map((r) => r[i].length)));
  const right = table.columns.map((c) => (c.align ?? 'right') === 'right');
  const pad = (s: string, i: number) => (right[i] ? s.padStart(widths[i]) : s.padEnd(widths[i]));
  const line = (cells: string[]) => `| ${cells.map(pad).join(' | ')} |`;
  const rule = `| ${widths.map((w, i) => (right[i] ? `${'-'.repeat(w - 1)}:` : '-'.repeat(w))).join(' | ')} |`;
  return [line(header), rule, ...body.map(line)].join('\n');
}
