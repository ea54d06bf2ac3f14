import { FindingsUpdate } from './findingsUpdate';
import { ResultTable } from '../../shared/table';
import { renderMarkdownTable } from './markdownTable';
import { looksLikeMarker } from './markers';

/** Lines the tool writes to tell the user what it did (kept across later updates of the region). */
export const NOTE_PREFIX = '> Inference Bench: ';

export interface RenderOptions {
  /** Time of the update, for the provenance line. */
  now?: Date;
  /** Also write the phase section's heading (the user deleted it). */
  sectionHeading?: string;
  /** Notes to the user about the region itself (an edited or deleted earlier copy). */
  notes?: string[];
}

/** The line a run's block opens with once the run was found to have died mid-way (its process killed, out of memory). */
export function runDiedLine(reason: string): string {
  return `⚠ **This run died before it finished**: ${reason}`;
}

/** Generated text must never read back as a marker; `&lt;` renders the same to a reader. */
function safe(line: string): string {
  return looksLikeMarker(line) ? line.replace(/<!--/g, '&lt;!--') : line;
}

function splitProse(text: string): string[] {
  return text.split(/\r\n?|\n/).map(safe);
}

/** A table as it stands in a findings document: bold title, aligned table, italic note. */
export function renderTableBlock(table: ResultTable): string[] {
  const out: string[] = [];
  if (table.title) out.push(...splitProse(`**${table.title}**`), '');
  const body = renderMarkdownTable(table);
  if (body) out.push(...body.split('\n').map(safe));
  else out.push('_(no columns)_');
  if (table.note) out.push('', ...splitProse(`_${table.note}_`));
  return out;
}

function utcStamp(now: Date): string {
  return `${now.toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

/**
 * The content of a tool region for one update, as lines (joined by the document's line break):
 * a blank line first and last, so that a table never runs into a marker and a marker never runs
 * into the user's paragraph.
 */
export function renderUpdateLines(update: FindingsUpdate, options: RenderOptions = {}): string[] {
  const out: string[] = [''];
  if (options.sectionHeading) out.push(`## ${options.sectionHeading}`, '');
  if (update.heading.trim()) out.push(...splitProse(`### ${update.heading.trim()}`), '');
  for (const note of options.notes ?? []) out.push(safe(note), '');
  for (const line of update.lines) {
    if (!line.trim()) continue;
    out.push(...splitProse(line), '');
  }
  for (const table of update.tables) out.push(...renderTableBlock(table), '');
  if (options.now) out.push(`<sub>Written by Inference Bench at ${utcStamp(options.now)} · section \`${update.sectionId.replace(/`/g, "'")}\`</sub>`, '');
  return out;
}

/** The region content as text, every line ended by `eol`. */
export function renderUpdate(update: FindingsUpdate, eol: string, options: RenderOptions = {}): string {
  return renderUpdateLines(update, options)
    .map((l) => l + eol)
    .join('');
}
