// What a macro level's numbers can be trusted for: a level cut short (Cancel mid-level, a dropped
// connection) measured less than it names, and a level the load generator itself limited (it sent
// late, or ran out of CPU) shows the client's ceiling, not the server's. Both are marked on the level
// summary here, once, so the table, the charts, the findings and the CLI all say the same.
import { LevelCut, LevelLimit, MacroLevelSummary } from '../../shared/results';
import { finite } from '../../shared/finite';

// The agent warns from these same figures (agent/infbench_agent/macro/command.py): p99 scheduling lag above
// 10 ms, and a load-generator process above 85% of one core.
export const LAG_P99_LIMIT_MS = 10;
// The agent warns from this too: its process waiting over 10 ms (p99) for a CPU stamps each read that late.
export const WAKE_LAG_P99_LIMIT_MS = 10;
export const CPU_PER_PROCESS_LIMIT_PERCENT = 85;
// The load generator's processes together using this share of the host's cores leave the server's own
// CPU work (scheduling, detokenizing, streaming) short.
export const HOST_CPU_LIMIT_SHARE = 0.85;

/**
 * Why a finished level measured less than it names, or undefined when it ran to the end. `stopped`
 * says how the run ended when it did not complete (cancelled, interrupted, failed).
 */
export function levelCut(level: MacroLevelSummary, stopped?: 'cancelled' | 'interrupted' | 'failed'): LevelCut | undefined {
  const done = (finite(level.completed) ?? 0) + (finite(level.failed) ?? 0);
  const planned = finite(level.num_prompts);
  const cancelled = level.cancelled === true;
  // A level that ran every planned request is whole, even when the Cancel came right after it.
  if (planned !== undefined ? done >= planned : !cancelled) return undefined;
  const reason = cancelled ? 'cancelled' : (stopped ?? 'stopped');
  return { reason, done, planned };
}

/** The load generator's own limits on this level, each with the figure that shows it. */
export function levelLimits(level: MacroLevelSummary, hostCores?: number): LevelLimit[] {
  const limits: LevelLimit[] = [];
  const lag = level.scheduling_lag_ms as { p99?: unknown; mean?: unknown } | undefined;
  const lagP99 = finite(lag?.p99);
  if (lagP99 !== undefined && lagP99 > LAG_P99_LIMIT_MS) {
    limits.push({
      by: 'client_lag',
      value: lagP99,
      threshold: LAG_P99_LIMIT_MS,
      figure: `client scheduling lag p99 ${lagP99.toFixed(lagP99 >= 100 ? 0 : 1)} ms`,
      reading: `the load generator sent requests up to ${lagP99.toFixed(0)} ms late (p99), so the server saw less load than the level names`,
    });
  }
  // Sends on time say nothing of reads in a closed loop (each send follows a late-read end at once): a host
  // that keeps the client from a CPU shows in how late the client's own sleeps wake.
  const wake = finite((level.client_wake_lag_ms as { p99?: unknown } | undefined)?.p99);
  if (wake !== undefined && wake > WAKE_LAG_P99_LIMIT_MS) {
    limits.push({
      by: 'client_wake',
      value: wake,
      threshold: WAKE_LAG_P99_LIMIT_MS,
      figure: `client wake-up lag p99 ${wake.toFixed(wake >= 100 ? 0 : 1)} ms`,
      reading: `the load generator waited up to ${wake.toFixed(0)} ms (p99) for a CPU, so it read tokens late: TTFT, ITL and TPOT may read that much high`,
    });
  }
  const cpu = level.client_cpu as { cpu_percent_of_one_core?: unknown; workers?: unknown } | undefined;
  const percent = finite(cpu?.cpu_percent_of_one_core);
  const workers = Math.max(1, finite(cpu?.workers) ?? 1);
  if (percent !== undefined) {
    const perProcess = percent / workers;
    if (perProcess > CPU_PER_PROCESS_LIMIT_PERCENT) {
      limits.push({
        by: 'client_cpu',
        value: perProcess,
        threshold: CPU_PER_PROCESS_LIMIT_PERCENT,
        figure: `client CPU ${perProcess.toFixed(0)}% of a core${workers > 1 ? ` in each of ${workers} processes` : ''}`,
        reading: 'the load generator was busy near a full core, so it may have been the bottleneck; raise its workers',
      });
    }
    if (hostCores && percent / 100 > HOST_CPU_LIMIT_SHARE * hostCores) {
      limits.push({
        by: 'host_cpu',
        value: percent / 100,
        threshold: HOST_CPU_LIMIT_SHARE * hostCores,
        figure: `load generator on ${(percent / 100).toFixed(1)} of the host's ${hostCores} cores`,
        reading: "the load generator took most of the host's CPU, leaving the server short of it",
      });
    }
  }
  return limits;
}

/** The level with `cut` and `limits` set from its own figures; a running aggregate gets neither cut nor partial changed. */
export function markLevel(level: MacroLevelSummary, options: { stopped?: 'cancelled' | 'interrupted' | 'failed'; hostCores?: number } = {}): MacroLevelSummary {
  const out: MacroLevelSummary = { ...level };
  const limits = levelLimits(level, options.hostCores);
  if (limits.length) out.limits = limits;
  else delete out.limits;
  if (level.partial === true && !level.cut) return out;
  const cut = levelCut(level, options.stopped);
  if (cut) {
    out.cut = cut;
    // `partial` is what every reader (the budget, a vllm bench serve comparison) checks.
    out.partial = true;
  }
  return out;
}

/** A level that measured the whole load it names, and no more: the only kind a headline may quote. */
export function isWholeLevel(level: MacroLevelSummary): boolean {
  return level.partial !== true && !level.cut;
}

/** "cut short: 3 of 32 requests (cancelled)", for table cells and chart labels. */
export function cutText(cut: LevelCut): string {
  return `cut short: ${cut.done}${cut.planned !== undefined ? ` of ${cut.planned}` : ''} requests (${cut.reason})`;
}

/** "limited by the client: client scheduling lag p99 67 ms", or undefined. */
export function limitText(limits: readonly LevelLimit[] | undefined): string | undefined {
  if (!limits?.length) return undefined;
  return `load generator limited: ${limits.map((l) => l.figure).join('; ')}`;
}
