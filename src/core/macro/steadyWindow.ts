// A level's figures over its steady window (agent/infbench_agent/macro/steady.py): the ramp, where every
// stream starts at once and prefills pile into the first steps, and the drain, where the last requests
// finish in ever smaller batches, trimmed. Where they move a level's figures, the findings show both.
import { MacroLevelSummary } from '../../shared/results';
import { ResultTable } from '../../shared/table';
import { levelRowLabel } from './tables';
import { finite } from '../../shared/finite';

export interface SteadyWindow {
  start_s: number;
  end_s: number;
  requests: number;
  output_throughput: number;
  mean_tpot_ms?: number;
  median_tpot_ms?: number;
  p99_tpot_ms?: number;
  median_ttft_ms?: number;
  p99_ttft_ms?: number;
}

export function steadyWindow(level: MacroLevelSummary): SteadyWindow | undefined {
  const s = level.steady as Partial<SteadyWindow> | undefined;
  return s && finite(s.start_s) !== undefined && finite(s.end_s) !== undefined && finite(s.output_throughput) !== undefined ? (s as SteadyWindow) : undefined;
}

// A difference under this share of the whole level's figure is the run's noise, not the ramp's or drain's doing.
const MOVED_SHARE = 0.05;

function moved(steady: number | undefined, whole: number | undefined): boolean {
  return steady !== undefined && whole !== undefined && whole !== 0 && Math.abs(steady - whole) / Math.abs(whole) > MOVED_SHARE;
}

/** The levels whose steady window moves TPOT or output throughput beyond noise. */
function movedLevels(levels: readonly MacroLevelSummary[]): MacroLevelSummary[] {
  return levels.filter((l) => {
    const s = steadyWindow(l);
    return s && (moved(finite(s.mean_tpot_ms), finite(l.mean_tpot_ms)) || moved(s.output_throughput, finite(l.output_throughput)));
  });
}

/** Per level: the steady window beside the whole level, when ramp and drain moved some level's figures; else undefined. */
export function steadyWindowTable(levels: readonly MacroLevelSummary[]): ResultTable | undefined {
  if (!movedLevels(levels).length) return undefined;
  const rows = levels.flatMap((l) => {
    const s = steadyWindow(l);
    if (!s) return [];
    return [
      {
        level: levelRowLabel(l),
        window: `${s.start_s.toFixed(1)}–${s.end_s.toFixed(1)} s`,
        requests: s.requests,
        tpot_steady: finite(s.mean_tpot_ms),
        tpot_whole: finite(l.mean_tpot_ms),
        tput_steady: s.output_throughput,
        tput_whole: finite(l.output_throughput),
      },
    ];
  });
  return {
    id: 'macro-steady-window',
    title: 'Steady window per level (ramp and drain trimmed)',
    columns: [
      { key: 'level', label: 'Load', align: 'left' },
      { key: 'window', label: 'Window', align: 'left' },
      { key: 'requests', label: 'Requests', digits: 0 },
      { key: 'tpot_steady', label: 'TPOT mean ms steady', digits: 2 },
      { key: 'tpot_whole', label: 'whole level', digits: 2 },
      { key: 'tput_steady', label: 'Output tok/s steady', digits: 1 },
      { key: 'tput_whole', label: 'whole level', digits: 1 },
    ],
    rows,
    note: "The window runs from a level's first finished request to its last send (seconds from the level's start); latencies of the requests wholly inside it, throughput of the tokens that arrived inside it.",
  };
}
