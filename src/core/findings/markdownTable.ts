import { formatCell, ResultTable, TableColumn } from '../../shared/table';
import { displayWidth, padEndTo, padStartTo } from './displayWidth';

/** A cell's text made safe for one table cell: pipes escaped, line breaks flattened. */
function escapeCell(text: string): string {
  return text
    .replace(/\\/g, '\\\\')
    .replace(/\|/g, '\\|')
    .replace(/\r\n?|\n/g, ' ');
}

function isRightAligned(column: TableColumn, values: unknown[]): boolean {
  if (column.align) return column.align === 'right';
  // Without an explicit alignment, text lines up on the left and numbers on the right; a column with
  // no values yet counts as numbers, so that it does not flip sides when its first number arrives.
  return !values.some((v) => typeof v === 'string' && v !== '');
}

/**
 * A GitHub-flavoured markdown table with its columns padded to line up in a plain-text editor
 * (by display width, so CJK names and emoji do not push the pipes out of line).
 */
export function renderMarkdownTable(table: ResultTable): string {
  const header = table.columns.map((c) => escapeCell(c.label));
  const body = table.rows.map((row) => table.columns.map((c) => escapeCell(formatCell(row[c.key], c))));
  const widths = header.map((h, i) => Math.max(3, displayWidth(h), ...body.map((r) => displayWidth(r[i]))));
  const right = table.columns.map((c) =>
    isRightAligned(
      c,
      table.rows.map((r) => r[c.key]),
    ),
  );
  const pad = (s: string, i: number) => (right[i] ? padStartTo(s, widths[i]) : padEndTo(s, widths[i]));
  const line = (cells: string[]) => `| ${cells.map(pad).join(' | ')} |`;
  const rule = `| ${widths.map((w, i) => (right[i] ? `${'-'.repeat(w - 1)}:` : '-'.repeat(w))).join(' | ')} |`;
  if (table.columns.length === 0) return '';
  return [line(header), rule, ...body.map(line)].join('\n');
}
