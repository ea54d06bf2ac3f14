// Saving what a card shows through the host's save dialog: a canvas as PNG, a table as CSV.
import type { ResultTable } from '../../src/shared/table';
import { request } from './api';
import { tableToCsv } from './csv';

/** A file name's stem from an id (a chart's, a run's): only characters every file system takes. */
export const fileStem = (id: string): string => id.replace(/[^A-Za-z0-9._-]+/g, '-');

export async function savePng(canvas: HTMLCanvasElement, stem: string): Promise<void> {
  const dataUrl = canvas.toDataURL('image/png');
  await request((requestId) => ({ type: 'exportPng', requestId, fileName: `${fileStem(stem)}.png`, dataUrl }));
}

export async function saveCsv(table: ResultTable, stem: string): Promise<void> {
  await request((requestId) => ({ type: 'exportCsv', requestId, fileName: `${fileStem(stem)}.csv`, csv: tableToCsv(table) }));
}

/** Asks the host to save a macro run's requests as a Chrome trace: it builds the file from the run folder. */
export async function saveTrace(runId: string): Promise<void> {
  await request((requestId) => ({ type: 'exportTrace', requestId, runId }));
}
