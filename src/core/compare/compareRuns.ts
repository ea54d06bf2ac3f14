// `infbench compare RUN_A RUN_B`: finds the two run folders, checks they are of one phase, and
// compares them with the phase's rules.
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { macroLevelsFrom, microInputFrom, profileInputFrom } from '../explain/inputs';
import { metaPath, RunFolder, runsRoot } from '../runs/runFolder';
import { configurationDifferences, configurationOfRun, describeConfiguration, isKnown } from '../runs/serverConfiguration';
import { compareMacro } from './macro';
import { compareMicro } from './micro';
import { compareProfiles } from './profile';
import { Comparison, RunRef } from './types';

export class CompareError extends Error {}

/** A run by folder path, by id, or by a unique start of its id, among the workspace's runs. */
export function findRun(workspace: string, ref: string): RunFolder {
  const asPath = resolve(ref);
  if (existsSync(metaPath(asPath))) return RunFolder.open(asPath);
  const all = RunFolder.list(workspace);
  const exact = all.find((r) => r.info.id === ref);
  if (exact) return exact;
  const prefixed = all.filter((r) => r.info.id.startsWith(ref));
  if (prefixed.length === 1) return prefixed[0];
  if (prefixed.length > 1)
    throw new CompareError(
      `"${ref}" matches ${prefixed.length} runs (${prefixed
        .slice(0, 3)
        .map((r) => r.info.id)
        .join(', ')}...); give more of the id.`,
    );
  throw new CompareError(`No run "${ref}" in ${runsRoot(workspace)}. Pass a run folder's name or path; \`ls .inference-bench/runs\` lists them.`);
}

export function runRef(run: RunFolder): RunRef {
  const info = run.info;
  const c = configurationOfRun(info);
  const config = info.configuration ? `, configuration ${isKnown(c) ? `${c.name} (${c.id})` : 'unknown'}` : '';
  return {
    id: info.id,
    label: `${info.phase} run ${info.id} on ${info.target}${config}${info.simulated ? ' (simulator)' : ''}`,
    simulated: info.simulated,
    configuration: info.configuration,
  };
}

/**
 * What a comparison must say first when its runs measured different server configurations: every
 * difference it finds includes the configuration's change (the point of a configurations comparison,
 * a confound anywhere else). Undefined when both measured the same one.
 */
export function configurationNote(runA: RunFolder, runB: RunFolder): string | undefined {
  const a = configurationOfRun(runA.info);
  const b = configurationOfRun(runB.info);
  if (a.id === b.id) return undefined;
  if (isKnown(a) && isKnown(b)) {
    const changes = configurationDifferences(a, b);
    return `These runs measured two server configurations: A ${describeConfiguration(a)}, B ${describeConfiguration(b)}${
      changes.length ? ` (B ${changes.join(', ')})` : ''
    }. Every difference below includes that change, not only noise or the workload.`;
  }
  const unknown = isKnown(a) ? 'B' : isKnown(b) ? 'A' : 'A and B';
  const why = (isKnown(a) ? b : a).unknownReason;
  return `The server configuration of ${unknown} is not known (${why ?? 'no recipe adopted'}): the differences below may include a change of the server's flags or environment.`;
}

export function compareRunFolders(runA: RunFolder, runB: RunFolder): Comparison {
  const a = runA.info;
  const b = runB.info;
  if (a.phase !== b.phase) {
    throw new CompareError(
      `${a.id} is a ${a.phase} run and ${b.id} a ${b.phase} run; compare two runs of the same phase (for the three phases together, use \`infbench explain\`).`,
    );
  }
  const resultOf = (run: RunFolder) => {
    let result: unknown;
    try {
      result = run.readResult();
    } catch (err) {
      throw new CompareError(`The result of ${run.info.id} is not readable JSON (${(err as Error).message}).`);
    }
    if (result === undefined) {
      throw new CompareError(
        `${run.info.id} has no result.json (status: ${run.info.status}${run.info.reason ? `, ${run.info.reason}` : ''}); it ended before its result was written. Compare a completed run.`,
      );
    }
    return result;
  };
  const ra = resultOf(runA);
  const rb = resultOf(runB);
  const compared = compareResults(runA, runB, ra, rb);
  const note = configurationNote(runA, runB);
  return note ? { ...compared, summary: [note, ...compared.summary], configurations: note } : compared;
}

function compareResults(runA: RunFolder, runB: RunFolder, ra: unknown, rb: unknown): Comparison {
  const a = runA.info;
  const b = runB.info;
  switch (a.phase) {
    case 'macro': {
      const la = macroLevelsFrom(ra);
      const lb = macroLevelsFrom(rb);
      if (!la.length || !lb.length) throw new CompareError(`${!la.length ? a.id : b.id} has no load levels in its result.`);
      return compareMacro(runRef(runA), la as unknown as Record<string, unknown>[], runRef(runB), lb as unknown as Record<string, unknown>[]);
    }
    case 'profile': {
      const pa = profileInputFrom(a.id, ra, a.options);
      const pb = profileInputFrom(b.id, rb, b.options);
      if (!pa || !pb) throw new CompareError(`${!pa ? a.id : b.id} has no decode-step breakdown in its result; re-analyse its traces.`);
      return compareProfiles(runRef(runA), pa, runRef(runB), pb);
    }
    case 'micro':
      return compareMicro(runRef(runA), microInputFrom(a.id, ra, a.options), runRef(runB), microInputFrom(b.id, rb, b.options));
    default:
      throw new CompareError(`${a.phase} runs have nothing to compare; compare macro, micro or profile runs.`);
  }
}
