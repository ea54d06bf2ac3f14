// How macro results read: the headline, the figures people quote per level (the findings document's
// table), the full per-level table (the run folder, the results view, the CLI) and the failures table.
import { MacroLevelSummary } from '../../shared/results';
import { GOODPUT_COLUMN, SERVING_FIGURE_COLUMNS } from '../../shared/servingColumns';
import { ResultTable } from '../../shared/table';
import { cutText, isWholeLevel, limitText } from './levelFlags';

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);

export function levelLabel(level: MacroLevelSummary): string {
  const rate = level.request_rate as number | string | null;
  if (rate !== null && rate !== undefined) return `${rate === 'inf' ? '∞' : rate} req/s${level.max_concurrency ? ` (≤${level.max_concurrency})` : ''}`;
  return `c=${level.max_concurrency}`;
}

function thousands(v: number): string {
  return Math.round(v).toLocaleString('en-US');
}

/** What a level's row is called: its load, and whether it still runs or was cut short. */
export function levelRowLabel(level: MacroLevelSummary): string {
  // A repeated load's trials each have a row: "c=8 #2/3".
  const trial = typeof level.trial === 'number' && typeof level.trials === 'number' ? ` #${level.trial}/${level.trials}` : '';
  if (level.cut) return `${levelLabel(level)}${trial} (${cutText(level.cut)})`;
  return `${levelLabel(level)}${trial}${level.partial ? ' (running)' : ''}`;
}

/**
 * "decode 46.1 tok/s at c=1 (1/TPOT) · peak 2,900 tok/s at c=64", from whole levels only: a level still
 * running or cut short measured less load than it names, so it never stands in a headline.
 */
export function macroHeadline(levels: readonly MacroLevelSummary[]): string | undefined {
  const done = levels.filter((l) => l.completed > 0 && isWholeLevel(l));
  const cut = levels.filter((l) => l.cut);
  if (!done.length) return cut.length ? `${cut.map(levelLabel).join(', ')} cut short` : undefined;
  const parts: string[] = [];
  const single = done.find((l) => l.max_concurrency === 1 && (l.request_rate === null || l.request_rate === undefined));
  const tpot = single ? num(single.mean_tpot_ms) : null;
  // 1/TPOT, as vllm bench serve's single-stream decode rate; not the level's output throughput (which counts the prefill's wait).
  if (tpot) parts.push(`decode ${(1000 / tpot).toFixed(1)} tok/s at c=1 (1/TPOT)`);
  const peak = done.reduce((a, b) => (b.output_throughput > a.output_throughput ? b : a));
  // A peak the load generator itself limited is the client's ceiling, not the server's: say so beside it.
  if (done.length > 1 || !tpot)
    parts.push(`peak ${thousands(peak.output_throughput)} tok/s at ${levelLabel(peak)}${peak.limits?.length ? ' (load generator limited)' : ''}`);
  const failed =
    done.reduce((n, l) => n + (l.failed ?? 0), 0) + levels.filter((l) => l.completed === 0 && isWholeLevel(l)).reduce((n, l) => n + (l.failed ?? 0), 0);
  if (failed) parts.push(`${failed} failed`);
  if (cut.length) parts.push(`${cut.map(levelLabel).join(', ')} cut short`);
  return parts.join(' · ');
}

/** The CLI's line for a level as it ends: its figures, or how far it got when it was cut short. */
export function levelLine(l: MacroLevelSummary): string {
  const tpot = typeof l.mean_tpot_ms === 'number' ? `TPOT ${l.mean_tpot_ms.toFixed(2)} ms · ` : '';
  const figures = `${l.completed} ok, ${l.failed} failed · ${tpot}${l.output_throughput.toFixed(1)} tok/s`;
  const limited = limitText(l.limits);
  if (!l.cut) return `${levelLabel(l)}: ${figures}${limited ? ` · ⚠ ${limited}` : ''}`;
  const cut = `${levelLabel(l)}: ${cutText(l.cut)}`;
  return l.cut.done > 0 ? `${cut}; its figures (${figures}) are of less load than it names and left out of the headline` : `${cut}; nothing measured`;
}

/** One findings line per flagged level: limited by the load generator (with the figure), or cut short. */
export function levelFlagLines(levels: readonly MacroLevelSummary[]): string[] {
  const lines: string[] = [];
  for (const l of levels) {
    // The load generator's own ceiling, said with the figure that shows it, so that it never reads as the server slowing down.
    if (l.limits?.length)
      lines.push(`⚠ ${levelLabel(l)}: limited by the load generator, not the server — ${l.limits.map((x) => `${x.figure} (${x.reading})`).join('; ')}.`);
    if (l.cut) lines.push(`⚠ ${levelLabel(l)} was ${cutText(l.cut)}: its row measured less load than it names, and no headline quotes it.`);
  }
  return lines;
}

/** A level's SLO verdict in words (the agent's `slo` on a load's last trial). */
function sloVerdictWord(l: MacroLevelSummary): string | undefined {
  const v = (l.slo as { verdict?: string } | undefined)?.verdict;
  return v === 'undecided' ? 'spread too wide to decide' : v;
}

/** One row per level, as `vllm bench serve` reports it: duration, mean prompt and output tokens where they vary, latencies in ms (mean, p50, p99; E2EL mean and p99), throughputs (output and total tok/s), goodput, client CPU. */
export function levelTable(levels: readonly MacroLevelSummary[], note?: string): ResultTable {
  const hasGoodput = levels.some((l) => num(l.request_goodput) !== null);
  // Lengths that differ per request (a range ratio, a dataset's own) differ per level too: each row says what it sent.
  const varied = levels.some((l) => (typeof l.dataset_name === 'string' && l.dataset_name !== 'random') || (num(l.range_ratio) ?? 0) > 0);
  const columns: ResultTable['columns'] = [
    { key: 'level', label: 'Load', align: 'left' },
    { key: 'completed', label: 'OK', digits: 0 },
    { key: 'failed', label: 'Failed', digits: 0 },
    { key: 'duration', label: 'Duration s', digits: 2 },
    ...(varied
      ? [
          { key: 'mean_input_tokens', label: 'Prompt tok mean', digits: 0 },
          { key: 'mean_output_tokens', label: 'Output tok mean', digits: 0 },
        ]
      : []),
    ...SERVING_FIGURE_COLUMNS,
  ];
  if (hasGoodput) columns.push(GOODPUT_COLUMN);
  columns.push({ key: 'client_cpu', label: 'Client CPU µs/tok', digits: 1 });
  const anyLimited = levels.some((l) => l.limits?.length);
  if (anyLimited) columns.push({ key: 'limited', label: 'Load generator limit', align: 'left' });
  // --slo: each load's verdict (on its last trial, taken over all of them).
  const anySlo = levels.some((l) => sloVerdictWord(l));
  if (anySlo) columns.push({ key: 'slo', label: 'SLO', align: 'left' });
  const rows = levels.map((l) => {
    const row: ResultTable['rows'][number] = { level: levelRowLabel(l) };
    for (const c of columns) {
      if (['level', 'client_cpu', 'limited', 'slo', 'mean_input_tokens', 'mean_output_tokens'].includes(c.key)) continue;
      const v = (l as Record<string, unknown>)[c.key];
      row[c.key] = typeof v === 'number' ? v : null;
    }
    if (varied) {
      const done = num(l.completed);
      row.mean_input_tokens = done ? (num(l.total_input_tokens) ?? 0) / done : null;
      row.mean_output_tokens = done ? (num(l.total_output_tokens) ?? 0) / done : null;
    }
    const cpu = l.client_cpu as { us_per_output_token?: number } | undefined;
    row.client_cpu = num(cpu?.us_per_output_token);
    if (anyLimited) row.limited = l.limits?.length ? `⚠ ${l.limits.map((x) => x.figure).join('; ')}` : '';
    if (anySlo) row.slo = sloVerdictWord(l) ?? '';
    return row;
  });
  return { id: 'macro-levels', title: 'Serving metrics per load level', columns, rows, note };
}

/**
 * The figures people quote, one row per level, narrow enough for a document beside the results:
 * TTFT and TPOT p50/p99, output throughput and goodput (when SLOs were set). Failures and the load
 * generator's limits are marked on the load; the full table (means, ITL, E2EL, request throughput,
 * client CPU) is levelTable's, kept in the run folder and the results view.
 */
export function quotedFiguresTable(levels: readonly MacroLevelSummary[], note?: string): ResultTable {
  const hasGoodput = levels.some((l) => num(l.request_goodput) !== null);
  const anyFailed = levels.some((l) => (num(l.failed) ?? 0) > 0);
  const columns: ResultTable['columns'] = [
    { key: 'level', label: 'Load', align: 'left' },
    ...(anyFailed ? [{ key: 'failed', label: 'Failed', digits: 0 }] : []),
    { key: 'p50_ttft_ms', label: 'TTFT p50 ms', digits: 1 },
    { key: 'p99_ttft_ms', label: 'TTFT p99 ms', digits: 1 },
    { key: 'p50_tpot_ms', label: 'TPOT p50 ms', digits: 2 },
    { key: 'p99_tpot_ms', label: 'TPOT p99 ms', digits: 2 },
    { key: 'output_throughput', label: 'Output tok/s', digits: 1 },
    ...(hasGoodput ? [{ key: 'request_goodput', label: 'Goodput req/s', digits: 2 }] : []),
  ];
  const rows = levels.map((l) => {
    const row: ResultTable['rows'][number] = { level: `${levelRowLabel(l)}${l.limits?.length ? ' ⚠' : ''}` };
    for (const c of columns) if (c.key !== 'level') row[c.key] = num((l as Record<string, unknown>)[c.key]);
    return row;
  });
  return { id: 'macro-quoted', title: 'Serving figures per load level', columns, rows, note };
}

/** Failures by reason per level, or undefined when every request completed. */
export function failureTable(levels: readonly MacroLevelSummary[]): ResultTable | undefined {
  const rows: ResultTable['rows'] = [];
  for (const l of levels) {
    const failures = (l.failures ?? {}) as Record<string, number>;
    const errors = (l.errors ?? []) as string[];
    // The agent gives one example per reason; older results only the first few errors, of any reason.
    const examples = (l.failure_examples ?? {}) as Record<string, string>;
    for (const [reason, count] of Object.entries(failures)) {
      const example = examples[reason] ?? errors.find((e) => typeof e === 'string') ?? '';
      rows.push({ level: levelLabel(l), reason, count, example });
    }
  }
  if (!rows.length) return undefined;
  return {
    id: 'macro-failures',
    title: 'Failed requests (left out of every latency and throughput figure)',
    columns: [
      { key: 'level', label: 'Load', align: 'left' },
      { key: 'reason', label: 'Reason', align: 'left' },
      { key: 'count', label: 'Count', digits: 0 },
      { key: 'example', label: 'Example', align: 'left' },
    ],
    rows,
  };
}
