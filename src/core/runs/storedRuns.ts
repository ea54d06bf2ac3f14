import { existsSync } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { microChartData, MicroPoint } from '../micro/tables';
import { markIfDied, metaPath, resultPath, RunMeta, runDir, runsRoot, writeAtomic } from './runFolder';
import { ownerLiveness, RunOwner } from './runOwner';
import { MacroLevelSummary, RunSummary } from '../../shared/results';
import { viewableRun } from '../trace/profileView';
import { requestPointsOfLog } from './requestTrace';
import { probeView } from '../probe/tables';
import { ProbeResult } from '../../remote/agentProtocol';

/** The file beside a run's result where the front end keeps the last RunSummary it drew. */
const VIEW_FILE = 'view.json';

/** Keeps a run's summary on disk so that the views draw it after a reload exactly as they did live. */
export function saveRunView(workspace: string, run: RunSummary): void {
  const dir = runDir(workspace, run.id);
  if (existsSync(dir)) writeAtomic(join(dir, VIEW_FILE), JSON.stringify(run));
}

/** The summary of a stored run: the saved view if there is one, else built from meta.json and result.json (runs made by the CLI). */
export function storedSummary(info: RunMeta, view: RunSummary | undefined, result: Record<string, unknown> | undefined): RunSummary {
  const base: RunSummary = {
    id: info.id,
    phase: info.phase,
    target: info.target,
    startedAt: info.startedAt,
    status: info.status,
    reason: info.reason,
    simulated: info.simulated,
    // The configuration the run measured: meta.json's (every run made since runs record it), else the view's.
    ...(info.configuration || view?.configuration ? { configuration: info.configuration ?? view?.configuration } : {}),
  };
  // meta.json has the final word on status: the view may have been saved mid-run.
  if (view) return { ...view, ...base, headline: view.headline, simulated: view.simulated ?? info.simulated };
  if (!result) return base;
  if (typeof result.headline === 'string') base.headline = result.headline;
  if (info.phase === 'macro' && Array.isArray(result.levels)) base.macro = { levels: result.levels as MacroLevelSummary[] };
  if (info.phase === 'micro' && Array.isArray(result.points)) {
    const points = result.points as MicroPoint[];
    base.micro = { points, ...microChartData(points, typeof result.device === 'string' ? result.device : undefined) };
  }
  if (info.phase === 'profile') base.profile = result;
  if (info.phase === 'probe' && result.server && result.gpus && result.python) base.probe = probeView(result as unknown as ProbeResult);
  return viewableRun(base);
}

/** A JSON file's content; undefined when it is absent or cut short (a crash mid-write, or written right now). */
async function readJson<T>(path: string): Promise<T | undefined> {
  try {
    return JSON.parse(await readFile(path, 'utf8')) as T;
  } catch {
    return undefined;
  }
}

/** One stored run read from its folder without blocking; undefined for a folder with no readable meta.json. */
export async function readStoredRun(dir: string): Promise<RunSummary | undefined> {
  return (await readStored(dir))?.summary;
}

/**
 * A stored run's summary and, while it is marked running, the process that runs it. A run whose
 * process died is marked so first (`died` set).
 */
async function readStored(dir: string): Promise<{ summary: RunSummary; owner?: RunOwner; died?: boolean } | undefined> {
  let info = await readJson<RunMeta>(metaPath(dir));
  if (!info) return undefined;
  const marked = info.status === 'running' ? markIfDied(dir) : undefined;
  info = marked ?? info;
  const view = await readJson<RunSummary>(join(dir, VIEW_FILE));
  const summary = storedSummary(info, view, view ? undefined : await readJson<Record<string, unknown>>(resultPath(dir)));
  // A macro run the CLI made keeps no view: its requests (latency over time, the timeline) come from its event log.
  if (!view && summary.macro && !summary.macro.requests) {
    const log = await readFile(join(dir, 'events.jsonl'), 'utf8').catch(() => '');
    const requests = requestPointsOfLog(log);
    if (requests.length) summary.macro = { ...summary.macro, requests };
  }
  return { summary, owner: info.status === 'running' ? info.owner : undefined, died: !!marked };
}

/** What changes when a run folder's meta, view or result is written: their times and sizes. */
async function stampOf(dir: string): Promise<string | undefined> {
  const [meta, view, result] = await Promise.all([metaPath(dir), join(dir, VIEW_FILE), resultPath(dir)].map((p) => stat(p).catch(() => undefined)));
  // No meta.json: not a run folder, or one being created right now.
  if (!meta?.isFile()) return undefined;
  return [meta, view, result].map((s) => (s ? `${s.mtimeMs}/${s.size}` : '-')).join(':');
}

/**
 * A workspace's stored runs, newest first, for views that redraw often: read with fs.promises, so
 * the extension host never waits on the disk, and a folder is read again only when its meta, view
 * or result changed.
 */
export class StoredRuns {
  private readonly cache = new Map<string, { stamp: string; summary: RunSummary; owner?: RunOwner }>();
  private listed: RunSummary[] = [];
  private died: string[] = [];
  private waiting: Promise<boolean> | undefined;
  private last: Promise<unknown> = Promise.resolve();

  constructor(private readonly workspace: () => string | undefined) {}

  /** The runs as the last refresh found them. */
  get runs(): readonly RunSummary[] {
    return this.listed;
  }

  /** The folders of the runs that refreshes found dead (and marked so) since the last call. */
  takeDied(): string[] {
    return this.died.splice(0);
  }

  /** Reads the runs folder again; true when the list changed. */
  refresh(): Promise<boolean> {
    // Callers that come while a read waits its turn share it: it starts after each of their calls,
    // so it sees what a read of their own would have seen.
    if (!this.waiting) {
      const next = this.last.then(() => {
        this.waiting = undefined;
        return this.read();
      });
      this.waiting = next;
      this.last = next.catch(() => undefined);
    }
    return this.waiting;
  }

  private async read(): Promise<boolean> {
    const workspace = this.workspace();
    const root = workspace ? runsRoot(workspace) : undefined;
    let names: string[] = [];
    try {
      if (root) names = await readdir(root);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    const dirs = names
      .sort()
      .reverse()
      .map((name) => join(root!, name));
    const found = await Promise.all(dirs.map((dir) => this.summaryOf(dir)));
    const listed = found.filter((r): r is RunSummary => r !== undefined);
    const kept = new Set(dirs);
    for (const dir of this.cache.keys()) if (!kept.has(dir)) this.cache.delete(dir);
    // An unchanged folder gives back its cached summary, so the same objects mean the same list.
    const changed = listed.length !== this.listed.length || listed.some((r, i) => r !== this.listed[i]);
    this.listed = listed;
    return changed;
  }

  private async summaryOf(dir: string): Promise<RunSummary | undefined> {
    const stamp = await stampOf(dir);
    if (!stamp) return undefined;
    const cached = this.cache.get(dir);
    // A running run's folder may not change when its process dies (SIGKILL): that is checked each time.
    if (cached?.stamp === stamp && ownerLiveness(cached.owner) !== 'dead') return cached.summary;
    const stored = await readStored(dir);
    // A half-written meta.json is not kept: the next refresh reads it again.
    if (stored) this.cache.set(dir, { stamp, summary: stored.summary, owner: stored.owner });
    else this.cache.delete(dir);
    if (stored?.died) this.died.push(dir);
    return stored?.summary;
  }
}
