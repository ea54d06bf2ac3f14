import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { microChartData, MicroPoint } from '../micro/tables';
import { RunFolder, runDir, writeAtomic } from './runFolder';
import { MacroLevelSummary, RunSummary } from '../../shared/results';
import { viewableRun } from '../trace/profileView';

/** The file beside a run's result where the front end keeps the last RunSummary it drew. */
const VIEW_FILE = 'view.json';

/** Keeps a run's summary on disk so that the views draw it after a reload exactly as they did live. */
export function saveRunView(workspace: string, run: RunSummary): void {
  const dir = runDir(workspace, run.id);
  if (existsSync(dir)) writeAtomic(join(dir, VIEW_FILE), JSON.stringify(run));
}

/** The summary of a stored run: the saved view if there is one, else built from meta.json and result.json (runs made by the CLI). */
export function summaryOf(folder: RunFolder): RunSummary {
  const info = folder.info;
  const base: RunSummary = { id: info.id, phase: info.phase, target: info.target, startedAt: info.startedAt, status: info.status, reason: info.reason, simulated: info.simulated };
  const viewPath = join(folder.dir, VIEW_FILE);
  if (existsSync(viewPath)) {
    try {
      const view = JSON.parse(readFileSync(viewPath, 'utf8')) as RunSummary;
      // meta.json has the final word on status: the view may have been saved mid-run.
      return { ...view, ...base, headline: view.headline, simulated: view.simulated ?? info.simulated };
    } catch {
      // cut short by a crash: fall through to the result
    }
  }
  let result: Record<string, unknown> | undefined;
  try {
    result = folder.readResult<Record<string, unknown>>();
  } catch {
    result = undefined;
  }
  if (!result) return base;
  if (typeof result.headline === 'string') base.headline = result.headline;
  if (info.phase === 'macro' && Array.isArray(result.levels)) base.macro = { levels: result.levels as MacroLevelSummary[] };
  if (info.phase === 'micro' && Array.isArray(result.points)) {
    const points = result.points as MicroPoint[];
    base.micro = { points, ...microChartData(points, typeof result.device === 'string' ? result.device : undefined) };
  }
  if (info.phase === 'profile') base.profile = result;
  return viewableRun(base);
}

/** Stored runs, newest first, re-read only when a run folder's meta or view changed. */
export class StoredRuns {
  private readonly cache = new Map<string, { stamp: string; summary: RunSummary }>();

  constructor(private readonly workspace: () => string | undefined) {}

  list(): RunSummary[] {
    const root = this.workspace();
    if (!root) return [];
    return RunFolder.list(root).map((folder) => {
      const stamp = [join(folder.dir, 'meta.json'), join(folder.dir, VIEW_FILE), folder.resultPath].map((p) => (existsSync(p) ? statSync(p).mtimeMs : 0)).join(':');
      const cached = this.cache.get(folder.dir);
      if (cached?.stamp === stamp) return cached.summary;
      const summary = summaryOf(folder);
      this.cache.set(folder.dir, { stamp, summary });
      return summary;
    });
  }
}
