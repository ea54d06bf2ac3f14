// A result table as every consumer sees it: the findings document renders it as markdown, the
// results view as an accessible HTML table beside its chart, the CLI as aligned text.

export interface TableColumn {
  key: string;
  label: string;
  /** Numbers are right-aligned; text is left-aligned. */
  align?: 'left' | 'right';
  /** Digits after the decimal point for numbers; default 2. */
  digits?: number;
}

export type TableCell = string | number | null | undefined;

export interface ResultTable {
  id: string;
  title: string;
  columns: TableColumn[];
  rows: Record<string, TableCell>[];
  /** One line under the table: provenance, caveats ("simulator", "client CPU 40%"). */
  note?: string;
}

export function formatCell(value: TableCell, column: TableColumn): string {
  if (value === null || value === undefined || (typeof value === 'number' && !Number.isFinite(value))) return '—';
  if (typeof value === 'number') return value.toFixed(column.digits ?? 2);
  return value;
}

/** A byte count in binary units for cells and axes: 512 B, 1 KiB, 1.5 MiB. */
export function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${Number.isInteger(n) ? n : n.toFixed(1)} ${units[i]}`;
}

/**
 * A table as aligned plain text for terminals, without a trailing newline. Columns not marked
 * left are right-aligned (numbers); line ends are trimmed so a left-aligned last column leaves no padding.
 */
export function renderTextTable(table: ResultTable): string {
  const header = table.columns.map((c) => c.label);
  const body = table.rows.map((r) => table.columns.map((c) => formatCell(r[c.key], c)));
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((r) => r[i].length)));
  const right = table.columns.map((c) => c.align !== 'left');
  const line = (cells: string[]) =>
    cells
      .map((s, i) => (right[i] ? s.padStart(widths[i]) : s.padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  const out = [table.title, line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line)];
  if (table.note) out.push(table.note);
  return out.join('\n');
}
