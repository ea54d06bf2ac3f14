// The full serving table of a macro run, kept as markdown in its run folder: the findings document
// quotes a few figures per level (quotedFiguresTable) and points here for the rest.
import { join } from 'node:path';
import { failureTable, levelTable } from '../macro/tables';
import { trialsTable } from '../macro/trials';
import { writeAtomic } from '../runs/runFolder';
import { MacroLevelSummary } from '../../shared/results';
import { ResultTable } from '../../shared/table';
import { renderTableBlock } from './render';

export const SERVING_TABLE_FILE = 'serving-table.md';

export function servingTableMarkdown(levels: readonly MacroLevelSummary[], note?: string): string {
  const tables = [levelTable(levels, note), trialsTable(levels), failureTable(levels)].filter((t): t is ResultTable => !!t);
  return `${tables.map((t) => renderTableBlock(t).join('\n')).join('\n\n')}\n`;
}

/** Writes serving-table.md into the run folder; returns its path. */
export function writeServingTable(runDir: string, levels: readonly MacroLevelSummary[], note?: string): string {
  const path = join(runDir, SERVING_TABLE_FILE);
  writeAtomic(path, servingTableMarkdown(levels, note));
  return path;
}
