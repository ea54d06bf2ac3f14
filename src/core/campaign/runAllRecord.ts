// Where Run All keeps its plan (one file per target under the runs folder), and what the plan's
// estimates read from the workspace: the target's stored runs (the server's times are server/serverTimes.ts).
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { RunFolder, runsRoot, writeAtomic } from '../runs/runFolder';
import { PastRun, RunAllRecord } from './runAllPlan';
import { RunnablePhase } from './runnablePhase';

/** `<workspace>/.inference-bench/runs/run-all/<target>.json`: no meta.json, so no listing takes it for a run. */
export function runAllRecordPath(workspace: string, target: string): string {
  return join(runsRoot(workspace), 'run-all', `${target.replace(/[^A-Za-z0-9._-]+/g, '_')}.json`);
}

export function readRunAllRecord(workspace: string, target: string): RunAllRecord | undefined {
  try {
    const record = JSON.parse(readFileSync(runAllRecordPath(workspace, target), 'utf8')) as RunAllRecord;
    return record.version === 1 && record.target === target && Array.isArray(record.steps) ? record : undefined;
  } catch {
    return undefined; // none yet, or not one this version reads
  }
}

/** Written whole or not at all: a window closed mid-write leaves the previous record. */
export function writeRunAllRecord(workspace: string, record: RunAllRecord): void {
  const path = runAllRecordPath(workspace, record.target);
  mkdirSync(join(path, '..'), { recursive: true });
  writeAtomic(path, `${JSON.stringify(record, null, 2)}\n`);
}

const PHASES: readonly string[] = ['probe', 'macro', 'micro', 'profile'];

/** The target's stored runs, with each macro run's levels, for the plan's estimates. */
export function pastRuns(workspace: string, target: string): PastRun[] {
  const out: PastRun[] = [];
  for (const run of RunFolder.list(workspace)) {
    const m = run.info;
    if (m.target !== target || !PHASES.includes(m.phase)) continue;
    let levels: PastRun['levels'];
    if (m.phase === 'macro') {
      try {
        levels = run.readResult<{ levels?: PastRun['levels'] }>()?.levels;
      } catch {
        // a result being written
      }
    }
    out.push({ id: m.id, phase: m.phase as RunnablePhase, status: m.status, startedAt: m.startedAt, finishedAt: m.finishedAt, levels });
  }
  return out;
}
