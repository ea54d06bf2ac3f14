import MarkdownIt from 'markdown-it';
import { ResultTable } from '../../shared/table';
import { parseRegions } from './markers';

/** A result table with the words a quick pick shows for it. */
export interface LabeledTable {
  label: string;
  /** Where it came from (run, section), shown under the label. */
  detail?: string;
  table: ResultTable;
}

const md = new MarkdownIt({ html: true });

/**
 * The result tables the tool has written into a findings document (its intact regions), read back
 * as ResultTables so that they can be inserted again elsewhere: the document is where results
 * survive a reload, whatever happened to the run folders.
 */
export function tablesInDocument(text: string): LabeledTable[] {
  const out: LabeledTable[] = [];
  for (const region of parseRegions(text).regions) {
    if (!region.intact) continue;
    const tokens = md.parse(text.slice(region.contentStart, region.contentEnd), {});
    let heading = region.id;
    let lastParagraph = '';
    for (let i = 0; i < tokens.length; i++) {
      const t = tokens[i];
      if (t.type === 'heading_open' && t.tag === 'h3') heading = tokens[i + 1].content.trim();
      if (t.type === 'paragraph_open') lastParagraph = tokens[i + 1].content.trim();
      if (t.type !== 'table_open') continue;
      const { table, next } = readTable(tokens, i, `${region.id}-${out.length}`);
      i = next;
      const bold = /^\*\*(.+)\*\*$/.exec(lastParagraph);
      table.title = bold ? bold[1] : heading;
      const after = tokens[i + 1]?.type === 'paragraph_open' ? tokens[i + 2].content.trim() : '';
      const italic = /^_(.+)_$/.exec(after);
      if (italic) table.note = italic[1];
      out.push({ label: table.title, detail: `${heading} · ${region.id}`, table });
      lastParagraph = '';
    }
  }
  return out;
}

type Token = ReturnType<MarkdownIt['parse']>[number];

function readTable(tokens: Token[], start: number, id: string): { table: ResultTable; next: number } {
  const table: ResultTable = { id, title: '', columns: [], rows: [] };
  let row: string[] | undefined;
  let inHead = false;
  let i = start;
  for (; i < tokens.length && tokens[i].type !== 'table_close'; i++) {
    const t = tokens[i];
    if (t.type === 'thead_open') inHead = true;
    if (t.type === 'thead_close') inHead = false;
    if (t.type === 'tr_open') row = [];
    if ((t.type === 'th_open' || t.type === 'td_open') && row) {
      // Undo the escapes the renderer adds (markdown-it has already taken the pipes' backslashes).
      const cell = tokens[i + 1]?.type === 'inline' ? tokens[i + 1].content.replace(/\\([\\|])/g, '$1') : '';
      row.push(cell);
      if (inHead) {
        const right = /text-align:\s*right/.test(t.attrGet('style') ?? '');
        table.columns.push({ key: `c${row.length - 1}`, label: cell, align: right ? 'right' : 'left' });
      }
    }
    if (t.type === 'tr_close' && row && !inHead) {
      const cells = row;
      table.rows.push(Object.fromEntries(table.columns.map((c, k) => [c.key, cells[k] ?? ''])));
    }
  }
  return { table, next: i };
}
