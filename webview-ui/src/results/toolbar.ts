// The results view's toolbar: the run shown, the run overlaid for comparison, and the kernel inspector
// of a profile.
import { hasResults, listedRuns } from '../../../src/shared/results';
import { post } from '../api';
import { button, el } from '../dom';
import { profileData } from '../views/profile';
import { runLabel, RunSelection } from './selection';

/** Fills `toolbar` with the pickers of `selection`; a pick is told to the host, saved, then `picked` draws it. */
export function renderToolbar(toolbar: HTMLElement, selection: RunSelection, picked: () => void): void {
  const run = selection.selected();
  const runSelect = el('select');
  runSelect.id = 'run-select';
  runSelect.setAttribute('aria-label', 'Run shown');
  // Failed runs that kept nothing are left out, but for a target's newest and the one shown.
  const listed = listedRuns(selection.snapshot.runs);
  if (run && !listed.includes(run)) listed.push(run);
  for (const r of listed) {
    const o = el('option', runLabel(r));
    o.value = r.id;
    o.selected = r.id === run?.id;
    runSelect.append(o);
  }
  runSelect.addEventListener('change', () => {
    selection.selectedRunId = runSelect.value;
    if (selection.compareRunId === selection.selectedRunId) selection.compareRunId = undefined;
    post({ type: 'selectRun', runId: selection.selectedRunId, compareRunId: selection.compareRunId });
    selection.save();
    picked();
  });
  const compareSelect = el('select');
  compareSelect.id = 'compare-select';
  compareSelect.setAttribute('aria-label', 'Run overlaid for comparison');
  const none = el('option', 'no comparison');
  none.value = '';
  compareSelect.append(none);
  for (const r of selection.snapshot.runs.filter((x) => run && x.phase === run.phase && x.id !== run.id && hasResults(x))) {
    const o = el('option', `B: ${runLabel(r)}`);
    o.value = r.id;
    o.selected = r.id === selection.compared()?.id;
    compareSelect.append(o);
  }
  compareSelect.disabled = compareSelect.options.length < 2;
  compareSelect.addEventListener('change', () => {
    selection.compareRunId = compareSelect.value || undefined;
    post({ type: 'selectRun', runId: selection.selected()!.id, compareRunId: selection.compareRunId });
    selection.save();
    picked();
  });
  const runLabelEl = el('label', 'Run ');
  runLabelEl.append(runSelect);
  const compareLabel = el('label', 'Compare with ');
  compareLabel.append(compareSelect);
  toolbar.replaceChildren(runLabelEl, compareLabel);
  if (run && profileData(run))
    toolbar.append(
      button('Inspect kernels', 'Open the kernel breakdown beside the editor', () => post({ type: 'inspectBreakdown', runId: run.id }), 'list-tree'),
    );
}
