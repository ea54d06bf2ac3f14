import { formatCell, ResultTable, TableCell, TableColumn } from '../../src/shared/table';

/** RFC 4180 CSV of a table, numbers at full precision so that nothing is lost on export. */
export function tableToCsv(table: ResultTable): string {
  const quote = (s: string) => (/[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s);
  const cell = (v: TableCell, c: TableColumn) =>
    typeof v === 'number' ? (Number.isFinite(v) ? String(v) : '') : v === null || v === undefined ? '' : quote(formatCell(v, c));
  return (
    [table.columns.map((c) => quote(c.label)).join(','), ...table.rows.map((r) => table.columns.map((c) => cell(r[c.key], c)).join(','))].join('\r\n') + '\r\n'
  );
}
