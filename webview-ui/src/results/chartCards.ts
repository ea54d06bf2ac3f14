// A run's charts as cards that update in place: a card keeps its id across renders, so that a live run's
// charts redraw where they are.
import type { RunSummary } from '../../../src/shared/results';
import { ChartCard } from '../charts';
import type { ChartSpec } from '../specs';
import { configurationCharts } from '../views/configurations';
import { macroCharts } from '../views/macro';
import { microCharts } from '../views/micro';
import { paretoCharts } from '../views/pareto';
import { profileCharts } from '../views/profile';

/** The charts of `run`'s phase, with `other` overlaid; `runs` are every run the view has (a macro run's configurations and Pareto front). */
export function chartSpecs(run: RunSummary, other: RunSummary | undefined, runs: RunSummary[]): ChartSpec[] {
  switch (run.phase) {
    case 'macro':
      // A configuration of a comparison: the others beside it first, then its own charts.
      return [...configurationCharts(run, runs), ...macroCharts(run, other), ...paretoCharts(run, runs)];
    case 'micro':
      return microCharts(run, other);
    case 'profile':
      return profileCharts(run, other);
    default:
      return [];
  }
}

export class ChartCards {
  private cards: ChartCard[] = [];

  /** `specs` drawn into `holder`, reusing the cards with the same id. */
  show(holder: HTMLElement, specs: ChartSpec[]): void {
    const next: ChartCard[] = [];
    for (const spec of specs) {
      const existing = this.cards.find((c) => c.id === spec.id);
      if (existing) {
        existing.update(spec);
        next.push(existing);
      } else next.push(new ChartCard(spec));
    }
    this.cards.filter((c) => !next.includes(c)).forEach((c) => c.destroy());
    this.cards = next;
    holder.replaceChildren(...this.cards.map((c) => c.element));
  }

  clear(): void {
    this.cards.forEach((c) => c.destroy());
    this.cards = [];
  }

  /** The points the cards draw, for the render timing the view reports. */
  pointCount(): number {
    return this.cards.reduce((n, c) => n + c.pointCount(), 0);
  }

  retheme(): void {
    this.cards.forEach((c) => c.retheme());
  }
}
