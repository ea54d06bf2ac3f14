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
