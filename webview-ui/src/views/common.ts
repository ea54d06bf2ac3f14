import type { RunSummary } from '../../../src/shared/results';

export { finite } from '../../../src/shared/finite';

/** Log scale when the values are all positive and span more than a decade (a 1..256 sweep). */
export function wantsLog(values: number[]): boolean {
  const positive = values.filter((v) => v > 0);
  if (positive.length !== values.length || positive.length < 3) return false;
  return Math.max(...positive) / Math.min(...positive) > 10;
}

// The compared run's series take the palette's second half, so that A and B differ in colour as well as
// in dash (a dash alone is lost on a thin line or a point).
const COMPARED_COLOURS = 8;

/** The runs drawn: the selected one, then the compared one if any, each with its A/B tag and where its colours start. */
export function drawnRuns(run: RunSummary, compare?: RunSummary): { run: RunSummary; tag: string; dashed: boolean; colours: number }[] {
  const out = [{ run, tag: 'A', dashed: false, colours: 0 }];
  if (compare) out.push({ run: compare, tag: 'B', dashed: true, colours: COMPARED_COLOURS });
  return out;
}

export function seriesLabel(label: string, tag: string, comparing: boolean): string {
  return comparing ? `${tag}: ${label}` : label;
}
