// The decode-step budget: from the served time per token down to the kernel categories of one decode
// step, with the micro phase's prediction beside each part. The host computes it (src/core/explain).
import type { DecodeBudgetView } from '../../../src/shared/budget';
import type { WaterfallSpec } from '../specs';

/** Whose runs the budget sets side by side: one target, server, model and server configuration. */
export function budgetScopeText(budget: DecodeBudgetView): string | undefined {
  const s = budget.scope;
  if (!s) return undefined;
  const c = s.configuration;
  const config = !c ? '' : c.id === 'unknown' ? ` · configuration unknown (${c.unknownReason ?? 'no recipe adopted'})` : ` · configuration ${c.name} (${c.id})`;
  return `For target ${s.target}${s.url ? ` · server ${s.url}` : ''}${s.model ? ` · model ${s.model}` : ''}${config}`;
}

/** One run the budget did not use, with why. */
export function budgetLeftOutText(leftOut: string): string {
  return `Not used: ${leftOut} — runs of another target, server or server configuration are never set beside these.`;
}

export function budgetChart(budget: DecodeBudgetView): WaterfallSpec {
  return {
    kind: 'waterfall',
    id: 'decode-budget',
    title: budget.title,
    xLabel: 'milliseconds per decode step',
    bars: budget.bars.map((b) => ({ label: b.label, from: b.base_ms, to: b.base_ms + b.ms, kind: b.kind, predicted: b.predicted_ms })),
    table: {
      id: 'decode-budget',
      title: budget.title,
      columns: [
        { key: 'label', label: 'what', align: 'left' },
        { key: 'ms', label: 'ms', digits: 3 },
        { key: 'predicted_ms', label: 'micro predicts (ms)', digits: 3 },
        { key: 'source', label: 'measured by', align: 'left' },
        { key: 'note', label: 'how', align: 'left' },
      ],
      rows: budget.bars.map((b) => ({ label: b.label, ms: b.ms, predicted_ms: b.predicted_ms, source: b.source, note: b.note })),
      note: budget.simulated ? 'includes runs against the simulator' : undefined,
    },
  };
}
