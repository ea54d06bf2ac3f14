// The header over a run's charts: its phase and target, its status (and a live level's progress), its
// headline, and what comparing it with the overlaid run found.
import type { HostToWebview } from '../../../src/shared/protocol';
import { levelProgressText, type RunSummary } from '../../../src/shared/results';
import { el } from '../dom';
import { runLabel } from './selection';

export type Verdict = Extract<HostToWebview, { type: 'verdict' }>;

const PHASE_NAMES: Record<string, string> = { macro: 'Macro (serving)', micro: 'Micro (GEMM, all-reduce)', profile: 'Profiler (decode step)', probe: 'Probe' };

/** Fills `header` for `run` (empty without one), with `other` overlaid and the verdict where it is of these two. */
export function renderRunHeader(header: HTMLElement, run: RunSummary | undefined, other: RunSummary | undefined, verdict: Verdict | undefined): void {
  header.replaceChildren();
  if (!run) return;
  const title = el('h2', `${PHASE_NAMES[run.phase] ?? run.phase} · ${run.target}`);
  if (run.simulated) title.append(el('span', 'simulator', 'badge'));
  header.append(title);
  const status = el('p', undefined, `status status-${run.status}`);
  status.id = 'run-status';
  status.append(
    el('span', undefined, `codicon codicon-${run.status === 'running' ? 'loading codicon-modifier-spin' : run.status === 'completed' ? 'pass' : 'warning'}`),
  );
  status.append(el('span', ` ${run.status}${run.reason ? ` — ${run.reason}` : ''}`));
  // A macro level running: requests done of its total and the time left at its pace so far.
  if (run.status === 'running' && run.levelProgress) {
    const going = el('span', ` · ${levelProgressText(run.levelProgress)}`);
    going.id = 'level-progress';
    status.append(going);
  }
  header.append(status);
  if (run.headline) {
    const headline = el('p', run.headline, 'headline');
    headline.id = 'run-headline';
    header.append(headline);
  }
  if (other) header.append(el('p', `A (solid): ${runLabel(run)} — B (dashed): ${runLabel(other)}${other.headline ? ` — ${other.headline}` : ''}`, 'meta'));
  // Compare's answer in one line (the biggest change beyond noise), the others under it.
  if (other && verdict && verdict.runId === run.id && verdict.compareRunId === other.id) {
    const line = el(
      'p',
      `${verdict.flagged ? `▲ ${verdict.flagged} change${verdict.flagged === 1 ? '' : 's'} beyond noise: ` : ''}${verdict.lines[0] ?? ''}`,
      'verdict',
    );
    line.id = 'compare-verdict';
    header.append(line);
    if (verdict.lines.length > 1) {
      const more = el('ul', undefined, 'meta verdict-more');
      for (const l of verdict.lines.slice(1)) more.append(el('li', l));
      header.append(more);
    }
  }
}
