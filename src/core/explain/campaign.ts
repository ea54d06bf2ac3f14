// Picks the runs a decode-step budget is built from: the ones named, or the newest completed run of
// each phase in the workspace, and reads their results into the budget's inputs.
//
// A budget sets runs of one target, server URL, model and server configuration side by side (the
// configuration: the adopted recipe's argv and environment, hashed; src/core/runs/serverConfiguration.ts).
// The configuration accounted is the one named (--configuration), else the newest profile's (a budget
// explains a profiled decode step), else the newest macro run's. Macro and profile runs of another
// configuration are left out, each named with why; a run whose configuration is unknown is paired only
// with others unknown, with a caveat. Micro measures the GPUs in isolation, not the server, so its
// runs are paired whatever configuration served meanwhile (its shapes and TP are its own options).
import { resolve } from 'node:path';
import { RunFolder } from '../runs/runFolder';
import { configurationOfRun, describeConfiguration, isKnown } from '../runs/serverConfiguration';
import { RunConfiguration } from '../../shared/results';
import { FindingsUpdate } from '../campaign/phaseContext';
import { Budget, buildBudget } from './budget';
import { budgetFindings } from './findings';
import { macroLevelsFrom, microInputFrom, profileInputFrom } from './inputs';
import { ModelStructure } from './modelStructure';
import { ServedConfig, servedConfigFrom, servedNames } from './servedModel';

export class ExplainError extends Error {}

export interface ExplainSelection {
  macro?: RunFolder;
  micro?: RunFolder;
  profile?: RunFolder;
  /** The newest probe of the same server that read the served model's config.json. */
  probe?: RunFolder;
  /** The one target, server URL and model the chosen runs share: a budget never mixes servers. */
  scope?: BudgetScope;
  /** Runs of the workspace that were newer but measured another target, server, model or configuration, in words. */
  leftOut?: string[];
  /** Things to know about the pairing itself (runs of an unknown configuration paired), in words. */
  caveats?: string[];
}

/** What runs must share to be accounted together. */
export interface BudgetScope {
  target: string;
  url?: string;
  model?: string;
  /** The server configuration of the macro and profile runs (micro's is not compared). */
  configuration?: RunConfiguration;
}

/** The target, server URL and served model a run measured (the model from its result, where it names one). */
export function runScope(run: RunFolder): BudgetScope {
  const options = run.info.options;
  const url = typeof options.url === 'string' ? normalizeUrl(options.url) : undefined;
  let model: string | undefined;
  try {
    model = modelName(run.readResult());
  } catch {
    model = undefined;
  }
  if (!model && run.info.phase !== 'micro' && typeof options.model === 'string') model = options.model;
  return { target: run.info.target, url, model };
}

const normalizeUrl = (url: string) => url.replace(/\/+$/, '');

/**
 * Why `run` cannot be accounted with runs of `scope`, or undefined when it can. Micro measures the
 * host's GPUs, not a server, so only its target must match; macro and profile must also have measured
 * the same server URL and, where both name one, the same model.
 */
function mismatch(scope: BudgetScope, run: RunFolder): string | undefined {
  const other = runScope(run);
  if (other.target !== scope.target) return `target ${other.target}, not ${scope.target}`;
  if (run.info.phase === 'micro') return undefined;
  if (scope.url && other.url && other.url !== scope.url) return `server ${other.url}, not ${scope.url}`;
  if (scope.model && other.model && other.model !== scope.model) return `model ${other.model}, not ${scope.model}`;
  return scope.configuration ? configurationMismatch(scope.configuration, run) : undefined;
}

/** Why `run` measured another server configuration than `wanted`, or undefined when it measured the same (both unknown counts as the same). */
function configurationMismatch(wanted: RunConfiguration, run: RunFolder): string | undefined {
  const other = configurationOfRun(run.info);
  if (other.id === wanted.id) return undefined;
  return `server configuration ${describeConfiguration(other)}, not ${describeConfiguration(wanted)}: ${
    isKnown(other) && isKnown(wanted) ? 'another server configuration' : 'not known to be the same server configuration'
  }`;
}

export function describeScope(scope: BudgetScope): string {
  return [
    `target ${scope.target}`,
    scope.url ? `server ${scope.url}` : '',
    scope.model ? `model ${scope.model}` : '',
    scope.configuration ? `configuration ${describeConfiguration(scope.configuration)}` : '',
  ]
    .filter(Boolean)
    .join(', ');
}

/**
 * The runs a budget is built from, all of one target, server URL, model and server configuration: the
 * named runs (refused when they measured different servers or configurations), or the newest
 * completed run of each phase that belongs with the newest macro or profile run (of `options.target`,
 * when given), of the configuration `options.configuration` names (a name or an id), else the newest
 * profile's.
 */
export function selectRuns(workspace: string, runIds?: string[], options: { target?: string; configuration?: string } = {}): ExplainSelection {
  const all = RunFolder.list(workspace);
  const chosen: ExplainSelection = {};
  if (runIds?.length) {
    for (const id of runIds) {
      const run = all.find((r) => r.info.id === id || r.dir === resolve(id)) ?? all.find((r) => r.info.id.startsWith(id));
      if (!run) {
        throw new ExplainError(
          `No run "${id}" in ${workspace}/.inference-bench/runs. List the runs with \`ls .inference-bench/runs\` and pass their folder names to --runs.`,
        );
      }
      if (run.info.phase === 'probe') throw new ExplainError(`Run ${id} is a probe run; --runs takes macro, micro and profile runs.`);
      if (chosen[run.info.phase])
        throw new ExplainError(`--runs names two ${run.info.phase} runs (${chosen[run.info.phase]!.info.id} and ${run.info.id}); name one per phase.`);
      chosen[run.info.phase] = run;
    }
    const picked = (['macro', 'profile', 'micro'] as const).map((p) => chosen[p]).filter((r): r is RunFolder => Boolean(r));
    const scope = mergedScope(picked);
    for (const run of picked) {
      const why = mismatch(scope, run);
      if (why) {
        throw new ExplainError(
          `--runs mixes servers: ${run.info.phase} run ${run.info.id} measured ${why} (${picked[0].info.phase} run ${picked[0].info.id}). A decode-step budget compares runs of one target, server and model; name runs that measured the same one.`,
        );
      }
    }
    const served = picked.filter((r) => r.info.phase !== 'micro');
    const configurations = served.map((r) => configurationOfRun(r.info));
    const known = configurations.filter(isKnown);
    if (new Set(known.map((c) => c.id)).size > 1) {
      const [a, b] = served.filter((r) => isKnown(configurationOfRun(r.info)));
      throw new ExplainError(
        `--runs mixes server configurations: ${a.info.phase} run ${a.info.id} measured ${describeConfiguration(configurationOfRun(a.info))} and ${b.info.phase} run ${b.info.id} ${describeConfiguration(configurationOfRun(b.info))}. A decode-step budget sets runs of one configuration side by side; name runs of the same one (\`infbench compare\` sets two configurations' runs of one phase side by side).`,
      );
    }
    scope.configuration = known[0] ?? configurations[0];
    // Named by the user, so used; but a known configuration beside an unknown one is said.
    if (known.length && known.length < configurations.length) {
      const unknown = served.filter((r) => !isKnown(configurationOfRun(r.info)));
      chosen.caveats = unknown.map(
        (r) =>
          `${r.info.phase} run ${r.info.id} measured ${describeConfiguration(configurationOfRun(r.info))}; it is set beside configuration ${describeConfiguration(known[0])} because --runs names it, not because they are known to be the same server.`,
      );
    }
    chosen.scope = scope;
    chosen.probe = probeFor(all, scope);
    return chosen;
  }
  // Our own runs first: an imported `vllm bench serve` result measured some other setup, so it stands
  // in for the macro phase only when there is no macro run of ours.
  const imported = (run: RunFolder) => run.info.options.tool === 'vllm bench serve';
  const usable = (run: RunFolder) => run.info.status === 'completed' && hasResult(run);
  const candidates = all.filter((r) => r.info.phase !== 'probe' && (!options.target || r.info.target === options.target) && usable(r));
  // The newest macro or profile run decides which server is accounted (micro names no server).
  const anchor = candidates.find((r) => r.info.phase !== 'micro' && !imported(r)) ?? candidates.find((r) => r.info.phase !== 'micro') ?? candidates[0];
  if (!anchor) {
    if (options.configuration)
      throw new ExplainError(
        `No completed macro or profile run${options.target ? ` of ${options.target}` : ''} to account for configuration "${options.configuration}".`,
      );
    return chosen;
  }
  const scope = runScope(anchor);
  scope.configuration = accountedConfiguration(candidates, scope, anchor, options.configuration);
  for (const pass of [false, true]) {
    for (const run of candidates) {
      const phase = run.info.phase as 'macro' | 'micro' | 'profile';
      if (chosen[phase] || imported(run) !== pass || mismatch(scope, run)) continue;
      chosen[phase] = run;
      if (!scope.model && phase !== 'micro') scope.model = runScope(run).model;
    }
  }
  // A campaign often has a single-stream run and a sweep: the macro run to set beside the profile is
  // the newest one that ran the profiled batch as a concurrency level, where there is one.
  const batch = chosen.profile ? profiledBatch(chosen.profile) : undefined;
  const fits = (r: RunFolder) => r.info.phase === 'macro' && usable(r) && !mismatch(scope, r) && hasLevel(r, batch!);
  if (batch !== undefined && chosen.macro && !hasLevel(chosen.macro, batch)) {
    const better = candidates.find((r) => fits(r) && !imported(r)) ?? candidates.find(fits);
    if (better) chosen.macro = better;
  }
  chosen.scope = scope;
  chosen.probe = probeFor(all, scope);
  // A phase this target has no run of, while another target or server has one: say why it is not used.
  chosen.leftOut = (['macro', 'micro', 'profile'] as const).flatMap((phase) => {
    if (chosen[phase]) return [];
    const other = all.find((r) => r.info.phase === phase && usable(r));
    return other ? [`${phase} run ${other.info.id} measured ${mismatch(scope, other)}`] : [];
  });
  // Newer runs of this very server that measured another configuration (a comparison's): named, each with its configuration.
  const config = scope.configuration;
  if (config) {
    for (const phase of ['macro', 'profile'] as const) {
      const used = chosen[phase];
      for (const r of candidates) {
        if (r.info.phase !== phase || (used && r.info.startedAt <= used.info.startedAt)) continue;
        const why = configurationMismatch(config, r);
        if (!why || mismatch({ ...scope, configuration: undefined }, r)) continue;
        const line = `${phase} run ${r.info.id} measured ${why}`;
        if (!chosen.leftOut.includes(line)) chosen.leftOut.push(line);
      }
    }
    const paired = (['macro', 'profile'] as const).filter((p) => chosen[p]);
    if (!isKnown(config) && paired.length === 2)
      chosen.caveats = [
        `the server configuration of these runs is not known (${config.unknownReason ?? 'no recipe adopted'}): the macro and profile runs are set side by side because they measured the same target, server and model, not because they are known to have measured the same server flags.`,
      ];
  }
  return chosen;
}

/**
 * The configuration a budget accounts: the one `wanted` names (a name, or an id or its start), else the
 * newest profile's of the scope's server, else the anchor's.
 */
function accountedConfiguration(candidates: RunFolder[], scope: BudgetScope, anchor: RunFolder, wanted?: string): RunConfiguration {
  const ofServer = candidates.filter((r) => r.info.phase !== 'micro' && !mismatch(scope, r));
  if (wanted) {
    const match = ofServer.map((r) => configurationOfRun(r.info)).find((c) => c.name === wanted || (wanted.length >= 4 && c.id.startsWith(wanted)));
    if (match) return match;
    const measured = [...new Set(ofServer.map((r) => describeConfiguration(configurationOfRun(r.info))))];
    throw new ExplainError(
      `No completed macro or profile run of ${describeScope(scope)} measured configuration "${wanted}". The configurations measured there: ${measured.join(', ') || 'none'}.`,
    );
  }
  const profile = ofServer.find((r) => r.info.phase === 'profile');
  return configurationOfRun((profile ?? anchor).info);
}

/**
 * The newest completed probe of the scope's target and server that read the served model's config.json
 * and, where the scope names a model, saw the server serve that one.
 */
function probeFor(all: RunFolder[], scope: BudgetScope): RunFolder | undefined {
  if (!scope.url) return undefined;
  return all.find((r) => {
    if (r.info.phase !== 'probe' || r.info.status !== 'completed' || r.info.target !== scope.target) return false;
    if (typeof r.info.options.url !== 'string' || normalizeUrl(r.info.options.url) !== scope.url) return false;
    let result: unknown;
    try {
      result = r.readResult();
    } catch {
      return false;
    }
    return servedConfigFrom(r.info.id, result) !== undefined && (!scope.model || servedNames(result).includes(scope.model));
  });
}

/** The scope of the named runs: the first macro or profile run's, with a model from any that names one. */
function mergedScope(runs: RunFolder[]): BudgetScope {
  const scope = runScope(runs[0]);
  if (runs[0].info.phase === 'micro') scope.model = undefined;
  for (const r of runs) {
    const s = runScope(r);
    if (r.info.phase !== 'micro') scope.url ??= s.url;
    scope.model ??= r.info.phase !== 'micro' ? s.model : undefined;
  }
  return scope;
}

function profiledBatch(run: RunFolder): number | undefined {
  try {
    return profileInputFrom(run.info.id, run.readResult(), run.info.options)?.batch;
  } catch {
    return undefined;
  }
}

function hasLevel(run: RunFolder, concurrency: number): boolean {
  try {
    return macroLevelsFrom(run.readResult()).some((l) => l.max_concurrency === concurrency);
  } catch {
    return false;
  }
}

function hasResult(run: RunFolder): boolean {
  try {
    return run.readResult() !== undefined;
  } catch {
    return false;
  }
}

/** Builds the budget from the selected runs; `model` overrides the structure the micro run names. */
export function explainRuns(selection: ExplainSelection, options: { model?: ModelStructure; batch?: number } = {}): Budget {
  const read = (run: RunFolder | undefined) => {
    if (!run) return undefined;
    try {
      return run.readResult();
    } catch (err) {
      throw new ExplainError(`The result of run ${run.info.id} is not readable JSON (${(err as Error).message}); re-run that phase or leave it out of --runs.`);
    }
  };
  const macroResult = read(selection.macro);
  const microResult = read(selection.micro);
  const profileResult = read(selection.profile);
  const macro =
    selection.macro && macroResult !== undefined
      ? { runId: selection.macro.info.id, simulated: selection.macro.info.simulated, model: modelName(macroResult), levels: macroLevelsFrom(macroResult) }
      : undefined;
  const micro =
    selection.micro && microResult !== undefined
      ? { ...microInputFrom(selection.micro.info.id, microResult, selection.micro.info.options), simulated: selection.micro.info.simulated || undefined }
      : undefined;
  let profile =
    selection.profile && profileResult !== undefined ? profileInputFrom(selection.profile.info.id, profileResult, selection.profile.info.options) : undefined;
  if (selection.profile && profileResult !== undefined && !profile) {
    throw new ExplainError(
      `Profile run ${selection.profile.info.id} has a result without a decode-step breakdown (no step time or categories); re-run the profiler or re-analyse its traces.`,
    );
  }
  if (profile && selection.profile?.info.simulated) profile = { ...profile, simulated: true };
  let served: ServedConfig | undefined;
  try {
    served = selection.probe ? servedConfigFrom(selection.probe.info.id, selection.probe.readResult()) : undefined;
  } catch {
    served = undefined;
  }
  const scope = selection.scope && {
    ...selection.scope,
    configuration: selection.scope.configuration && {
      id: selection.scope.configuration.id,
      name: selection.scope.configuration.name,
      ...(selection.scope.configuration.unknownReason ? { unknownReason: selection.scope.configuration.unknownReason } : {}),
    },
  };
  return buildBudget({
    macro,
    micro,
    profile,
    served,
    model: options.model,
    batch: options.batch,
    scope,
    leftOut: selection.leftOut,
    caveats: selection.caveats,
  });
}

function modelName(result: unknown): string | undefined {
  if (typeof result === 'object' && result !== null && !Array.isArray(result)) {
    const r = result as Record<string, unknown>;
    const server = typeof r.server === 'object' && r.server !== null ? (r.server as Record<string, unknown>) : {};
    const m = r.model ?? r.model_id ?? server.model;
    return typeof m === 'string' && m ? m : undefined;
  }
  return undefined;
}

/**
 * The waterfall for the results view: the budget from the workspace's newest completed runs (of one
 * server configuration: `configuration`, a name or id, or the newest profile's), or undefined when it has none of the three phases (the view then shows nothing rather than an error).
 */
export function budgetViewForWorkspace(workspace: string, target?: string, configuration?: string): Budget['view'] | undefined {
  try {
    const selection = selectRuns(workspace, undefined, { target, configuration });
    if (!selection.macro && !selection.micro && !selection.profile) return undefined;
    return explainRuns(selection).view;
  } catch {
    // A half-written or unreadable run must not break the results view; `infbench explain` reports it.
    return undefined;
  }
}

/**
 * The findings document's "Where the milliseconds go" section from the workspace's newest runs, for a
 * front end to refresh after each phase finishes; undefined when there is nothing to account yet.
 */
export function budgetFindingsForWorkspace(
  workspace: string,
  target?: string,
  frontEnd: 'cli' | 'vscode' = 'cli',
  configuration?: string,
): FindingsUpdate | undefined {
  try {
    const selection = selectRuns(workspace, undefined, { target, configuration });
    if (!selection.macro && !selection.micro && !selection.profile) return undefined;
    return budgetFindings(explainRuns(selection), frontEnd);
  } catch {
    return undefined;
  }
}
