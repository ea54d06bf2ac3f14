import {
  accessSync,
  BigIntStats,
  chmodSync,
  closeSync,
  constants,
  fstatSync,
  linkSync,
  lstatSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  renameSync,
  statSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { hostname } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { FindingsUpdate } from './findingsUpdate';
import { decodeDocument, encodeDocument } from './bytes';
import { fileTypeProblem, findingsFileProblem, realPathOf } from './location';
import { ProbeInfo, renderSkeleton } from './skeleton';
import { applyFindingsUpdate, ApplyOptions, FindingsEdit } from './update';

// The findings document as a file on disk, for the CLI and for a document no editor has open.
// Runs of the tool take turns through a lock file beside the document, so only editors race a write.
// An editor saves in place (truncate, then write) or by renaming a new file over the document (vim
// also renames the old one to a backup first). So a write never replaces a file it has not read:
//   1. read the document through a descriptor once it holds still;
//   2. write the new text to a sibling temp file;
//   3. rename the document aside (atomic: whatever the path names now is taken, nothing is lost);
//   4. if the taken file's bytes are the ones read, link the temp file in (link never replaces:
//      a file an editor created meanwhile wins); otherwise link the taken file back, and start over;
//   5. check the inode read once more: an in-place save through a descriptor opened before step 3
//      lands there, and is merged again.
// The document is missing for the microseconds between steps 3 and 4, as during a vim save.
// What is left open: an in-place save that stops mid-write for longer than the settle time and
// resumes only after step 5 is read half-way, and its rest goes to the replaced inode; so does a
// write, after step 5, through a descriptor opened before step 3 without truncating (O_TRUNC would
// show at step 4). The settle time is 10 ms, or 200 ms for a file that is empty, shorter than the
// longest text seen or (none seen yet) ends mid-line.

/** A findings document the tool must leave alone this time; the message says why and what to do. */
export class FindingsDiskError extends Error {
  constructor(
    message: string,
    readonly level: 'warn' | 'error',
    /** The file was found empty though it held text a moment ago: asked once, it is the user's from the next update on. */
    readonly emptied = false,
  ) {
    super(message);
  }
}

export interface DiskApplyOptions extends ApplyOptions {
  /** The text the caller last saw in the file (read or written): a file that is suddenly empty is not taken as the user's. */
  previousText?: string;
  /** The workspace the document's real path (symlinks resolved) must stay inside, checked before every write. */
  workspace?: string;
}

export interface DiskFindingsEdit extends FindingsEdit {
  /** The file's text after this call (what was written, or what was read when nothing changed). */
  diskText: string;
}

// A read is trusted once the file held still this long (an in-place save takes a few ms).
const SETTLE_MS = 10;
// An empty file, or one that shrank, must hold still longer before it is taken as the user's.
export const CUT_SETTLE_MS = 200;
const MAX_ATTEMPTS = 60;
// How long a run waits for another run's write (each takes milliseconds, or a few settle waits).
const LOCK_WAIT_MS = 30_000;
// A lock this old is taken as left behind even when its owner's process cannot be checked (another host).
const LOCK_STALE_MS = 60_000;

function tempPath(file: string, what = 'tmp'): string {
  return join(dirname(file), `.${basename(file)}.${process.pid}.${Math.random().toString(36).slice(2, 8)}.${what}`);
}

function pause(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function sameVersion(a: BigIntStats, b: BigIntStats): boolean {
  return a.ino === b.ino && a.dev === b.dev && a.size === b.size && a.mtimeNs === b.mtimeNs && a.ctimeNs === b.ctimeNs;
}

function unlinkQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // already gone
  }
}

/** The document's real path (symlinks resolved), or an error when it lies outside the workspace or is not a regular file. */
function checkedPath(file: string, workspace: string | undefined): string {
  const problem = workspace ? findingsFileProblem(workspace, file) : undefined;
  let real: string | undefined;
  try {
    real = realPathOf(file);
  } catch {
    // a dangling link or a loop: said below
  }
  const why = problem ?? (real ? fileTypeProblem(real) : `${file} is a symlink that leads nowhere`);
  if (why || !real) {
    throw new FindingsDiskError(
      `The findings document ${file} is not written: ${why}. Inference Bench writes only regular files inside the workspace; ` +
        "give a plain file of the workspace (the CLI's --findings, or the setting inferenceBench.findingsDocument). The results are in the run folder either way.",
      'error',
    );
  }
  return real;
}

/**
 * Opens the document for reading without ever blocking (a FIFO would wait for a writer forever)
 * and without following a symlink swapped in since the path was checked; only a regular file is kept open.
 */
function openRegular(real: string): number {
  const fd = openSync(real, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
  if (!fstatSync(fd).isFile()) {
    closeSync(fd);
    throw new FindingsDiskError(
      `The findings document ${real} is not written: ${fileTypeProblem(real) ?? 'it is not a regular file'}. Give a plain file of the workspace instead.`,
      'error',
    );
  }
  return fd;
}

/** The document's text for reading only (result tables), or undefined when it is absent or not a regular file. */
export function readFindingsText(file: string): string | undefined {
  let fd: number;
  try {
    fd = openRegular(realPathOf(file));
  } catch {
    return undefined;
  }
  try {
    return decodeDocument(readAll(fd));
  } finally {
    closeSync(fd);
  }
}

/**
 * Writes the skeleton if the document does not exist. Returns false when it existed: a document
 * that exists is never replaced, even one created a moment ago by someone else.
 */
export function createSkeletonIfAbsent(file: string, probe?: ProbeInfo, workspace?: string): boolean {
  if (lstatOrUndefined(file)) return false;
  const real = checkedPath(file, workspace);
  // Under the runs' lock: the document is missing for a moment while another run replaces it.
  const unlock = lockDocument(real);
  const tmp = tempPath(real);
  try {
    if (lstatOrUndefined(real)) return false;
    if (restoreTakenAside(real)) return false;
    writeFileSync(tmp, renderSkeleton(basename(file), probe));
    // link() fails with EEXIST if the file appeared meanwhile, where rename would replace it.
    linkSync(tmp, real);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  } finally {
    unlinkQuietly(tmp);
    unlock();
  }
}

function lstatOrUndefined(path: string) {
  try {
    return lstatSync(path);
  } catch {
    return undefined;
  }
}

function assertWritable(file: string, st: BigIntStats): void {
  let writable = (st.mode & 0o222n) !== 0n;
  try {
    accessSync(file, constants.W_OK);
  } catch (err) {
    // Gone for a moment (vim's save) says nothing about permissions: the write that follows finds out.
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') writable = false;
  }
  // The mode bits count too: root may write anything, but a file marked read-only stays unwritten.
  if (!writable) {
    throw new FindingsDiskError(
      `The findings document ${file} is read-only (mode ${(Number(st.mode) & 0o777).toString(8).padStart(3, '0')}), so it is left unchanged. ` +
        `Make it writable (chmod u+w ${file}) to have results written into it; the results are in the run folder either way.`,
      'error',
    );
  }
}

function readAll(fd: number): Buffer {
  const chunks: Buffer[] = [];
  for (let at = 0; ;) {
    const buf = Buffer.alloc(Math.max(Number(fstatSync(fd).size) - at, 0) + 4096);
    const n = readSync(fd, buf, 0, buf.length, at);
    if (n === 0) break;
    chunks.push(buf.subarray(0, n));
    at += n;
  }
  return Buffer.concat(chunks);
}

interface SettledRead {
  bytes: Buffer;
  text: string;
  st: BigIntStats;
  /** It held still: false when it changed while it was watched (the text is then only a hint of its length). */
  settled: boolean;
}

/**
 * Reads the document through `fd` and watches it hold still: an in-place save caught half-way
 * changes the size or time within a few ms. With `file`, the path must still name the same inode.
 */
function settledRead(fd: number, file: string | undefined, previousText: string | undefined): SettledRead {
  const st = fstatSync(fd, { bigint: true });
  const bytes = readAll(fd);
  const text = decodeDocument(bytes);
  // Empty, or shorter than before, may be a save caught half-way (its cut can fall on a line break,
  // and the editor be held off the CPU between two writes): it must hold still longer.
  // Not knowing the last text (a run's first update), a text that ends mid-line is taken as cut.
  const cut = text.length === 0 || (previousText === undefined ? !/\n$/.test(text) : text.length < previousText.length);
  const deadline = Date.now() + (cut ? CUT_SETTLE_MS : SETTLE_MS);
  const unsettled = { bytes, text, st, settled: false };
  do {
    pause(SETTLE_MS);
    if (!sameVersion(st, fstatSync(fd, { bigint: true }))) return unsettled;
    if (file) {
      try {
        if (!sameVersion(st, statSync(file, { bigint: true }))) return unsettled;
      } catch {
        return unsettled;
      }
    }
  } while (Date.now() < deadline);
  return { ...unsettled, settled: true };
}

/** The bytes of the inode behind `path` (not following a link), or undefined when it is gone. */
function bytesAt(path: string): Buffer | undefined {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
  } catch {
    return undefined;
  }
  try {
    return fstatSync(fd).isFile() ? readAll(fd) : undefined;
  } finally {
    closeSync(fd);
  }
}

/**
 * Puts `data` at `real` if, and only if, the file there now holds `expected`; see steps 2-4 above.
 * Returns false when it held something else (left in place) or vanished: the caller reads again.
 */
function replaceIfUnchanged(real: string, expected: Buffer, data: Buffer, mode: number): boolean {
  const tmp = tempPath(real);
  const aside = tempPath(real, 'aside');
  // Whether the name `aside` may go: not while it is the only name of a file that could not be put back.
  let dropAside = true;
  const putBackOrKeep = () => {
    try {
      putBack(aside, real);
    } catch (err) {
      if (!(err instanceof FindingsDiskError)) dropAside = false;
      throw err;
    }
  };
  try {
    writeFileSync(tmp, data);
    chmodSync(tmp, mode);
    try {
      renameSync(real, aside);
    } catch (err) {
      // Missing for a moment: an editor (vim) has renamed it to its backup and is writing a new one.
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw err;
    }
    const taken = bytesAt(aside);
    if (!taken || !taken.equals(expected)) {
      putBackOrKeep();
      return false;
    }
    try {
      linkSync(tmp, real);
    } catch (err) {
      // An editor created the document while it was aside: that save is newer than what was taken.
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
      putBackOrKeep();
      throw err;
    }
    return true;
  } finally {
    unlinkQuietly(tmp);
    if (dropAside) unlinkQuietly(aside);
  }
}

/**
 * A run killed between taking the document aside and linking the new one in (steps 3 and 4) left
 * it under its hidden name: with the runs' lock held, no write is under way, so the newest such
 * file is put back rather than a skeleton created over the user's work.
 */
function restoreTakenAside(real: string): boolean {
  const prefix = `.${basename(real)}.`;
  const taken = readdirSync(dirname(real))
    .filter((name) => name.startsWith(prefix) && name.endsWith('.aside'))
    .map((name) => join(dirname(real), name))
    .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)[0];
  if (!taken) return false;
  linkSync(taken, real);
  unlinkSync(taken);
  return true;
}

/** Whether `newer` holds every line of `older`, in the same order (lines may have been added between them). */
function keepsEveryLine(newer: string, older: string): boolean {
  const lines = newer.split('\n');
  let at = 0;
  for (const line of older.split('\n')) {
    while (at < lines.length && lines[at] !== line) at++;
    if (at === lines.length) return false;
    at++;
  }
  return true;
}

/** Links a taken file back at the document's path; one that cannot go back, and that the newer file there does not hold, is kept under a visible name. */
function putBack(aside: string, real: string): void {
  try {
    linkSync(aside, real);
    return;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  // Two saves in the moment the document was aside (longer on a loaded machine). The newer one is at
  // the path; when it holds every line of the taken one in order (an editor that read the taken one
  // and added to it), nothing is lost by dropping the taken one. Otherwise both are kept.
  const taken = bytesAt(aside);
  const current = bytesAt(real);
  if (taken && current && keepsEveryLine(decodeDocument(current), decodeDocument(taken))) return;
  const kept = `${real}.saved-${new Date().toISOString().replace(/[:.]/g, '-')}`;
  linkSync(aside, kept);
  throw new FindingsDiskError(
    `Two saves of the findings document ${real} landed while Inference Bench was writing it; the newer one is in place and the other is kept as ${kept}. Compare the two and delete ${kept}.`,
    'warn',
  );
}

/** Another run's lock on the document, left behind when it is older than LOCK_STALE_MS or its process (on this host) is gone. */
function isStale(lock: string, holder: string): boolean {
  let age: number;
  try {
    age = Date.now() - statSync(lock).mtimeMs;
  } catch {
    return false;
  }
  if (age > LOCK_STALE_MS) return true;
  const [pid, host] = holder.split(' ');
  if (host !== hostname() || !/^\d+$/.test(pid)) return false;
  try {
    process.kill(Number(pid), 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

function readOrUndefined(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/**
 * Takes the lock that runs writing the same document share (a file created exclusively beside it),
 * so that two runs never interleave their read and replace. Returns its release.
 */
function lockDocument(real: string): () => void {
  const lock = join(dirname(real), `.${basename(real)}.inference-bench.lock`);
  const token = `${process.pid} ${hostname()} ${Math.random().toString(36).slice(2, 10)}\n`;
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    try {
      const fd = openSync(lock, 'wx');
      try {
        writeSync(fd, token);
      } finally {
        closeSync(fd);
      }
      return () => {
        if (readOrUndefined(lock) === token) unlinkQuietly(lock);
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const holder = readOrUndefined(lock);
    if (holder !== undefined && isStale(lock, holder)) {
      // Taken by rename, so that of two runs breaking the same stale lock only one removes it, and never a fresh one.
      const taken = tempPath(lock, 'stale');
      try {
        renameSync(lock, taken);
        if (readOrUndefined(taken) !== holder) linkSync(taken, lock);
      } catch {
        // gone already, or a fresh lock is back in place: wait for it as for any other
      } finally {
        unlinkQuietly(taken);
      }
      continue;
    }
    if (Date.now() > deadline) {
      throw new FindingsDiskError(
        `The findings document ${real} is being written by another Inference Bench run (lock ${lock}, held by process ${holder?.split(' ')[0] ?? '?'}) for over ${LOCK_WAIT_MS / 1000} s; ` +
          `it is left as it is this time and the next update tries again. If no other run is going, delete ${lock}.`,
        'warn',
      );
    }
    pause(2);
  }
}

/**
 * Re-reads the document, applies one update and writes it back (through symlinks, at the real path
 * inside the workspace). The write replaces only the bytes the update was computed from: a file an
 * editor saved since is read again and the update applied to the new text. A file that is suddenly
 * empty is left as it is (a save in progress, most likely); a read-only one is never written.
 */
export function applyUpdateOnDisk(file: string, update: FindingsUpdate, options: DiskApplyOptions = {}): DiskFindingsEdit {
  const real = checkedPath(file, options.workspace);
  const unlock = lockDocument(real);
  try {
    return applyLocked(real, update, options);
  } finally {
    unlock();
  }
}

function applyLocked(real: string, update: FindingsUpdate, options: DiskApplyOptions): DiskFindingsEdit {
  // After a lost race (an in-place save landed in the inode just replaced), that old inode holds
  // the user's newest text: it is merged again and must replace the bytes written (`ours`).
  let held: number | undefined;
  let ours: Buffer | undefined;
  let longest = options.previousText;
  try {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      let fd: number;
      try {
        fd = held ?? openRegular(real);
      } catch (err) {
        // Missing for a moment: an editor (vim) has renamed it to its backup and is writing a new one.
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
        pause(SETTLE_MS);
        continue;
      }
      try {
        assertWritable(real, fstatSync(fd, { bigint: true }));
        const read = settledRead(fd, held === undefined ? real : undefined, longest);
        // The longest text seen, even in a read that did not hold still, is what a shorter read is
        // measured against: a run whose first update waits out an editor's saves still knows it.
        if (!longest || read.text.length > longest.length) longest = read.text;
        if (!read.settled) continue;
        if (read.text.length === 0 && options.previousText) {
          throw new FindingsDiskError(
            `The findings document ${real} is empty now, though it held ${options.previousText.length} characters a moment ago (another program saving it?); it is left as it is this time and the next update tries again.`,
            'warn',
            true,
          );
        }
        const result = applyFindingsUpdate(read.text, update, options);
        if (!result.edits.length && held === undefined) return { ...result, diskText: read.text };
        const data = encodeDocument(result.text);
        if (!replaceIfUnchanged(real, held === undefined ? read.bytes : ours!, data, Number(read.st.mode) & 0o7777)) {
          // Saved since: the path holds the newest text now.
          held = undefined;
          continue;
        }
        if (readAll(fd).equals(read.bytes)) return { ...result, diskText: result.text };
        ours = data;
        held = fd;
      } finally {
        if (held !== fd) closeSync(fd);
      }
    }
  } finally {
    if (held !== undefined) closeSync(held);
  }
  throw new FindingsDiskError(
    `The findings document ${real} kept changing while Inference Bench tried to write into it (${MAX_ATTEMPTS} attempts); it is left as it is this time and the next update tries again.`,
    'warn',
  );
}
