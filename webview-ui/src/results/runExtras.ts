// What a run shows under its charts and timeline: an Nsight Systems profile's layers and modules, a
// macro run's full serving table, a profile's top kernels.
import type { RunSummary } from '../../../src/shared/results';
import type { ResultTable } from '../../../src/shared/table';
import { button, el, renderTable } from '../dom';
import { NsysModulesCard } from '../nsysModulesCard';
import { servingTable } from '../views/macro';
import { nsysData } from '../views/nsysModules';
import { topKernels } from '../views/profile';

export class RunExtras {
  private nsysCard: NsysModulesCard | undefined;
  // The serving table's column choice: it holds across runs, so switching run keeps what the user picked.
  private servingAllColumns = false;

  constructor(private readonly holder: HTMLElement) {}

  /** Empties the section (no run to show). */
  clear(): void {
    this.holder.replaceChildren();
  }

  render(run: RunSummary): void {
    const kernels = run.phase === 'profile' ? topKernels(run) : undefined;
    this.holder.replaceChildren();
    this.renderNsys(run);
    this.renderServingTable(run);
    if (kernels) this.holder.append(kernelTable(kernels));
  }

  retheme(): void {
    this.nsysCard?.retheme();
  }

  /** An Nsight Systems profile: the step by layer and module, above the kernel table. */
  private renderNsys(run: RunSummary): void {
    const nsys = run.phase === 'profile' ? nsysData(run) : undefined;
    if (nsys) {
      if (this.nsysCard) this.nsysCard.update(nsys, run.id);
      else this.nsysCard = new NsysModulesCard(nsys, run.id);
      this.holder.append(this.nsysCard.element);
    } else {
      this.nsysCard?.destroy();
      this.nsysCard = undefined;
    }
  }

  /** The full serving table (the findings document quotes only a few of its columns), with a toggle to the fewer. */
  private renderServingTable(run: RunSummary): void {
    const full = run.phase === 'macro' ? servingTable(run) : undefined;
    if (!full) return;
    const section = el('section', undefined, 'card');
    section.id = 'serving-table';
    const scroll = el('div', undefined, 'table-scroll');
    const toggle = button('', '', () => {
      this.servingAllColumns = !this.servingAllColumns;
      fillServing();
    });
    toggle.id = 'serving-columns';
    const fillServing = () => {
      const shown = servingTable(run, { fewer: !this.servingAllColumns })!;
      scroll.replaceChildren(renderTable(shown));
      const more = full.columns.length - shown.columns.length;
      toggle.lastElementChild!.textContent = this.servingAllColumns ? 'Fewer columns' : `All ${full.columns.length} columns`;
      toggle.title = this.servingAllColumns
        ? 'Show the load, p50 and p99 latencies and throughput only'
        : `Show the ${more} more columns too: the means, the duration and total tok/s`;
      toggle.setAttribute('aria-pressed', String(this.servingAllColumns));
    };
    const header = el('div', undefined, 'card-header');
    const actions = el('div', undefined, 'card-actions');
    actions.append(toggle);
    header.append(el('h3', full.title), actions);
    section.append(header, scroll);
    fillServing();
    this.holder.append(section);
  }
}

function kernelTable(kernels: ResultTable): HTMLElement {
  const section = el('section', undefined, 'card');
  section.append(el('h3', kernels.title), el('div', undefined, 'table-scroll'));
  section.lastElementChild!.append(renderTable(kernels, { sortable: true, initialSort: { key: 'total_us', descending: true } }));
  return section;
}
