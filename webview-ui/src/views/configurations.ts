// Server configurations compared: the macro runs of one comparison (each a configuration of the same
// server, measured by the same workload) on one chart per figure, one line per configuration.
import type { MacroLevelSummary, RunSummary } from '../../../src/shared/results';
import type { TableCell } from '../../../src/shared/table';
import type { ChartSpec, Series } from '../specs';
import { finite, wantsLog } from './common';
import { loadOf } from './macro';

/** The server configuration a run measured, for its label: " · production", " · configuration unknown"; empty for runs made before runs recorded one. */
export function configurationTag(run: RunSummary): string {
  const c = run.configuration;
  if (!c) return '';
  return c.id === 'unknown' ? ' · configuration unknown' : ` · ${c.name} (${c.id.slice(0, 6)})`;
}

/** The runs of the shown run's comparison, baseline first; none when the run is not part of one. */
export function comparisonRuns(run: RunSummary, runs: readonly RunSummary[]): RunSummary[] {
  const id = run.configuration?.comparison;
  if (!id) return [];
  const siblings = runs.filter((r) => r.phase === 'macro' && r.configuration?.comparison === id);
  // The newest summary of each configuration (a rerun of the same comparison id cannot happen, but a live and a stored copy can).
  const byIndex = new Map<number, RunSummary>();
  const indexOf = (r: RunSummary) => r.configuration?.index ?? 0;
  for (const r of siblings) if (!byIndex.has(indexOf(r))) byIndex.set(indexOf(r), r);
  return [...byIndex.values()].sort((a, b) => indexOf(a) - indexOf(b));
}

/**
 * Output throughput and median TPOT against load, one line per configuration of the comparison the
 * shown run belongs to, with the table of every configuration's levels.
 */
export function configurationCharts(run: RunSummary, runs: readonly RunSummary[]): ChartSpec[] {
  const compared = comparisonRuns(run, runs);
  if (compared.length < 2) return [];
  const levelsOf = (r: RunSummary) =>
    (r.macro?.levels ?? []).filter((l) => !l.cut && !l.partial && loadOf(l) !== undefined).sort((a, b) => loadOf(a)! - loadOf(b)!);
  const loads = [...new Set(compared.flatMap((r) => levelsOf(r).map((l) => loadOf(l)!)))].sort((a, b) => a - b);
  const byRate = compared.every((r) => levelsOf(r).every((l) => finite(l.max_concurrency) === undefined));
  const xLabel = byRate ? 'request rate (req/s)' : 'concurrency (max in-flight requests)';
  const rows: Record<string, TableCell>[] = compared.flatMap((r) =>
    levelsOf(r).map((l) => ({
      configuration: r.configuration!.name,
      id: r.configuration!.id,
      load: loadOf(l),
      p50_ttft_ms: finite(l.p50_ttft_ms ?? l.median_ttft_ms),
      p50_tpot_ms: finite(l.p50_tpot_ms ?? l.median_tpot_ms),
      output_throughput: finite(l.output_throughput),
      command: r.configuration!.command,
    })),
  );
  const table = {
    id: 'configurations-compared',
    title: 'Server configurations compared (same workload)',
    columns: [
      { key: 'configuration', label: 'configuration', align: 'left' as const },
      { key: 'id', label: 'id', align: 'left' as const },
      { key: 'load', label: byRate ? 'req/s' : 'concurrency', digits: 0 },
      { key: 'p50_ttft_ms', label: 'TTFT p50 (ms)', digits: 1 },
      { key: 'p50_tpot_ms', label: 'TPOT p50 (ms)', digits: 2 },
      { key: 'output_throughput', label: 'output tok/s', digits: 1 },
      { key: 'command', label: 'command', align: 'left' as const },
    ],
    rows,
  };
  // One line per configuration, each its own colour and (for those who cannot tell colours apart) every other one dashed.
  const series = (figure: (l: MacroLevelSummary) => number | undefined): Series[] =>
    compared.map((r, i) => ({
      label: r.configuration!.name,
      colorIndex: i,
      dashed: i % 2 === 1,
      points: levelsOf(r).flatMap((l) => (figure(l) === undefined ? [] : [{ x: loadOf(l)!, y: figure(l)! }])),
    }));
  const common = { kind: 'line' as const, xLabel, xLog: wantsLog(loads), xTicks: loads.length <= 12 ? loads : undefined, table };
  const id = run.configuration!.comparison;
  return [
    {
      ...common,
      id: `configurations-${id}-throughput`,
      title: `Configurations compared: output throughput (${compared.map((r) => r.configuration!.name).join(', ')})`,
      yLabel: 'output tokens per second',
      series: series((l) => finite(l.output_throughput)),
    },
    {
      ...common,
      id: `configurations-${id}-tpot`,
      title: 'Configurations compared: median TPOT',
      yLabel: 'TPOT p50 (ms)',
      series: series((l) => finite(l.p50_tpot_ms ?? l.median_tpot_ms)),
    },
  ];
}
