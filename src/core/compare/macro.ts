// Two macro runs side by side: throughput at each load level and the latency statistics, flagged
// where the change is beyond the noise the runs' own spread allows (see noise.ts).
import { ResultTable } from '../../shared/table';
import { judge, standardError } from './noise';
import { Comparison, Difference, RunRef } from './types';
import { finite } from '../../shared/finite';
import { collapseTrials, compareIntervals, intervalText, TrialStat, TrialStats } from '../macro/trials';

type Level = Record<string, unknown>;

interface MetricDef {
  key: string;
  label: string;
  unit: string;
  higherIsBetter: boolean;
}

const THROUGHPUTS: MetricDef[] = [
  { key: 'output_throughput', label: 'output throughput', unit: 'tok/s', higherIsBetter: true },
  { key: 'request_throughput', label: 'request throughput', unit: 'req/s', higherIsBetter: true },
];
const LATENCIES = ['tpot', 'ttft', 'itl', 'e2el'];
const LATENCY_NAMES: Record<string, string> = { tpot: 'TPOT', ttft: 'TTFT', itl: 'ITL', e2el: 'E2EL' };

/** A level's key: its concurrency, or its request rate when the sweep was by rate. */
function levelKey(l: Level): string {
  const c = finite(l.max_concurrency);
  if (c !== undefined) return `c=${c}`;
  const r = finite(l.request_rate);
  return r !== undefined ? `rate=${r}` : 'c=∞';
}

/**
 * Independent samples behind a latency statistic: one per request (one per later token for ITL),
 * divided by the concurrency, because the requests in flight together share their steps (a wave that
 * joins the same step has the same TTFT) and so vary together, not independently.
 */
function samples(l: Level, metric: string): number | undefined {
  const completed = finite(l.completed);
  const out = finite(l.total_output_tokens);
  const raw = metric !== 'itl' ? completed : out !== undefined && completed !== undefined ? out - completed : completed;
  const together = finite(l.max_concurrency) ?? 1;
  return raw !== undefined ? Math.max(1, raw / together) : undefined;
}

function latencyStats(a: Level, b: Level): { key: string; metric: string; stat: 'mean' | 'median' | number; label: string }[] {
  const out: { key: string; metric: string; stat: 'mean' | 'median' | number; label: string }[] = [];
  for (const m of LATENCIES) {
    for (const key of Object.keys(a)) {
      if (!(key in b)) continue;
      const match = new RegExp(`^(mean|median|p(\\d+(?:\\.\\d+)?))_${m}_ms$`).exec(key);
      if (!match) continue;
      const stat = match[1] === 'mean' ? 'mean' : match[1] === 'median' ? 'median' : Number(match[2]) / 100;
      out.push({ key, metric: m, stat, label: `${LATENCY_NAMES[m]} ${match[1]}` });
    }
  }
  // vLLM writes p50_ beside median_ when the percentiles asked include 50: the same figure, compared once.
  const kept = out.filter((s) => !(s.stat === 0.5 && out.some((o) => o.metric === s.metric && o.stat === 'median')));
  const order = (s: 'mean' | 'median' | number) => (s === 'mean' ? 0 : s === 'median' ? 0.5 : s);
  return kept.sort((x, y) => LATENCIES.indexOf(x.metric) - LATENCIES.indexOf(y.metric) || order(x.stat) - order(y.stat));
}

export function compareMacro(a: RunRef, levelsA: Level[], b: RunRef, levelsB: Level[]): Comparison {
  // Repeated trials: one level per load, its figures the trials' means, its intervals beside them.
  levelsA = collapseTrials(levelsA);
  levelsB = collapseTrials(levelsB);
  const differences: Difference[] = [];
  const unmatched: string[] = [];
  const byKeyB = new Map(levelsB.map((l) => [levelKey(l), l]));
  const keysA = new Set(levelsA.map(levelKey));
  for (const la of levelsA) {
    const where = levelKey(la);
    const lb = byKeyB.get(where);
    if (!lb) {
      unmatched.push(`${where} only in ${a.id}`);
      continue;
    }
    // A level cut short measured less load than it names: its figures compare with nothing.
    const cut = [la.partial === true ? a.id : '', lb.partial === true ? b.id : ''].filter(Boolean);
    if (cut.length) {
      unmatched.push(`${where}: cut short in ${cut.join(' and ')}, not compared`);
      continue;
    }
    const workload = workloadMismatch(la, lb);
    if (workload) unmatched.push(`${where}: ${workload}`);
    // Throughput inherits the relative error of the mean request latency (closed loop: thr ∝ 1/latency).
    const relSe = (l: Level) => {
      for (const m of ['e2el', 'tpot']) {
        const mean = finite(l[`mean_${m}_ms`]);
        const sd = finite(l[`std_${m}_ms`]);
        const n = samples(l, m);
        if (mean && sd !== undefined && n) return standardError('mean', sd, n) / mean;
      }
      return undefined;
    };
    for (const def of THROUGHPUTS) {
      const va = finite(la[def.key]);
      const vb = finite(lb[def.key]);
      if (va === undefined || vb === undefined) continue;
      const byTrials = trialsDiff(where, def.label, def.unit, def.key, la, lb, def.higherIsBetter, a, b);
      if (byTrials) {
        differences.push(byTrials);
        continue;
      }
      const ra = relSe(la);
      const rb = relSe(lb);
      const v = judge(va, vb, ra !== undefined ? ra * va : undefined, rb !== undefined ? rb * vb : undefined);
      differences.push(diff(where, def.label, def.unit, va, vb, v, def.higherIsBetter, a, b));
    }
    for (const s of latencyStats(la, lb)) {
      const va = finite(la[s.key]);
      const vb = finite(lb[s.key]);
      if (va === undefined || vb === undefined) continue;
      const byTrials = trialsDiff(where, s.label, 'ms', s.key, la, lb, false, a, b);
      if (byTrials) {
        differences.push(byTrials);
        continue;
      }
      const se = (l: Level) => {
        const sd = finite(l[`std_${s.metric}_ms`]);
        const n = samples(l, s.metric);
        return sd !== undefined && n ? standardError(s.stat, sd, n) : undefined;
      };
      const v = judge(va, vb, se(la), se(lb));
      differences.push(diff(where, `${s.label}`, 'ms', va, vb, v, false, a, b));
    }
  }
  for (const lb of levelsB) if (!keysA.has(levelKey(lb))) unmatched.push(`${levelKey(lb)} only in ${b.id}`);
  return {
    phase: 'macro',
    a,
    b,
    differences,
    summary: withUndecided(macroSummary(differences, a, b), differences, a, b),
    unmatched,
    tables: [macroTable(differences, a, b)],
  };
}

/** The trials' interval of a figure, when the level was repeated. */
function trialStat(l: Level, key: string): TrialStat | undefined {
  const s = (l.trial_stats as TrialStats | undefined)?.[key];
  return s && typeof s.mean === 'number' && typeof s.half_width === 'number' ? s : undefined;
}

/**
 * Both runs repeated the load: a difference is called only where the 95% intervals do not overlap
 * (src/core/macro/trials.ts says why); overlapping intervals whose means are apart are undecided.
 */
function trialsDiff(
  where: string,
  metric: string,
  unit: string,
  key: string,
  la: Level,
  lb: Level,
  higherIsBetter: boolean,
  a: RunRef,
  b: RunRef,
): Difference | undefined {
  const sa = trialStat(la, key);
  const sb = trialStat(lb, key);
  if (!sa || !sb) return undefined;
  const verdict = compareIntervals(sa, sb);
  const delta = sb.mean - sa.mean;
  const relative = sa.mean !== 0 ? delta / Math.abs(sa.mean) : Number.POSITIVE_INFINITY;
  const flagged = verdict === 'differ';
  const better = flagged ? (delta > 0 === higherIsBetter ? 'b' : 'a') : undefined;
  const digits = Math.abs(sa.mean) >= 100 ? 1 : 2;
  const figures = `${intervalText(sa, digits)} → ${intervalText(sb, digits)} ${unit} over ${sa.n} and ${sb.n} trials`;
  const sign = delta >= 0 ? '+' : '−';
  const reading = flagged
    ? `${where}: ${metric} ${figures} (${sign}${Math.abs(relative * 100).toFixed(1)}%, the 95% intervals apart): ${better === 'b' ? b.id : a.id} is better.`
    : verdict === 'too wide'
      ? `${where}: ${metric} ${figures}: the spread is too wide to decide (the 95% intervals overlap).`
      : undefined;
  return {
    where,
    metric: `${metric} (${unit})`,
    a: sa.mean,
    b: sb.mean,
    delta,
    relative,
    threshold: (sa.half_width ?? 0) + (sb.half_width ?? 0),
    flagged,
    better,
    reading,
    undecided: verdict === 'too wide' || undefined,
  };
}

/** The verdict lines, and the differences the trials could not decide said as such. */
function withUndecided(lines: string[], differences: Difference[], a: RunRef, b: RunRef): string[] {
  const undecided = differences.filter((d) => d.undecided);
  if (!undecided.length) return lines;
  const head = differences.some((d) => d.flagged)
    ? lines
    : [`No difference between ${a.id} and ${b.id} that the trials' 95% intervals show (${differences.length} quantities compared).`];
  const shown = undecided.slice(0, VERDICT_LINES).map((d) => d.reading ?? `${d.where}: ${d.metric}: spread too wide to decide.`);
  const more = undecided.length > VERDICT_LINES ? [`…and ${undecided.length - VERDICT_LINES} more figures whose spread is too wide to decide.`] : [];
  return [...head, ...shown, ...more];
}

/** Beyond this many flagged differences the verdict says one line per metric instead of one per difference. */
const VERDICT_LINES = 5;
const FAMILIES = ['output throughput', 'TPOT', 'TTFT', 'ITL', 'E2EL', 'request throughput'];

/** "TPOT median (ms)" → TPOT and median; "output throughput (tok/s)" → itself with no statistic. */
function familyOf(d: Difference): { family: string; stat?: string; unit: string } {
  const m = /^(\S+) (mean|median|p[\d.]+) \((\S+)\)$/.exec(d.metric);
  if (m) return { family: m[1], stat: m[2], unit: m[3] };
  const t = /^(.*) \((\S+)\)$/.exec(d.metric);
  return t ? { family: t[1], unit: t[2] } : { family: d.metric, unit: '' };
}

/**
 * The macro verdict: each flagged difference in a sentence while they are few; past that, one line
 * per metric (throughput, TPOT, TTFT...), with its headline statistic (the median, else the mean,
 * else the lowest percentile) at each level where it moved, and the other statistics that moved
 * named, so that a sweep of three levels reads in six lines rather than thirty-six.
 */
export function macroSummary(differences: Difference[], a: RunRef, b: RunRef): string[] {
  const flagged = differences.filter((d) => d.flagged);
  if (flagged.length <= VERDICT_LINES) return summarize(differences, a, b);
  const rank = (stat?: string) => (stat === undefined ? 0 : stat === 'median' ? 1 : stat === 'mean' ? 2 : 3 + Number(stat.slice(1)) / 1000);
  const lines: { size: number; text: string }[] = [];
  for (const family of FAMILIES) {
    const moved = flagged.filter((d) => familyOf(d).family === family);
    if (!moved.length) continue;
    const stats = [...new Set(moved.map((d) => familyOf(d).stat))].sort((x, y) => rank(x) - rank(y));
    const head = stats[0];
    const shown = moved.filter((d) => familyOf(d).stat === head);
    const unit = familyOf(shown[0]).unit;
    const at = shown
      .map((d) => `${d.where} ${fmt(d.a!)} → ${fmt(d.b!)} (${d.delta! >= 0 ? '+' : '−'}${Math.abs((d.relative ?? 0) * 100).toFixed(1)}%)`)
      .join(', ');
    const betterA = shown.filter((d) => d.better === 'a').map((d) => d.where);
    const betterB = shown.filter((d) => d.better === 'b').map((d) => d.where);
    const who = [betterA.length ? `${a.id} is better at ${betterA.join(', ')}` : '', betterB.length ? `${b.id} is better at ${betterB.join(', ')}` : '']
      .filter(Boolean)
      .join('; ');
    const others = stats.slice(1);
    const also = others.length ? `; ${others.join(', ')} moved too` : '';
    lines.push({
      size: Math.max(...shown.map((d) => Math.abs(d.relative ?? 0))),
      text: `${family}${head ? ` ${head}` : ''} (${unit}): ${at}: ${who}${also}.`,
    });
  }
  // The largest change first: a front end shows the first line as the verdict and the rest below it.
  return lines.sort((x, y) => y.size - x.size).map((l) => l.text);
}

/** Tokens per request in and out: runs with different workloads are not like for like. */
function workloadMismatch(a: Level, b: Level): string | undefined {
  const per = (l: Level, key: string) => {
    const total = finite(l[key]);
    const n = finite(l.completed);
    return total !== undefined && n ? total / n : undefined;
  };
  const inA = per(a, 'total_input_tokens');
  const inB = per(b, 'total_input_tokens');
  const outA = per(a, 'total_output_tokens');
  const outB = per(b, 'total_output_tokens');
  const differs = (x?: number, y?: number) => x !== undefined && y !== undefined && Math.abs(x - y) > 0.05 * Math.max(x, y);
  if (!differs(inA, inB) && !differs(outA, outB)) return undefined;
  const f = (v?: number) => (v === undefined ? '?' : Math.round(v).toString());
  return `the workloads differ (A ${f(inA)} tokens in / ${f(outA)} out per request, B ${f(inB)} / ${f(outB)}): TTFT and E2EL are not like for like; TPOT and ITL still are.`;
}

function diff(
  where: string,
  metric: string,
  unit: string,
  va: number,
  vb: number,
  v: ReturnType<typeof judge>,
  higherIsBetter: boolean,
  a: RunRef,
  b: RunRef,
): Difference {
  const better = v.flagged ? (v.delta > 0 === higherIsBetter ? 'b' : 'a') : undefined;
  const sign = v.delta >= 0 ? '+' : '−';
  const reading = v.flagged
    ? `${where}: ${metric} ${fmt(va)} → ${fmt(vb)} ${unit} (${sign}${Math.abs(v.relative * 100).toFixed(1)}%, beyond the ±${fmt(v.threshold)} ${unit} noise threshold, ${v.basis}): ${better === 'b' ? b.id : a.id} is better.`
    : undefined;
  return {
    where,
    metric: `${metric} (${unit})`,
    a: va,
    b: vb,
    delta: v.delta,
    relative: v.relative,
    threshold: v.threshold,
    flagged: v.flagged,
    better,
    reading,
  };
}

/** One line per flagged difference, largest first (`lead` first of all where flagged), or the one line saying there is none. */
export function summarize(differences: Difference[], a: RunRef, b: RunRef, lead?: Difference): string[] {
  const flagged = differences
    .filter((d) => d.flagged)
    .sort((x, y) => Number(y === lead) - Number(x === lead) || Math.abs(y.relative ?? 0) - Math.abs(x.relative ?? 0));
  if (!differences.length)
    return [`Nothing to compare between ${a.id} and ${b.id}: they measured nothing the same way (no common level, shape or category with the same workload).`];
  if (!flagged.length) return [`No difference between ${a.id} and ${b.id} beyond noise (${differences.length} quantities compared).`];
  return flagged.map((d) => d.reading ?? `${d.where}: ${d.metric} changed.`);
}

function fmt(v: number): string {
  const abs = Math.abs(v);
  return abs >= 100 ? v.toFixed(1) : abs >= 1 ? v.toFixed(2) : v.toFixed(3);
}

export function differenceTable(id: string, title: string, differences: Difference[], a: RunRef, b: RunRef, note?: string): ResultTable {
  return {
    id,
    title,
    columns: [
      { key: 'where', label: 'where', align: 'left' },
      { key: 'metric', label: 'metric', align: 'left' },
      { key: 'a', label: `A ${a.id}`, digits: 3 },
      { key: 'b', label: `B ${b.id}`, digits: 3 },
      { key: 'delta', label: 'B − A', digits: 3 },
      { key: 'pct', label: 'Δ %', digits: 1 },
      { key: 'threshold', label: 'noise ±', digits: 3 },
      { key: 'flag', label: 'flag', align: 'left' },
    ],
    rows: differences.map((d) => ({
      where: d.where,
      metric: d.metric,
      a: d.a,
      b: d.b,
      delta: d.delta,
      pct: d.relative !== undefined && Number.isFinite(d.relative) ? d.relative * 100 : undefined,
      threshold: d.threshold,
      flag: d.flagged ? (d.better ? `▲ ${d.better.toUpperCase()} better` : '▲ changed') : d.undecided ? 'spread too wide to decide' : '',
    })),
    note,
  };
}

function macroTable(differences: Difference[], a: RunRef, b: RunRef): ResultTable {
  return differenceTable(
    'compare-macro',
    `Macro: ${a.label} (A) vs ${b.label} (B)`,
    differences,
    a,
    b,
    "Flagged (▲) when |B − A| exceeds 3 standard errors of the difference (from each run's std and its requests over the concurrency) and 1% of A; throughput inherits the mean latency's relative error; 3% where a run reports no spread. Loads both runs repeated (--trials): flagged only where the 95% intervals do not overlap, the noise column their half-widths summed.",
  );
}
