// What a chart shows, apart from how it is drawn: built from a RunSummary by pure functions
// (views/*.ts) that the unit tests run in plain Node.
import type { ResultTable, TableCell } from '../../src/shared/table';

export interface TableOptions {
  /** Column headers become buttons that sort the rows. */
  sortable?: boolean;
  /** Called when a row is activated (click or Enter); rows become focusable. */
  onRowClick?: (row: Record<string, TableCell>) => void;
  initialSort?: { key: string; descending: boolean };
  /** A tooltip for a cell (the full name behind a shortened one). */
  cellTitle?: (row: Record<string, TableCell>, key: string) => string | undefined;
  /** Marks the row shown in detail elsewhere (aria-selected). */
  isSelected?: (row: Record<string, TableCell>) => boolean;
}

export interface Series {
  label: string;
  points: { x: number; y: number }[];
  /** Series from the compared run are drawn dashed. */
  dashed?: boolean;
  /** A reference line (a GPU's peak): drawn thin, no points. */
  reference?: boolean;
  /** Colour index into the theme's palette; a compared run's series start at the palette's second half. */
  colorIndex?: number;
  /** Points only (per-request scatter). */
  scatter?: boolean;
  /**
   * Flagged levels, drawn as large hollow markers without a line in the warning colour: `cut` a level
   * cut short (crossed), `limited` one the load generator itself limited (a triangle).
   */
  marker?: 'cut' | 'limited';
}

export interface LineChartSpec {
  kind: 'line';
  id: string;
  title: string;
  xLabel: string;
  yLabel: string;
  xLog?: boolean;
  yLog?: boolean;
  /** Ticks exactly at these x values (the concurrencies of a sweep), instead of chart.js's choice. */
  xTicks?: number[];
  /** How x tick labels read: plain numbers, or bytes as KiB/MiB. */
  xFormat?: 'number' | 'bytes';
  series: Series[];
  table: ResultTable;
  tableOptions?: TableOptions;
}

export interface StackedBarSpec {
  kind: 'stackedBar';
  id: string;
  title: string;
  yLabel: string;
  labels: string[];
  stacks: { label: string; values: number[]; colorIndex: number }[];
  table: ResultTable;
  tableOptions?: TableOptions;
}

/** Horizontal floating bars from `from` to `to` (a waterfall); a second, outlined bar where there is a prediction. */
export interface WaterfallSpec {
  kind: 'waterfall';
  id: string;
  title: string;
  xLabel: string;
  bars: { label: string; from: number; to: number; kind: 'total' | 'part' | 'gap'; predicted?: number }[];
  table: ResultTable;
  tableOptions?: TableOptions;
}

export type ChartSpec = LineChartSpec | StackedBarSpec | WaterfallSpec;
