// Small DOM helpers. All text goes in through textContent: nothing from a run is ever parsed as HTML,
// and no style attribute is ever written (the page's policy forbids inline styles).
import { formatCell, ResultTable, TableCell } from '../../src/shared/table';
import type { TableOptions } from './specs';

export function el<K extends keyof HTMLElementTagNameMap>(tag: K, text?: string, className?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = text;
  if (className) e.className = className;
  return e;
}

export function button(label: string, title: string, onClick: () => void, icon?: string): HTMLButtonElement {
  const b = el('button', undefined, 'action');
  b.type = 'button';
  b.title = title;
  if (icon) b.append(el('span', undefined, `codicon codicon-${icon}`));
  b.append(el('span', label));
  b.addEventListener('click', onClick);
  return b;
}

function compareCells(a: TableCell, b: TableCell): number {
  const blank = (v: TableCell) => v === null || v === undefined || (typeof v === 'number' && !Number.isFinite(v));
  if (blank(a) || blank(b)) return blank(a) ? (blank(b) ? 0 : 1) : -1;
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  return String(a).localeCompare(String(b));
}

/** Renders a ResultTable as an accessible HTML table (caption, column headers, aria-sort). */
export function renderTable(table: ResultTable, options: TableOptions = {}): HTMLTableElement {
  const t = el('table', undefined, 'data-table');
  t.dataset.tableId = table.id;
  t.append(el('caption', table.title));
  const head = el('thead');
  const headRow = el('tr');
  head.append(headRow);
  const body = el('tbody');
  t.append(head, body);
  let sort = options.initialSort;

  const fill = () => {
    let rows = table.rows;
    if (sort) {
      const { key, descending } = sort;
      rows = [...rows].sort((a, b) => (descending ? -1 : 1) * compareCells(a[key], b[key]));
    }
    body.replaceChildren(
      ...rows.map((row) => {
        const tr = el('tr');
        for (const c of table.columns) {
          const text = formatCell(row[c.key], c);
          // Only long names (kernels) may wrap; short labels such as "rank 0" stay on one line.
          const td = el('td', text, c.align === 'left' ? (text.length > 40 ? 'left wrap' : 'left') : undefined);
          const title =
            options.cellTitle?.(row, c.key) ??
            (c.key === 'name' && typeof row.full_name === 'string' && row.full_name !== row.name ? row.full_name : undefined);
          if (title) td.title = title;
          tr.append(td);
        }
        if (options.isSelected?.(row)) {
          tr.classList.add('selected');
          tr.setAttribute('aria-selected', 'true');
        }
        if (options.onRowClick) {
          tr.tabIndex = 0;
          tr.classList.add('clickable');
          tr.addEventListener('click', () => options.onRowClick!(row));
          tr.addEventListener('keydown', (e) => {
            if (e.key === 'Enter' || e.key === ' ') {
              e.preventDefault();
              options.onRowClick!(row);
            }
          });
        }
        return tr;
      }),
    );
    headRow.replaceChildren(
      ...table.columns.map((c) => {
        const th = el('th', undefined, c.align === 'left' ? 'left' : undefined);
        th.scope = 'col';
        if (!options.sortable) {
          th.textContent = c.label;
          return th;
        }
        const active = sort?.key === c.key;
        th.setAttribute('aria-sort', active ? (sort!.descending ? 'descending' : 'ascending') : 'none');
        const b = el('button', `${c.label}${active ? (sort!.descending ? ' ▼' : ' ▲') : ''}`, 'sort');
        b.type = 'button';
        b.title = `Sort by ${c.label}`;
        b.addEventListener('click', () => {
          sort = { key: c.key, descending: active ? !sort!.descending : true };
          fill();
        });
        th.append(b);
        return th;
      }),
    );
  };
  fill();
  if (table.note) {
    const foot = el('tfoot');
    const row = el('tr');
    const cell = el('td', table.note, 'note');
    cell.colSpan = table.columns.length;
    row.append(cell);
    foot.append(row);
    t.append(foot);
  }
  return t;
}
