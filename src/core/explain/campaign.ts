// Picks the runs a decode-step budget is built from: the ones named, or the newest completed run of
// each phase in the workspace, and reads their results into the budget's inputs.
import { resolve } from 'node:path';
import { RunFolder } from '../runs/runFolder';
import { FindingsUpdate } from '../campaign/phaseContext';
import { Budget, buildBudget } from './budget';
import { budgetFindings } from './findings';
import { macroLevelsFrom, microInputFrom, profileInputFrom } from './inputs';
import { ModelStructure } from './modelStructure';

export class ExplainError extends Error {}

export interface ExplainSelection {
  macro?: RunFolder;
  micro?: RunFolder;
  profile?: RunFolder;
}

/** The newest run of each phase that finished with a result (or the named runs, by id or folder). */
export function selectRuns(workspace: string, runIds?: string[]): ExplainSelection {
  const all = RunFolder.list(workspace);
  const chosen: ExplainSelection = {};
  if (runIds?.length) {
    for (const id of runIds) {
      const run = all.find((r) => r.info.id === id || r.dir === resolve(id)) ?? all.find((r) => r.info.id.startsWith(id));
      if (!run) {
        throw new ExplainError(`No run "${id}" in ${workspace}/.inference-bench/runs. List the runs with \`ls .inference-bench/runs\` and pass their folder names to --runs.`);
      }
      if (run.info.phase === 'probe') throw new ExplainError(`Run ${id} is a probe run; --runs takes macro, micro and profile runs.`);
      if (chosen[run.info.phase]) throw new ExplainError(`--runs names two ${run.info.phase} runs (${chosen[run.info.phase]!.info.id} and ${run.info.id}); name one per phase.`);
      chosen[run.info.phase] = run;
    }
    return chosen;
  }
  // Our own runs first: an imported `vllm bench serve` result measured some other setup, so it stands
  // in for the macro phase only when there is no macro run of ours.
  const imported = (run: RunFolder) => run.info.options.tool === 'vllm bench serve';
  const usable = (run: RunFolder) => run.info.status === 'completed' && hasResult(run);
  for (const pass of [false, true]) {
    for (const run of all) {
      const phase = run.info.phase;
      if (phase === 'probe' || chosen[phase] || imported(run) !== pass) continue;
      if (usable(run)) chosen[phase] = run;
    }
  }
  // A campaign often has a single-stream run and a sweep: the macro run to set beside the profile is
  // the newest one that ran the profiled batch as a concurrency level, where there is one.
  const batch = chosen.profile ? profiledBatch(chosen.profile) : undefined;
  if (batch !== undefined && chosen.macro && !hasLevel(chosen.macro, batch)) {
    const better = all.find((r) => r.info.phase === 'macro' && !imported(r) && usable(r) && hasLevel(r, batch))
      ?? all.find((r) => r.info.phase === 'macro' && usable(r) && hasLevel(r, batch));
    if (better) chosen.macro = better;
  }
  return chosen;
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
  const macro = selection.macro && macroResult !== undefined
    ? { runId: selection.macro.info.id, simulated: selection.macro.info.simulated, model: modelName(macroResult), levels: macroLevelsFrom(macroResult) }
    : undefined;
  const micro = selection.micro && microResult !== undefined
    ? { ...microInputFrom(selection.micro.info.id, microResult, selection.micro.info.options), simulated: selection.micro.info.simulated || undefined }
    : undefined;
  let profile = selection.profile && profileResult !== undefined ? profileInputFrom(selection.profile.info.id, profileResult, selection.profile.info.options) : undefined;
  if (selection.profile && profileResult !== undefined && !profile) {
    throw new ExplainError(`Profile run ${selection.profile.info.id} has a result without a decode-step breakdown (no step time or categories); re-run the profiler or re-analyse its traces.`);
  }
  if (profile && selection.profile?.info.simulated) profile = { ...profile, simulated: true };
  return buildBudget({ macro, micro, profile, model: options.model, batch: options.batch });
}

function modelName(result: unknown): string | undefined {
  if (typeof result === 'object' && result !== null && !Array.isArray(result)) {
    const r = result as Record<string, unknown>;
    const m = r.model ?? r.model_id;
    return typeof m === 'string' ? m : undefined;
  }
  return undefined;
}

/**
 * The waterfall for the results view: the budget from the workspace's newest completed runs, or
 * undefined when it has none of the three phases (the view then shows nothing rather than an error).
 */
export function budgetViewForWorkspace(workspace: string): Budget['view'] | undefined {
  try {
    const selection = selectRuns(workspace);
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
export function budgetFindingsForWorkspace(workspace: string): FindingsUpdate | undefined {
  try {
    const selection = selectRuns(workspace);
    if (!selection.macro && !selection.micro && !selection.profile) return undefined;
    return budgetFindings(explainRuns(selection));
  } catch {
    return undefined;
  }
}
