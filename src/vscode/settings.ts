import * as vscode from 'vscode';
import { sloProblem } from '../core/macro/sloSearch';
import { parseTarget, SettingsError, Target } from '../core/config/target';
import { parseTraceSettings } from '../core/config/traceSettings';
import { findingsPathInWorkspace } from '../core/findings/location';
import { defaultFindingsDocument } from '../core/findings/campaignName';
import { TraceAnalysisOptions } from '../core/trace/types';

export const SECTION = 'inferenceBench';

/** Settings are read here and nowhere else; malformed entries become messages, not crashes. */
export interface Settings {
  targets: Target[];
  /** Messages about targets that could not be read, one per bad entry. */
  problems: string[];
  findingsDocument: string;
  /** Open a Markdown preview of the findings document beside it when the tool shows it. */
  findingsPreview: boolean;
  /** The user's kernel families and step annotation for trace analysis. */
  traceAnalysis: TraceAnalysisOptions;
  /** Seconds one macro request may take before it fails as a timeout. */
  requestTimeoutS: number;
  /** Seconds a macro stream may send nothing before it fails as stalled; 0: off. */
  stallTimeoutS: number;
  /** Runs of each macro load (figures then mean ± 95% interval); 1: no repeats. */
  macroTrials: number;
  /** Objectives each macro load is judged on ("ttft_p99<=2000,tpot_p99<=50"); empty: none. */
  macroSlo?: string;
  /** Which profiler the profiler phase uses; `profilerSet` when the user chose it in a setting (then it is not asked). */
  profiler: ProfilerKind;
  profilerSet: boolean;
}

export type ProfilerKind = 'torch' | 'nsys';

export function readSettings(): Settings {
  const config = vscode.workspace.getConfiguration(SECTION);
  const rawTargets = config.get<unknown>('targets', []);
  const targets: Target[] = [];
  const problems: string[] = [];
  if (!Array.isArray(rawTargets)) {
    problems.push(`${SECTION}.targets must be a list of targets.`);
  } else {
    rawTargets.forEach((raw, i) => {
      try {
        targets.push(parseTarget(raw, `${SECTION}.targets[${i}]`));
      } catch (err) {
        problems.push(err instanceof SettingsError ? err.message : String(err));
      }
    });
  }
  let traceAnalysis: TraceAnalysisOptions = {};
  try {
    traceAnalysis = parseTraceSettings(config.get<unknown>('kernelFamilies'), config.get<unknown>('stepAnnotation'), SECTION);
  } catch (err) {
    problems.push(err instanceof SettingsError ? err.message : String(err));
  }
  let requestTimeoutS = config.get<unknown>('requestTimeout', 600);
  if (typeof requestTimeoutS !== 'number' || !(requestTimeoutS > 0) || !Number.isFinite(requestTimeoutS)) {
    problems.push(`${SECTION}.requestTimeout must be a number of seconds above 0; got ${JSON.stringify(requestTimeoutS)}. Using 600.`);
    requestTimeoutS = 600;
  }
  let stallTimeoutS = config.get<unknown>('stallTimeout', 60);
  if (typeof stallTimeoutS !== 'number' || !(stallTimeoutS >= 0) || !Number.isFinite(stallTimeoutS)) {
    problems.push(`${SECTION}.stallTimeout must be a number of seconds, 0 or more (0: off); got ${JSON.stringify(stallTimeoutS)}. Using 60.`);
    stallTimeoutS = 60;
  }
  let macroTrials = config.get<unknown>('macroTrials', 1);
  if (typeof macroTrials !== 'number' || !Number.isInteger(macroTrials) || macroTrials < 1) {
    problems.push(`${SECTION}.macroTrials must be a whole number, at least 1; got ${JSON.stringify(macroTrials)}. Using 1.`);
    macroTrials = 1;
  }
  let macroSlo: string | undefined = String(config.get<unknown>('macroSlo', '') ?? '').trim() || undefined;
  const sloWrong = macroSlo ? sloProblem(macroSlo) : undefined;
  if (sloWrong) {
    problems.push(`${SECTION}.macroSlo: ${sloWrong}. Judging no objective.`);
    macroSlo = undefined;
  }
  const profilerSetting = config.inspect<unknown>('profiler');
  const profilerSet = [profilerSetting?.globalValue, profilerSetting?.workspaceValue, profilerSetting?.workspaceFolderValue].some((v) => v !== undefined);
  let profiler = config.get<unknown>('profiler', 'torch');
  if (profiler !== 'torch' && profiler !== 'nsys') {
    problems.push(`${SECTION}.profiler must be "torch" or "nsys"; got ${JSON.stringify(profiler)}. Using torch.`);
    profiler = 'torch';
  }
  return {
    targets,
    problems,
    findingsDocument: config.get<string>('findingsDocument', '').trim(),
    findingsPreview: config.get<boolean>('findingsPreview', true) !== false,
    traceAnalysis,
    requestTimeoutS: requestTimeoutS as number,
    stallTimeoutS: stallTimeoutS as number,
    macroTrials: macroTrials as number,
    macroSlo,
    profiler: profiler as ProfilerKind,
    profilerSet,
  };
}

export function workspaceRoot(): string | undefined {
  return vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
}

/** The findings document in the workspace; undefined without a folder. A setting naming a file outside it is refused. */
export function findingsDocumentPath(settings: Settings): string | undefined {
  const root = workspaceRoot();
  if (!root) return undefined;
  // Unset, the campaign's model and hardware name it (k25b6000bench1.md), found again each time.
  const file = findingsPathInWorkspace(root, settings.findingsDocument || defaultFindingsDocument(root));
  if (!file) {
    throw new SettingsError(
      `${SECTION}.findingsDocument is "${settings.findingsDocument}", outside the workspace folder ${root}: Inference Bench writes only findings documents of the workspace. ` +
        'Set it to a path inside the folder, or clear it to name the document after the campaign (model, GPU, bench number).',
    );
  }
  return file;
}

export async function addTargetToSettings(target: Record<string, unknown>): Promise<void> {
  const config = vscode.workspace.getConfiguration(SECTION);
  const current = config.get<unknown[]>('targets', []);
  const scope = vscode.workspace.workspaceFolders?.length ? vscode.ConfigurationTarget.Workspace : vscode.ConfigurationTarget.Global;
  await config.update('targets', [...(Array.isArray(current) ? current : []), target], scope);
}

/**
 * Replaces the target named `name` in the targets setting with `next` (or removes it), in the
 * scope that holds it (workspace first), keeping the user's other entries exactly as written.
 */
export async function replaceTargetInSettings(name: string, next: Record<string, unknown> | undefined): Promise<void> {
  const config = vscode.workspace.getConfiguration(SECTION);
  const inspected = config.inspect<unknown[]>('targets');
  const scopes: [vscode.ConfigurationTarget, unknown[] | undefined][] = [
    [vscode.ConfigurationTarget.WorkspaceFolder, inspected?.workspaceFolderValue],
    [vscode.ConfigurationTarget.Workspace, inspected?.workspaceValue],
    [vscode.ConfigurationTarget.Global, inspected?.globalValue],
  ];
  for (const [scope, list] of scopes) {
    if (!Array.isArray(list)) continue;
    const i = list.findIndex((t) => typeof t === 'object' && t !== null && (t as { name?: unknown }).name === name);
    if (i < 0) continue;
    const updated = next ? list.map((t, j) => (j === i ? next : t)) : list.filter((_, j) => j !== i);
    await config.update('targets', updated, scope);
    return;
  }
  throw new Error(`no target named "${name}" in the ${SECTION}.targets setting`);
}
