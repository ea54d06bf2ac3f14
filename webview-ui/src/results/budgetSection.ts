// Where the milliseconds go, across the newest macro, micro and profile runs of one server (not one
// run's view): the waterfall, its readings, and the phases missing from it.
import type { DecodeBudgetView } from '../../../src/shared/budget';
import { ChartCard } from '../charts';
import { el } from '../dom';
import { budgetChart, budgetLeftOutText, budgetScopeText } from '../views/budget';

export class BudgetSection {
  private card: ChartCard | undefined;

  constructor(private readonly holder: HTMLElement) {}

  render(budget: DecodeBudgetView | undefined): void {
    if (!budget || !budget.bars.length) {
      this.card?.destroy();
      this.card = undefined;
      this.holder.replaceChildren();
      return;
    }
    const spec = budgetChart(budget);
    if (this.card) this.card.update(spec);
    else this.card = new ChartCard(spec);
    const heading = el('h2', 'Where the milliseconds go');
    if (budget.simulated) heading.append(el('span', 'simulator', 'badge'));
    const s = budget.scope;
    // Whose runs these are: the budget never sets one server's runs beside another's.
    const scope = s ? el('p', budgetScopeText(budget)!, 'meta budget-scope') : undefined;
    const readings = el('ul', undefined, 'readings');
    for (const r of budget.readings) readings.append(el('li', r));
    const missing = el('ul', undefined, 'meta budget-missing');
    for (const m of budget.missing) missing.append(el('li', `Missing the ${m.phase} phase${s ? ` for ${s.target}` : ''}: run ${m.action}. It adds ${m.adds}`));
    for (const l of budget.leftOut ?? []) missing.append(el('li', budgetLeftOutText(l)));
    this.holder.replaceChildren(heading, ...(scope ? [scope] : []), readings, this.card.element, ...(missing.childElementCount ? [missing] : []));
  }

  /** Brings the section into view, its heading focused, so that a keyboard or screen-reader user lands where the command said. */
  reveal(): void {
    const heading = this.holder.querySelector('h2');
    this.holder.scrollIntoView({ block: 'start' });
    if (heading) {
      heading.tabIndex = -1;
      heading.focus({ preventScroll: true });
    }
  }

  retheme(): void {
    this.card?.retheme();
  }
}
