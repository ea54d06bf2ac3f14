import {
  accessSync,
  appendFileSync,
  closeSync,
  constants,
  existsSync,
  fstatSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readFileSync,
  readdirSync,
  renameSync,
  statSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { keptMacroResult } from './keptResult';
import { Hinted, RemedyWords, sayHint } from '../../shared/remedy';
import { currentOwner, ownerLiveness, RunOwner } from './runOwner';
import type { RunConfiguration } from '../../shared/results';
import { cleanEventText } from '../../shared/printable';

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
  /** The process writing the run, so that a run it never finished is known for dead once it is gone. */
  owner?: RunOwner;
  /** Set when the run was found still marked running after its process had ended (killed, out of memory). */
  died?: { pid: number; foundAt: string };
  /** The server configuration the run measured (serverConfiguration.ts); absent in runs made before runs recorded it. */
  configuration?: RunConfiguration;
}

/** The folder that holds every run of a workspace, `<workspace>/.inference-bench/runs`. */
export function runsRoot(workspace: string): string {
  return join(workspace, '.inference-bench', 'runs');
}

/** The folder of one run, `<workspace>/.inference-bench/runs/<id>`, whether or not it exists. */
export function runDir(workspace: string, runId: string): string {
  return join(runsRoot(workspace), runId);
}

/** A run folder's meta.json (id, phase, target, status, options). */
export function metaPath(dir: string): string {
  return join(dir, 'meta.json');
}

/** A run folder's result.json, written once the phase has its result. */
export function resultPath(dir: string): string {
  return join(dir, 'result.json');
}

/** A run folder (or a file the run writes) that cannot be written; the message says where and what to do. */
export class RunStorageError extends Error {
  /** What failed, and where else the runs could go as a remedy (`--workspace`), for each front end to say. */
  readonly hinted: Hinted;

  constructor(
    what: string,
    readonly code: string | undefined,
    /** The way out, with `{0}` where the remedy (another workspace) goes. */
    hint = '',
  ) {
    const hinted: Hinted = { message: what, hint, remedies: hint ? [{ kind: 'flag', flag: '--workspace', value: 'DIR' }] : undefined };
    super(storageWords(hinted));
    this.hinted = hinted;
    this.name = 'RunStorageError';
  }

  /** The message in a front end's words (the CLI's by default, as `message` has it). */
  said(words?: RemedyWords): string {
    return storageWords(this.hinted, words);
  }
}

function storageWords(h: Hinted, words?: RemedyWords): string {
  return h.hint ? `${h.message} ${sayHint(h.hint, h.remedies, words)}` : h.message;
}

/** Says in words why `path` could not be written: a full disk, a quota, a read-only file system, permissions. */
export function storageProblem(err: unknown, path: string): RunStorageError {
  if (err instanceof RunStorageError) return err;
  const code = (err as NodeJS.ErrnoException)?.code;
  const raw = err instanceof Error ? err.message : String(err);
  switch (code) {
    case 'ENOSPC':
      return new RunStorageError(
        `Disk full at ${path}: no space left on the device that holds ${dirname(path)}.`,
        code,
        'Free some space there, or keep the runs on another disk ({0}), and run again.',
      );
    case 'EDQUOT':
      return new RunStorageError(`Disk quota exceeded at ${path}.`, code, 'Free some of your space there, or keep the runs elsewhere ({0}), and run again.');
    case 'EROFS':
      return new RunStorageError(
        `${dirname(path)} is on a read-only file system, so ${path} cannot be written.`,
        code,
        'Keep the runs in a writable folder ({0}).',
      );
    case 'EACCES':
    case 'EPERM':
      return new RunStorageError(`No permission to write ${path}.`, code, 'Keep the runs in a folder you can write to ({0}).');
    default:
      return new RunStorageError(`Could not write ${path}: ${raw}`, code);
  }
}

/**
 * What one agent run writes as it goes: its event log (events.jsonl), its stderr (agent.log) and
 * its result (result.json). A run folder is one; each host of a cluster run has one of its own.
 */
export class AgentLog {
  /** The first write that failed (a full disk, say); from then on nothing more is written. */
  protected storageFailure?: RunStorageError;

  constructor(readonly dir: string) {}

  get eventLogPath(): string {
    return join(this.dir, 'events.jsonl');
  }

  get resultPath(): string {
    return resultPath(this.dir);
  }

  /** Why writing into the run folder failed, if it did; the run should stop, as nothing more is kept. */
  get storageProblem(): RunStorageError | undefined {
    return this.storageFailure;
  }

  /**
   * Appends one raw line to the event log; synchronous so that a crash right after still has it on
   * disk. A write that fails (a full disk) is cut back to the last whole line and throws a
   * RunStorageError; from then on nothing more is appended.
   */
  appendEvent(line: string): void {
    if (this.storageFailure) return;
    const data = Buffer.from(line.endsWith('\n') ? line : `${line}\n`);
    let fd: number | undefined;
    let before = 0;
    try {
      fd = openSync(this.eventLogPath, 'a');
      before = fstatSync(fd).size;
      for (let at = 0; at < data.length;) at += writeSync(fd, data, at, data.length - at);
    } catch (err) {
      if (fd !== undefined) {
        try {
          ftruncateSync(fd, before);
        } catch {
          // the log keeps a cut last line, which readEvents skips
        }
      }
      this.storageFailure = storageProblem(err, this.eventLogPath);
      throw this.storageFailure;
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
  }

  /** Agent stderr and stray stdout, kept for diagnosis; skipped once the disk is full. */
  appendNoise(text: string): void {
    if (this.storageFailure) return;
    try {
      appendFileSync(join(this.dir, 'agent.log'), text);
    } catch (err) {
      this.storageFailure = storageProblem(err, join(this.dir, 'agent.log'));
    }
  }

  readEvents(): unknown[] {
    if (!existsSync(this.eventLogPath)) return [];
    const out: unknown[] = [];
    for (const line of readFileSync(this.eventLogPath, 'utf8').split('\n')) {
      if (!line.trim()) continue;
      try {
        // A log an older agent wrote may carry a server's control characters raw: cleaned as the live stream is.
        out.push(cleanEventText(JSON.parse(line)));
      } catch {
        // a line cut by a crash mid-write
      }
    }
    return out;
  }

  /** Writes result.json; returns false (the reason in storageProblem) when it could not be written. */
  writeResult(result: unknown): boolean {
    try {
      writeAtomic(this.resultPath, JSON.stringify(result, null, 2));
      return true;
    } catch (err) {
      this.storageFailure ??= storageProblem(err, this.resultPath);
      return false;
    }
  }

  /** Called once the agent run has ended. */
  finish(status: RunStatus, reason?: string): void {
    writeAtomic(join(this.dir, 'status.json'), JSON.stringify({ status, reason }, null, 2));
  }
}

/**
 * One run on disk: `<workspace>/.inference-bench/runs/<time>-<phase>/` with the raw event log
 * (appended line by line as events arrive, so a dropped connection loses nothing), meta.json,
 * result.json and any fetched files such as traces.
 */
export class RunFolder extends AgentLog {
  private constructor(
    dir: string,
    private meta: RunMeta,
  ) {
    super(dir);
  }

  static create(workspace: string, phase: PhaseName, target: string, options: Record<string, unknown>, now = new Date()): RunFolder {
    const stamp = now.toISOString().replace(/[:.]/g, '-').replace('T', '_').replace('Z', '');
    let id = `${stamp}-${phase}`;
    for (let n = 2; existsSync(runDir(workspace, id)); n++) id = `${stamp}-${phase}-${n}`;
    const dir = runDir(workspace, id);
    try {
      mkdirSync(dir, { recursive: true });
    } catch (err) {
      throw workspaceProblem(err, workspace, dir);
    }
    const run = new RunFolder(dir, { id, phase, target, startedAt: now.toISOString(), status: 'running', options, owner: currentOwner() });
    run.saveMeta();
    if (run.storageFailure) throw run.storageFailure;
    return run;
  }

  static open(dir: string): RunFolder {
    const meta = JSON.parse(readFileSync(metaPath(dir), 'utf8')) as RunMeta;
    return new RunFolder(dir, meta);
  }

  /**
   * Every run under a workspace, newest first. Folders without a readable meta.json are skipped; a
   * run whose process died mid-run is marked so first.
   */
  static list(workspace: string): RunFolder[] {
    const root = runsRoot(workspace);
    if (!existsSync(root)) return [];
    const runs: RunFolder[] = [];
    for (const name of readdirSync(root).sort().reverse()) {
      try {
        markIfDied(join(root, name));
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

  readResult<T = unknown>(): T | undefined {
    if (!existsSync(this.resultPath)) return undefined;
    return JSON.parse(readFileSync(this.resultPath, 'utf8')) as T;
  }

  /** The log of one host's agent run inside this run (a cluster run), in `nodes/<name>/`. */
  nodeLog(name: string): AgentLog {
    const dir = join(this.dir, 'nodes', name.replace(/[^A-Za-z0-9._-]+/g, '_'));
    try {
      mkdirSync(dir, { recursive: true });
    } catch (err) {
      this.storageFailure ??= storageProblem(err, dir);
    }
    return new AgentLog(dir);
  }

  override finish(status: RunStatus, reason?: string, now = new Date()): void {
    this.meta = { ...this.meta, status, reason, finishedAt: now.toISOString() };
    this.saveMeta();
  }

  update(patch: Partial<RunMeta>): void {
    this.meta = { ...this.meta, ...patch };
    this.saveMeta();
  }

  private saveMeta(): void {
    const path = metaPath(this.dir);
    const text = JSON.stringify(this.meta, null, 2);
    try {
      writeAtomic(path, text);
    } catch (err) {
      // With the disk full a new file cannot be made, but the blocks meta.json holds can be
      // overwritten: the run's status must reach the disk whatever else did not. Without its
      // indentation the same meta is a third shorter, so a status and reason that would spill into
      // a block the file does not hold still fit.
      if (!overwriteInPlace(path, text) && !overwriteInPlace(path, JSON.stringify(this.meta))) this.storageFailure ??= storageProblem(err, path);
    }
  }
}

/** Why a run is marked interrupted when its process was found gone; says what is kept and what to do. */
export function diedReason(pid: number, lastSign: Date | undefined): string {
  const last = lastSign ? ` Its last write was at ${lastSign.toISOString().slice(0, 19).replace('T', ' ')} UTC.` : '';
  return (
    `The process (pid ${pid}) that ran it ended without finishing it: killed (SIGKILL, or the out-of-memory killer) or crashed.${last} ` +
    'The results it had received are kept. Run it again to measure the rest; `dmesg` or `journalctl -k` shows an out-of-memory kill.'
  );
}

/** When the run last wrote anything: its event log or meta.json, whichever is newer. */
function lastWrite(dir: string): Date | undefined {
  let newest: number | undefined;
  for (const file of [join(dir, 'events.jsonl'), metaPath(dir)]) {
    try {
      newest = Math.max(newest ?? 0, statSync(file).mtimeMs);
    } catch {
      // not written yet
    }
  }
  return newest === undefined ? undefined : new Date(newest);
}

/**
 * Marks the run in `dir` interrupted when meta.json still says running but the process that wrote
 * it has ended (its pid gone, or taken by a process that started later). Returns the new meta when
 * it did; runs of live processes, of another machine, or made before owners were recorded are left.
 */
export function markIfDied(dir: string, now = new Date()): RunMeta | undefined {
  const read = (): RunMeta | undefined => {
    try {
      return JSON.parse(readFileSync(metaPath(dir), 'utf8')) as RunMeta;
    } catch {
      return undefined;
    }
  };
  const before = read();
  if (before?.status !== 'running' || ownerLiveness(before.owner) !== 'dead') return undefined;
  // Read again now that the owner is known gone: it may have finished the run just before it ended.
  const meta = read();
  if (meta?.status !== 'running' || !meta.owner) return undefined;
  const lastSign = lastWrite(dir);
  const marked: RunMeta = {
    ...meta,
    status: 'interrupted',
    reason: diedReason(meta.owner.pid, lastSign),
    finishedAt: (lastSign ?? now).toISOString(),
    died: { pid: meta.owner.pid, foundAt: now.toISOString() },
  };
  try {
    // A macro run writes result.json only at its end: the levels it had received are kept in one now.
    const kept = meta.phase === 'macro' && !existsSync(resultPath(dir)) ? keptMacroResult(new AgentLog(dir).readEvents(), marked.reason!) : undefined;
    if (kept) writeAtomic(resultPath(dir), JSON.stringify(kept, null, 2));
    writeAtomic(metaPath(dir), JSON.stringify(marked, null, 2));
  } catch {
    // A workspace that cannot be written: the run is still shown as dead, and marked on disk next time.
  }
  return marked;
}

function overwriteInPlace(path: string, content: string): boolean {
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r+');
    const data = Buffer.from(content);
    // Only into blocks the file already holds (st_blocks counts 512-byte units): a write past them
    // needs a block the full disk does not have, and would leave the file cut.
    const st = fstatSync(fd);
    if (data.length > Math.max(st.blocks * 512, st.blksize)) return false;
    for (let at = 0; at < data.length;) at += writeSync(fd, data, at, data.length - at, at);
    ftruncateSync(fd, data.length);
    return true;
  } catch {
    return false;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** Writes a temp file and renames it over `path`; the temp file never outlives a failed write. */
export function writeAtomic(path: string, content: string): void {
  const tmp = `${path}.${process.pid}.tmp`;
  try {
    writeFileSync(tmp, content);
    renameSync(tmp, path);
  } catch (err) {
    if (existsSync(tmp)) unlinkSync(tmp);
    throw err;
  }
}

/** Why the run folder could not be made: a read-only workspace says so (mkdir reports ENOENT on a read-only mount). */
function workspaceProblem(err: unknown, workspace: string, dir: string): RunStorageError {
  if (!existsSync(workspace))
    return new RunStorageError(`The workspace folder ${workspace} does not exist.`, 'ENOENT', 'Create it, or keep the runs in an existing folder ({0}).');
  try {
    accessSync(workspace, constants.W_OK);
  } catch (access) {
    const code = (access as NodeJS.ErrnoException).code;
    return new RunStorageError(
      `The workspace folder ${workspace} is read-only${code === 'EROFS' ? ' (a read-only file system)' : ''}, so the run folder ${dir} cannot be made there.`,
      code,
      'Run from a writable folder ({0}).',
    );
  }
  return storageProblem(err, dir);
}
