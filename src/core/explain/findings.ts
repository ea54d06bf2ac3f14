// The decode-step budget as tables: for the findings document's "Where the milliseconds go" section,
// the CLI's `infbench explain`, and the results view's table beside the waterfall.
import { FindingsUpdate } from '../campaign/phaseContext';
import { ResultTable } from '../../shared/table';
import { Budget } from './budget';

/** Which front end writes: a missing phase is named by its CLI command or by the extension's command. */
export type FrontEnd = 'cli' | 'vscode';

// The `budget` prefix places the region under the document's "Where the milliseconds go" heading.
export const BUDGET_SECTION_ID = 'budget-decode-step';

export function budgetTables(b: Budget, frontEnd: FrontEnd = 'cli'): ResultTable[] {
  const tables: ResultTable[] = [];
  const tpot = b.measured.tpot;
  const totals: ResultTable = {
    id: 'budget-totals',
    title: `Decode step at batch ${b.batch}: ${['measured', b.measured.step ? 'explained' : '', b.predicted_ms !== undefined ? 'predicted' : ''].filter(Boolean).join(', ')}`,
    columns: [
      { key: 'what', label: 'quantity', align: 'left' },
      { key: 'ms', label: 'ms per step', digits: 2 },
      { key: 'source', label: 'source', align: 'left' },
    ],
    rows: [],
  };
  if (tpot) {
    totals.rows.push({ what: `served TPOT, median (c=${tpot.concurrency ?? '∞'})`, ms: tpot.median_ms, source: `macro ${b.runs.macro}` });
    if (tpot.mean_ms !== undefined) totals.rows.push({ what: 'served TPOT, mean', ms: tpot.mean_ms, source: `macro ${b.runs.macro}` });
    if (tpot.p99_ms !== undefined) totals.rows.push({ what: 'served TPOT, p99', ms: tpot.p99_ms, source: `macro ${b.runs.macro}` });
  }
  if (b.measured.step)
    totals.rows.push({
      what: `profiled step${b.measured.step.steps ? ` (mean of ${b.measured.step.steps} steps)` : ''}`,
      ms: b.measured.step.ms,
      source: `profile ${b.runs.profile}`,
    });
  if (b.predicted_ms !== undefined)
    totals.rows.push({ what: 'predicted from micro (all-reduce + GEMM + launch)', ms: b.predicted_ms, source: `micro ${b.runs.micro}` });
  for (const g of b.gaps) {
    if (g.kind === 'host_overhead' || g.kind === 'step_vs_micro' || g.kind === 'tpot_vs_micro')
      totals.rows.push({ what: `gap: ${g.name}`, ms: g.ms, source: `${g.first} − ${g.second}` });
  }
  if (totals.rows.length) tables.push(totals);

  if (b.rows.length) {
    const predicted = b.rows.some((r) => r.predicted_ms !== undefined);
    const profiled = b.rows.some((r) => r.profiled_ms !== undefined);
    tables.push({
      id: 'budget-categories',
      title: 'Where the milliseconds go, per kernel category',
      columns: [
        { key: 'label', label: 'category', align: 'left' },
        ...(profiled
          ? [
              { key: 'profiled', label: 'profiled ms', digits: 3 },
              { key: 'share', label: 'share %', digits: 1 },
            ]
          : []),
        ...(predicted
          ? [
              { key: 'predicted', label: 'micro ms', digits: 3 },
              ...(profiled ? [{ key: 'gap', label: 'gap ms', digits: 3 }] : []),
              { key: 'how', label: 'how micro predicts it', align: 'left' as const },
            ]
          : []),
      ],
      rows: b.rows.map((r) => ({
        label: r.label,
        profiled: r.profiled_ms,
        share: r.share !== undefined ? r.share * 100 : undefined,
        predicted: r.predicted_ms,
        gap: r.gap_ms,
        how: r.prediction ?? '',
      })),
      note: b.model ? `Model structure: ${b.model.source}.${predicted && profiled ? ' Gap = profiled − micro.' : ''}` : undefined,
    });
  }
  if (b.missing.length) {
    tables.push({
      id: 'budget-missing',
      title: b.scope ? `Missing phases for ${b.scope.target}` : 'Missing phases',
      columns: [
        { key: 'phase', label: 'phase', align: 'left' },
        { key: 'command', label: 'run', align: 'left' },
        { key: 'adds', label: 'what it adds', align: 'left' },
      ],
      rows: b.missing.map((m) => ({ phase: m.phase, command: frontEnd === 'vscode' ? m.action : m.command, adds: m.adds })),
    });
  }
  return tables;
}

/** The section id of a target's budget: one per target, so that two targets' budgets stand side by side. */
export function budgetSectionId(target: string | undefined): string {
  return target
    ? `${BUDGET_SECTION_ID}-${target
        .toLowerCase()
        .replace(/[^a-z0-9]+/g, '-')
        .replace(/^-|-$/g, '')}`
    : BUDGET_SECTION_ID;
}

/** One line naming the target, server, model and server configuration every run of the budget measured. */
export function budgetScopeLine(b: Budget): string | undefined {
  if (!b.scope) return undefined;
  const s = b.scope;
  const c = s.configuration;
  const config = !c ? '' : c.id === 'unknown' ? ', server configuration unknown' : `, server configuration **${c.name}** (\`${c.id}\`)`;
  return `For target **${s.target}**${s.url ? `, server ${s.url}` : ''}${s.model ? `, model \`${s.model}\`` : ''}${config}: every run below measured this one server${c ? ' configuration' : ''}.`;
}

export function budgetFindings(b: Budget, frontEnd: FrontEnd = 'cli'): FindingsUpdate {
  const provenance = Object.entries(b.runs)
    .filter(([, id]) => id)
    .map(([phase, id]) => `${phase} ${id}`)
    .join(', ');
  const scope = budgetScopeLine(b);
  const lines = [
    ...(scope ? [scope] : []),
    ...b.readings.slice(0, 4),
    `From ${provenance || 'no runs'}${b.simulated ? ' — simulator numbers, not a real server' : ''}.`,
    ...(b.modelLine ? [b.modelLine] : []),
    ...b.caveats.map((c) => `Caveat: ${c}`),
  ];
  const heading = `Decode-step budget at batch ${b.batch}${b.scope ? ` — ${b.scope.target}` : ''}`;
  return { sectionId: budgetSectionId(b.scope?.target), heading, lines, tables: budgetTables(b, frontEnd) };
}
