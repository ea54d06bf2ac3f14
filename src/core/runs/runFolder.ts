import { appendFileSync, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export type PhaseName = 'macro' | 'micro' | 'profile' | 'probe';
export type RunStatus = 'running' | 'completed' | 'failed' | 'interrupted' | 'cancelled';

/** What a run folder's meta.json holds. */
export interface RunMeta {
  id: string;
  phase: PhaseName;
  target: string;
  startedAt: string;
  finishedAt?: string;
  status: RunStatus;
  /** Why a run did not complete, in words a user can act on. */
  reason?: string;
  /** The settings the phase ran with, so the run can be repeated. */
  options: Record<string, unknown>;
  /** Set by a simulator target so that nobody mistakes its numbers for a real server's. */
  simulated?: boolean;
}

const RUNS_DIR = join('.inference-bench', 'runs');

/**
 * One run on disk: `<workspace>/.inference-bench/runs/<time>-<phase>/` with the raw event log
 * (appended line by line as events arrive, so a dropped connection loses nothing), meta.json,
 * result.json and any fetched files such as traces.
 */
export class RunFolder {
  private constructor(readonly dir: string, private meta: RunMeta) {}

  static create(workspace: string, phase: PhaseName, target: string, options: Record<string, unknown>, now = new Date()): RunFolder {
    const stamp = now.toISOString().replace(/[:.]/g, '-').replace('T', '_').replace('Z', '');
    let id = `${stamp}-${phase}`;
    const root = join(workspace, RUNS_DIR);
    for (let n = 2; existsSync(join(root, id)); n++) id = `${stamp}-${phase}-${n}`;
    const dir = join(root, id);
    mkdirSync(dir, { recursive: true });
    const run = new RunFolder(dir, { id, phase, target, startedAt: now.toISOString(), status: 'running', options });
    run.saveMeta();
    return run;
  }

  static open(dir: string): RunFolder {
    const meta = JSON.parse(readFileSync(join(dir, 'meta.json'), 'utf8')) as RunMeta;
    return new RunFolder(dir, meta);
  }

  /** Every run under a workspace, newest first. Folders without a readable meta.json are skipped. */
  static list(workspace: string): RunFolder[] {
    const root = join(workspace, RUNS_DIR);
    if (!existsSync(root)) return [];
    const runs: RunFolder[] = [];
    for (const name of readdirSync(root).sort().reverse()) {
      try {
        runs.push(RunFolder.open(join(root, name)));
      } catch {
        // not a run folder, or one being created right now
      }
    }
    return runs;
  }

  get info(): Readonly<RunMeta> {
    return this.meta;
  }

  get eventLogPath(): string {
    return join(this.dir, 'events.jsonl');
  }

  get resultPath(): string {
    return join(this.dir, 'result.json');
  }

  /** Appends one raw line to the event log; synchronous so that a crash right after still has it on disk. */
  appendEvent(line: string): void {
    appendFileSync(this.eventLogPath, line.endsWith('\n') ? line : `${line}\n`);
  }

  /** Agent stderr and stray stdout, kept for diagnosis. */
  appendNoise(text: string): void {
    appendFileSync(join(this.dir, 'agent.log'), text);
  }

  readEvents(): unknown[] {
    if (!existsSync(this.eventLogPath)) return [];
    const out: unknown[] = [];
    for (const line of readFileSync(this.eventLogPath, 'utf8').split('\n')) {
      if (!line.trim()) continue;
      try {
        out.push(JSON.parse(line));
      } catch {
        // a line cut by a crash mid-write
      }
    }
    return out;
  }

  writeResult(result: unknown): void {
    writeAtomic(this.resultPath, JSON.stringify(result, null, 2));
  }

  readResult<T = unknown>(): T | undefined {
    if (!existsSync(this.resultPath)) return undefined;
    return JSON.parse(readFileSync(this.resultPath, 'utf8')) as T;
  }

  finish(status: RunStatus, reason?: string, now = new Date()): void {
    this.meta = { ...this.meta, status, reason, finishedAt: now.toISOString() };
    this.saveMeta();
  }

  update(patch: Partial<RunMeta>): void {
    this.meta = { ...this.meta, ...patch };
    this.saveMeta();
  }

  private saveMeta(): void {
    writeAtomic(join(this.dir, 'meta.json'), JSON.stringify(this.meta, null, 2));
  }
}

export function writeAtomic(path: string, content: string): void {
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, content);
  renameSync(tmp, path);
}
