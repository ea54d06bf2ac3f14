// Server configurations compared: each configuration started (with the user's yes), measured by the
// same macro workload (a macro run of its own, in its own run folder), and the original put back; one
// table across configurations in the findings document and for the CLI.
import { PhaseContext } from '../campaign/phaseContext';
import { FindingsUpdate } from '../findings/findingsUpdate';
import { levelLabel } from '../macro/tables';
import { MacroOptions } from '../macro/options';
import { ServerChangeOptions } from './phaseServer';
import { ServerConfiguration, withServerConfigurations } from './configurations';
import { shellJoin } from '../../remote/shellQuote';
import { finite } from '../../shared/finite';
import { MacroLevelSummary } from '../../shared/results';
import { configurationId, configurationOf } from '../runs/serverConfiguration';
import { basename } from 'node:path';
import { ResultTable } from '../../shared/table';
import { runMacroPhase } from '../phases/macro';
import { paretoTables } from '../macro/gpuAndDelay';
import { gpusOfCommand, ParetoPoint, paretoPoint } from '../../shared/pareto';
import { collapseTrials, compareIntervals, intervalText, TrialStats } from '../macro/trials';
import { SloOutcome } from '../macro/sloSearch';

/** One configuration as measured: its macro run and levels, or why it has none. */
export interface ConfigurationMeasured {
  name: string;
  /** The configuration's identity (a hash of its command line and environment), as its run records it. */
  id: string;
  /** The command line it ran with, as a user would type it (its environment is the original's, whose values stay on the host). */
  command: string;
  runId?: string;
  status?: string;
  /** Measured against the bundled simulator, not a model server. */
  simulated?: boolean;
  levels?: MacroLevelSummary[];
  /** Its SLO verdicts and the search's answer, when the workload had objectives (--slo). */
  slo?: SloOutcome;
  error?: string;
}

export interface ConfigurationsCompared {
  target: string;
  configurations: ConfigurationMeasured[];
  /** The server change's folder: the original recipe and every step. */
  changeDir: string;
}

/** Runs the macro workload once per configuration, the server restarted between them and put back after. */
export async function runConfigurationsCompared(
  ctx: PhaseContext,
  configs: readonly ServerConfiguration[],
  macro: MacroOptions,
  server: ServerChangeOptions,
): Promise<ConfigurationsCompared> {
  let comparison = '';
  const { outcomes, change } = await withServerConfigurations(
    ctx,
    configs,
    server,
    async (config, recipe) => {
      ctx.log.info(`configurations: measuring ${config.name}`);
      // Each run records which configuration it measured (its name, identity and place in the
      // comparison), so that the views set the runs side by side and nothing pairs it with another.
      const configuration = configurationOf(recipe, config.name, { comparison, index: configs.indexOf(config), command: shellJoin(recipe.argv) });
      return runMacroPhase({ ...ctx, configuration }, macro);
    },
    (dir) => (comparison = basename(dir)),
  );
  const compared: ConfigurationsCompared = {
    target: ctx.target.name,
    changeDir: change.dir,
    configurations: outcomes.map((o) => ({
      name: o.config.name,
      id: configurationId(o.recipe),
      command: shellJoin(o.recipe.argv),
      runId: o.value?.run.info.id,
      status: o.value?.summary.status,
      simulated: o.value?.summary.simulated,
      levels: o.value?.levels,
      slo: o.value?.slo,
      error: o.error ?? (o.value && o.value.summary.status !== 'completed' ? o.value.summary.reason : undefined),
    })),
  };
  ctx.sink.findings(configurationsFindings(compared));
  return compared;
}

const pct = (value: number | null, base: number | null): number | null => (value !== null && base ? ((value - base) / base) * 100 : null);

/**
 * One row per configuration and load level: TTFT and TPOT medians, output throughput, and each against
 * the first configuration at the same load (the first given is the baseline).
 */
export function configurationsTable(compared: ConfigurationsCompared): ResultTable {
  // Repeated trials: one row per load, each figure the trials' mean ± 95% interval, a change said only where the intervals part.
  const baseline = collapseTrials(compared.configurations[0]?.levels ?? []);
  const rows: ResultTable['rows'] = [];
  let repeated = false;
  for (const c of compared.configurations) {
    if (!c.levels?.length) {
      rows.push({ configuration: c.name, level: c.error ? `not measured: ${c.error}` : 'not measured' });
      continue;
    }
    for (const l of collapseTrials(c.levels)) {
      const base = baseline.find((b) => levelLabel(b) === levelLabel(l));
      const tpot = finite(l.p50_tpot_ms) ?? null;
      const tput = finite(l.output_throughput) ?? null;
      const first = c === compared.configurations[0];
      const stats = l.trial_stats as TrialStats | undefined;
      const baseStats = base?.trial_stats as TrialStats | undefined;
      if (stats) repeated = true;
      const vsFirst = (key: string, value: number | null, baseValue: number | null): string | number | null => {
        if (first) return null;
        const change = pct(value, baseValue);
        const sa = baseStats?.[key];
        const sb = stats?.[key];
        if (!sa || !sb || sa.half_width === null || sb.half_width === null || change === null) return change;
        const verdict = compareIntervals(sa, sb);
        return verdict === 'differ' ? `${change >= 0 ? '+' : ''}${change.toFixed(1)}` : verdict === 'too wide' ? 'spread too wide to decide' : 'no difference';
      };
      rows.push({
        configuration: c.name,
        level: levelLabel(l),
        p50_ttft_ms: stats?.p50_ttft_ms ? intervalText(stats.p50_ttft_ms, 1) : (finite(l.p50_ttft_ms) ?? null),
        p50_tpot_ms: stats?.p50_tpot_ms ? intervalText(stats.p50_tpot_ms, 2) : tpot,
        output_throughput: stats?.output_throughput ? intervalText(stats.output_throughput, 1) : tput,
        tpot_vs_first: vsFirst('p50_tpot_ms', tpot, finite(base?.p50_tpot_ms) ?? null),
        throughput_vs_first: vsFirst('output_throughput', tput, finite(base?.output_throughput) ?? null),
      });
    }
  }
  return {
    id: 'configurations-compared',
    title: 'Server configurations compared (same workload)',
    columns: [
      { key: 'configuration', label: 'Configuration', align: 'left' },
      { key: 'level', label: 'Load', align: 'left' },
      { key: 'p50_ttft_ms', label: 'TTFT p50 ms', digits: 1 },
      { key: 'p50_tpot_ms', label: 'TPOT p50 ms', digits: 2 },
      { key: 'output_throughput', label: 'Output tok/s', digits: 1 },
      { key: 'tpot_vs_first', label: `TPOT vs ${compared.configurations[0]?.name ?? 'first'} %`, digits: 1 },
      { key: 'throughput_vs_first', label: `Tok/s vs ${compared.configurations[0]?.name ?? 'first'} %`, digits: 1 },
    ],
    rows,
    note:
      'Medians as `vllm bench serve` defines them; each configuration is a macro run of its own (its run folder has the full table). The first configuration is the baseline.' +
      (repeated
        ? ' Repeated loads: mean ± 95% interval half-width (CV) over the trials; a change against the baseline is given only where the two intervals do not overlap.'
        : ''),
  };
}

function configurationsFindings(compared: ConfigurationsCompared): FindingsUpdate {
  const lines = [
    `${compared.configurations.length} configurations of the server on ${compared.target}, each started by Inference Bench and measured by the same workload; the original was put back after the last (its recipe and every step: \`${compared.changeDir}\`).`,
    ...compared.configurations.map(
      (c) =>
        `- **${c.name}** (configuration \`${c.id}\`): \`${c.command}\`${c.runId ? ` — run \`${c.runId}\`` : ''}${c.error ? ` — not measured: ${c.error}` : ''}${c.slo ? ` — SLO: ${c.slo.line}` : ''}`,
    ),
  ];
  return {
    sectionId: `configurations-${compared.configurations.map((c) => c.runId ?? c.name).join('-')}`,
    heading: `Server configurations compared — ${compared.target}`,
    lines,
    tables: [configurationsTable(compared), ...paretoTables(configurationsParetoPoints(compared), 'configurations', 'across the configurations')],
  };
}

/** Every configuration's every whole level as a point of the Pareto front (tokens/s per user against per GPU and per watt). */
export function configurationsParetoPoints(compared: ConfigurationsCompared): ParetoPoint[] {
  return compared.configurations.flatMap((c) =>
    (c.levels ?? []).map((l) => paretoPoint(c.name, l, gpusOfCommand(c.command))).filter((p): p is ParetoPoint => p !== undefined),
  );
}
