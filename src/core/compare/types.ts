import { ResultTable } from '../../shared/table';
import type { RunConfiguration } from '../../shared/results';

export interface RunRef {
  id: string;
  /** "macro run 2026-...-macro on h200 (simulator)", for headings. */
  label: string;
  simulated?: boolean;
  /** The server configuration the run measured, where it recorded one. */
  configuration?: RunConfiguration;
}

/** One quantity in both runs. */
export interface Difference {
  /** Where in the run: "c=4", "moe.gate_up M=8", "category attention", "kernel ...". */
  where: string;
  metric: string;
  a?: number;
  b?: number;
  delta?: number;
  relative?: number;
  /** The absolute change beyond which it is flagged. */
  threshold?: number;
  flagged: boolean;
  /** For flagged differences: which run is better, where "better" has a direction. */
  better?: 'a' | 'b';
  /** A sentence for the summary. */
  reading?: string;
  /** Repeated trials whose 95% intervals overlap while the means are apart: the spread is too wide to decide. */
  undecided?: boolean;
}

export interface Comparison {
  phase: 'macro' | 'micro' | 'profile';
  a: RunRef;
  b: RunRef;
  differences: Difference[];
  /** Flagged differences as sentences, the biggest first; "no differences beyond noise" otherwise. */
  summary: string[];
  /** Quantities only one run has (a concurrency the other did not run, a shape only one measured). */
  unmatched: string[];
  tables: ResultTable[];
  /** The runs measured different server configurations (or one not known): said first in the summary too. */
  configurations?: string;
}
