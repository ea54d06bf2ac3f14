// Which runs the results view shows: the one picked and the one overlaid on it, kept across a reload of
// the view. The runs themselves are the host's snapshot; the view keeps only the picks.
import type { ResultsSnapshot, ResultsViewState } from '../../../src/shared/protocol';
import type { RunSummary } from '../../../src/shared/results';
import { host } from '../api';
import { configurationTag } from '../views/configurations';

export class RunSelection {
  snapshot: ResultsSnapshot = { runs: [] };
  selectedRunId: string | undefined;
  compareRunId: string | undefined;

  constructor() {
    const saved = (host.getState() ?? {}) as ResultsViewState;
    this.selectedRunId = saved.selectedRunId;
    this.compareRunId = saved.compareRunId;
  }

  /** The run shown: the one picked, else the newest. */
  selected(): RunSummary | undefined {
    return this.snapshot.runs.find((r) => r.id === this.selectedRunId) ?? this.snapshot.runs[0];
  }

  /** The run overlaid: the one picked for comparison, where it is another run of the same phase. */
  compared(): RunSummary | undefined {
    const run = this.selected();
    const other = this.snapshot.runs.find((r) => r.id === this.compareRunId);
    return run && other && other.phase === run.phase && other.id !== run.id ? other : undefined;
  }

  save(): void {
    host.setState({ selectedRunId: this.selectedRunId, compareRunId: this.compareRunId } satisfies ResultsViewState);
  }
}

/** A run as its pickers name it: phase, target (and configuration), start, and whether it still runs. */
export function runLabel(r: RunSummary): string {
  return `${r.phase} · ${r.target}${configurationTag(r)} · ${new Date(r.startedAt).toLocaleString()}${r.status === 'running' ? ' · running' : ''}`;
}
