// The server's own state over each macro level (agent/infbench_agent/macro/server_state.py samples its
// /metrics about once a second): how many requests it ran and queued, how full its KV cache was,
// preemptions and prefix-cache hits. It is what says why TPOT p99 moved or throughput stopped rising.
import { MacroLevelSummary } from '../../shared/results';
import { ResultTable } from '../../shared/table';
import { levelLabel, levelRowLabel } from './tables';
import { finite } from '../../shared/finite';

/** One read of the server's /metrics, `t` seconds from the run's first level start (the requests' time axis). */
export interface ServerStateSample {
  t: number;
  running?: number;
  waiting?: number;
  /** 0..1 */
  kv_cache_usage?: number;
  /** Over the interval since the previous sample (vLLM's counters) or as the server publishes it (SGLang). */
  prefix_cache_hit_rate?: number;
  preemptions_per_s?: number;
  generation_tokens_per_s?: number;
  spec_acceptance_rate?: number;
}

interface MeanMax {
  mean: number;
  max: number;
}

export interface ServerStateSeries {
  interval_s: number;
  samples: ServerStateSample[];
  failed_reads: number;
  summary: {
    samples: number;
    running?: MeanMax;
    waiting?: MeanMax;
    kv_cache_usage?: MeanMax;
    preemptions?: number;
    prefix_cache_hit_rate?: number;
    spec_acceptance_rate?: number;
  };
}

export function serverState(level: MacroLevelSummary): ServerStateSeries | undefined {
  const s = level.server_state as ServerStateSeries | undefined;
  return s && Array.isArray(s.samples) && s.samples.length ? s : undefined;
}

// Reads about a second apart: a level over in fewer reads than this has at most one read inside its
// load (the first is taken as it starts, the last as it ends), so its means and maxima would be zeros
// of an empty server, not its state under the load.
export const MIN_STATE_SAMPLES = 3;

/** Why a level's state is not shown, when it had too few reads; undefined when it had enough. */
export function tooShortToSample(level: MacroLevelSummary): string | undefined {
  const s = serverState(level);
  if (!s || s.samples.length >= MIN_STATE_SAMPLES) return undefined;
  const secs = finite(level.duration);
  const reads = `${s.samples.length} read${s.samples.length === 1 ? '' : 's'}`;
  return `too short to sample (${reads}${secs !== undefined ? ` in ${secs.toFixed(2)} s` : ''}, ${s.interval_s} s apart)`;
}

/** Per level: the server's batch, queue and cache as it reported them while the level ran; undefined when no level has them. */
export function serverStateTable(levels: readonly MacroLevelSummary[]): ResultTable | undefined {
  const withState = levels.filter((l) => serverState(l));
  if (!withState.length) return undefined;
  const anyHits = withState.some((l) => finite(serverState(l)?.summary.prefix_cache_hit_rate) !== undefined);
  const anyPreemptions = withState.some((l) => finite(serverState(l)?.summary.preemptions) !== undefined);
  const columns: ResultTable['columns'] = [
    { key: 'level', label: 'Load', align: 'left' },
    { key: 'running_mean', label: 'Running mean', digits: 1 },
    { key: 'running_max', label: 'Running max', digits: 0 },
    { key: 'waiting_mean', label: 'Waiting mean', digits: 1 },
    { key: 'waiting_max', label: 'Waiting max', digits: 0 },
    { key: 'kv_max', label: 'KV cache max %', digits: 0 },
  ];
  if (anyPreemptions) columns.push({ key: 'preemptions', label: 'Preemptions', digits: 0 });
  if (anyHits) columns.push({ key: 'hit_rate', label: 'Prefix-cache hit %', digits: 1 });
  const rows = withState.map((l) => {
    const s = serverState(l)!.summary;
    const hits = finite(s.prefix_cache_hit_rate);
    // Totals come from the counters' change between the level's first and last reads, so two reads
    // give them whole; only the gauges (batch, queue, cache) need reads inside the load.
    const totals = { preemptions: finite(s.preemptions), hit_rate: hits === undefined ? undefined : hits * 100 };
    const short = tooShortToSample(l);
    if (short) return { level: levelRowLabel(l), running_mean: short, ...totals };
    const kv = finite(s.kv_cache_usage?.max);
    return {
      level: levelRowLabel(l),
      running_mean: finite(s.running?.mean),
      running_max: finite(s.running?.max),
      waiting_mean: finite(s.waiting?.mean),
      waiting_max: finite(s.waiting?.max),
      kv_max: kv === undefined ? undefined : kv * 100,
      ...totals,
    };
  });
  return {
    id: 'macro-server-state',
    title: "The server's own state per load level",
    columns,
    rows,
    note:
      "From the server's Prometheus /metrics, read about once a second while each level ran; the run folder keeps every sample." +
      (withState.some((l) => tooShortToSample(l))
        ? ` A level over in fewer than ${MIN_STATE_SAMPLES} reads is too short to sample its batch, queue and cache (its counters' totals still count): run it longer (more requests, or a duration) to see them.`
        : ''),
  };
}

// A level is over-saturated when the server queues requests while its throughput no longer rises:
// the extra load only waits, so TTFT grows with the queue. The thresholds leave run-to-run noise out.
const FLAT_THROUGHPUT_GAIN = 0.05;
const RISING_TTFT = 1.2;
const QUEUED_MEAN = 0.5;

/** The first level past which more load only queued: "over-saturated from c=32", with the figures that show it. */
export function saturationLines(levels: readonly MacroLevelSummary[]): string[] {
  const ordered = levels.filter((l) => !l.cut && finite(l.output_throughput) !== undefined);
  for (let i = 1; i < ordered.length; i++) {
    const before = ordered[i - 1];
    const level = ordered[i];
    const waiting = tooShortToSample(level) ? undefined : finite(serverState(level)?.summary.waiting?.mean);
    const gain = level.output_throughput / Math.max(before.output_throughput, 1e-9) - 1;
    const ttftBefore = finite(before.mean_ttft_ms);
    const ttft = finite(level.mean_ttft_ms);
    if (waiting === undefined || waiting < QUEUED_MEAN || gain > FLAT_THROUGHPUT_GAIN || !ttft || !ttftBefore || ttft < RISING_TTFT * ttftBefore) continue;
    return [
      `⚠ Over-saturated from ${levelLabel(level)}: the server queued ${waiting.toFixed(1)} requests on average while output throughput ` +
        `moved ${(gain * 100).toFixed(0)}% (${before.output_throughput.toFixed(1)} → ${level.output_throughput.toFixed(1)} tok/s) ` +
        `and mean TTFT rose ${ttftBefore.toFixed(0)} → ${ttft.toFixed(0)} ms: past ${levelLabel(before)} more load only waits.`,
    ];
  }
  return [];
}
