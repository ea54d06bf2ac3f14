// The SLO verdicts and the search for the highest load that meets them, as the agent reports them
// (agent/infbench_agent/macro/search.py): each level's verdict on its last trial (`slo`), and the run's
// answer in its result (`slo`: the line, the bracket, every load visited). Here: how they read.
import { MacroLevelSummary } from '../../shared/results';
import { finite } from '../../shared/finite';

export interface SloJudged {
  slo: string;
  label: string;
  verdict: 'meets' | 'breaks' | 'undecided';
  mean?: number;
  half_width?: number | null;
}

export interface LoadVerdict {
  verdict: 'meets' | 'breaks' | 'undecided';
  load: string;
  value: number;
  step: 'bracket' | 'bisect' | 'sweep';
  slos: SloJudged[];
  why?: string;
}

export interface SloOutcome {
  line: string;
  search: 'concurrency' | 'rate' | null;
  trials: number;
  visited: LoadVerdict[];
  bracket?: [number, number] | null;
  max?: number;
  highest_meeting?: number | null;
  lowest_not_meeting?: number | null;
}

/** The run's SLO outcome from its result, when it judged any. */
export function sloOutcomeOf(result: Record<string, unknown> | undefined): SloOutcome | undefined {
  const slo = result?.slo;
  return slo && typeof slo === 'object' && typeof (slo as SloOutcome).line === 'string' ? (slo as SloOutcome) : undefined;
}

/** A level's verdict word, for a table's SLO column. */
export function levelVerdict(level: MacroLevelSummary): string | undefined {
  const v = (level.slo as LoadVerdict | undefined)?.verdict;
  return v === 'undecided' ? 'spread too wide to decide' : v;
}

const WORD = { meets: 'meets', breaks: 'breaks', undecided: 'undecided' };

/** The loads visited so far, from the levels' own verdicts: "c=1 meets, c=2 meets, c=4 breaks". */
export function visitedText(levels: readonly MacroLevelSummary[]): string {
  return levels
    .map((l) => l.slo as LoadVerdict | undefined)
    .filter((v): v is LoadVerdict => !!v?.verdict)
    .map((v) => `${v.load} ${WORD[v.verdict]}`)
    .join(', ');
}

/**
 * The findings' lines: the answer in one line, then how the search got there (the bracket and each
 * load's verdict in the order visited). While the run goes (no outcome yet) the verdicts so far.
 */
export function sloLines(outcome: SloOutcome | undefined, levels: readonly MacroLevelSummary[]): string[] {
  const visited = visitedText(levels);
  if (!outcome) return visited ? [`SLO verdicts so far: ${visited}.`] : [];
  const lines = [`**SLO:** ${outcome.line}.`];
  if (outcome.search) {
    const unit = (v: number) => (outcome.search === 'concurrency' ? `c=${v}` : `${v} req/s`);
    const bracket = outcome.bracket
      ? `bracketed between ${unit(outcome.bracket[0])} and ${unit(outcome.bracket[1])} by doubling, then bisected`
      : `doubled up to ${unit(finite(outcome.max) ?? 0)} without a load that failed`;
    const trials = outcome.trials > 1 ? `, each run ${outcome.trials} times and judged on its 95% intervals` : '';
    lines.push(
      `Search by ${outcome.search}: ${bracket}; ${outcome.visited.length} loads visited${trials}: ${outcome.visited.map((v) => `${v.load} ${WORD[v.verdict]}`).join(', ')}.`,
    );
  }
  return lines;
}

// The agent's grammar (macro/trials.py SLO_TERM), checked before a run so that a typo is said at once.
const SLO_TERM = /^(ttft|tpot|itl|e2el)(?:_(p\d+(?:\.\d+)?|mean|median))?\s*<=\s*[0-9.]+\s*(ms|s)?$|^goodput\s*>=\s*[0-9.]+\s*%?$/;

/** What is wrong with an --slo text, or undefined when every objective reads. */
export function sloProblem(text: string): string | undefined {
  const parts = text
    .split(',')
    .map((p) => p.trim().toLowerCase())
    .filter(Boolean);
  if (!parts.length) return 'no objective given; for example "ttft_p99<=2000,tpot_p99<=50"';
  const bad = parts.find((p) => !SLO_TERM.test(p));
  if (bad)
    return `"${bad}" is no objective: write METRIC_STAT<=MS (ttft, tpot, itl or e2el at p50, p90, p99, mean or median; an s suffix for seconds) or goodput>=PERCENT%, for example "ttft_p99<=2000,tpot_p99<=50"`;
  return undefined;
}
