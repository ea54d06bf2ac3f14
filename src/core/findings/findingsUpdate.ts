import { ResultTable } from '../../shared/table';

/**
 * A section of the findings document that a phase fills in. The section id names the marked
 * region (one per phase and run), the tables are rendered by the findings model.
 */
export interface FindingsUpdate {
  sectionId: string;
  heading: string;
  /** Prose first (one or two lines: the headline finding, provenance), then the tables. */
  lines: string[];
  tables: ResultTable[];
}
