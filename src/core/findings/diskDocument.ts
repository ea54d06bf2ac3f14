import {
  accessSync,
  BigIntStats,
  closeSync,
  constants,
  fchmodSync,
  fstatSync,
  linkSync,
  lstatSync,
  openSync,
  readdirSync,
  readSync,
  renameSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { hostname } from 'node:os';
import { basename, dirname, join, parse } from 'node:path';
import { FindingsUpdate } from './findingsUpdate';
import { decodeDocument, encodeDocument } from './bytes';
import { fileTypeProblem, findingsFileProblem, inside, realPathOf } from './location';
import { writersOf } from './openWriters';
import { openFolder, PathChanged, PinnedFolder } from './pinnedFolder';
import { ProbeInfo, renderSkeleton } from './skeleton';
import { applyFindingsUpdate, ApplyOptions, FindingsEdit } from './update';

// The findings document as a file on disk, for the CLI and for a document no editor has open.
// Runs of the tool take turns through a lock file beside the document, so only editors race a write.
// An editor saves in place (truncate, then write, maybe in pieces with pauses between them) or by
// renaming a new file over the document (vim also renames the old one to a backup first). So a
// write never replaces a file it has not read, nor one that is being written:
//   1. wait while any process holds the document open for writing (an in-place save under way,
//      however long it pauses between pieces, shows a shorter file that must not be taken for it),
//      then read it through a descriptor once it holds still;
//   2. write the new text to a sibling temp file;
//   3. rename the document aside (atomic: whatever the path names now is taken, nothing is lost);
//   4. if the taken file's bytes and modification time are the ones read, link the temp file in
//      (link never replaces: a file an editor created meanwhile wins); otherwise link the taken
//      file back, and start over;
//   5. wait again for writers of the inode read, then check it once more: a save that opened it
//      after step 1 and before step 3 writes there, not into the document, and is merged again.
// The document is missing for the microseconds between steps 3 and 4, as during a vim save.
// The path is checked once (its real path inside the workspace) and written through what was
// checked: the folder is opened by walking down from the workspace refusing symlinks, and every
// name is then looked up in that open folder (pinnedFolder.ts), the document opened with
// O_NOFOLLOW, temp and lock files created with O_EXCL. A symlink swapped in anywhere since the
// check makes the open fail, and the path is checked again.
// What is left open, on Linux: a writer the /proc scan of steps 1 and 5 cannot see (another user's
// process, another machine over a network file system) is held off by the settle time alone (10 ms,
// or 200 ms for a file that is empty, shorter than the longest text seen or (none seen yet) ends
// mid-line), as is every writer where /proc is missing (macOS, Windows); so is an open of the
// document that began before step 3 and is held off the CPU inside the open call until after
// step 5. A folder moved (not swapped) out of the workspace after the walk takes the write with
// it, into the same document. On macOS and Windows names are looked up along the path at each step.

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
// How long an update waits for another program to close the document it holds open for writing
// (an editor's save takes milliseconds; one that keeps it open longer holds the update off).
export const WRITER_WAIT_MS = 5_000;
// Checks of the path, each followed by opens that refuse a symlink where the check found none: a
// path that keeps changing between the two is refused.
const PATH_CHECKS = 5;

/** The document as checked: its real path, its folder opened once, and its name there. */
interface Place {
  real: string;
  folder: PinnedFolder;
  name: string;
  /** The document's name in the folder opened (a path for fs calls). */
  path: string;
}

function tempName(name: string, what = 'tmp'): string {
  return `.${name}.${process.pid}.${Math.random().toString(36).slice(2, 8)}.${what}`;
}

function pause(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function sameVersion(a: BigIntStats, b: BigIntStats): boolean {
  return a.ino === b.ino && a.dev === b.dev && a.size === b.size && a.mtimeNs === b.mtimeNs && a.ctimeNs === b.ctimeNs;
}

/** The same inode with the same content version (a rename changes the change time, not these). */
function sameContent(a: BigIntStats, b: BigIntStats): boolean {
  return a.ino === b.ino && a.dev === b.dev && a.size === b.size && a.mtimeNs === b.mtimeNs;
}

function unlinkQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // already gone
  }
}

/**
 * The document's real path (symlinks resolved, once: the write goes where this check looked) and
 * the root its folder is opened from, or an error when it lies outside the workspace or is not a regular file.
 */
function checkedPath(file: string, workspace: string | undefined): { real: string; root: string } {
  let real: string | undefined;
  let why: string | undefined;
  try {
    real = realPathOf(file);
  } catch {
    // A dangling link or a loop: said below.
    why = (workspace && findingsFileProblem(workspace, file)) || `${file} is a symlink that leads nowhere`;
  }
  let root = real ? parse(real).root : '/';
  if (real && workspace) {
    root = realPathOf(workspace);
    if (!inside(root, real)) why = `its real path ${real} (symlinks resolved) is outside the workspace ${root}`;
  }
  why ??= real ? fileTypeProblem(real) : undefined;
  // Resolved a moment ago to a name that is a symlink now: swapped since, so resolved again.
  if (real && lstatOrUndefined(real)?.isSymbolicLink()) throw new PathChanged(`${real} became a symlink`);
  if (why || !real) {
    throw new FindingsDiskError(
      `The findings document ${file} is not written: ${why}. Inference Bench writes only regular files inside the workspace; ` +
        "give a plain file of the workspace (the CLI's --findings, or the setting inferenceBench.findingsDocument). Each run's results still go to its run folder.",
      'error',
    );
  }
  return { real, root };
}

/**
 * Checks the path and calls `write` with the document's folder opened from that check. A symlink
 * swapped in since (for a folder on the way, or for the document) fails an open there with
 * PathChanged, and the path is checked again; one that keeps changing is refused.
 */
function atCheckedPlace<T>(file: string, workspace: string | undefined, write: (place: Place) => T): T {
  for (let check = 1; ; check++) {
    let folder: PinnedFolder | undefined;
    try {
      const { real, root } = checkedPath(file, workspace);
      folder = openFolder(root, dirname(real));
      const name = basename(real);
      return write({ real, folder, name, path: folder.at(name) });
    } catch (err) {
      if (!(err instanceof PathChanged)) throw err;
      if (check < PATH_CHECKS) {
        pause(2);
        continue;
      }
      // A folder that does not exist is said as such (the caller tells the user to create it).
      if (err.reason?.code === 'ENOENT') throw Object.assign(new Error(err.message), { code: 'ENOENT' });
      throw new FindingsDiskError(
        `The findings document ${file} is not written: ${err.message} between the check and the write, ${PATH_CHECKS} times in a row ` +
          '(is something swapping it, or a folder on its path, for a symlink?). Inference Bench writes only regular files inside the workspace, ' +
          'never through a symlink swapped in after the check; it is left as it is this time and the next update tries again.',
        'error',
      );
    } finally {
      folder?.close();
    }
  }
}

/**
 * Opens the document for reading without ever blocking (a FIFO would wait for a writer forever)
 * and without following a symlink swapped in since the path was checked; only a regular file is kept open.
 */
function openRegular(path: string, real: string): number {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ELOOP') throw new PathChanged(`${real} became a symlink`, err as NodeJS.ErrnoException);
    throw err;
  }
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
    const real = realPathOf(file);
    fd = openRegular(real, real);
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
  return atCheckedPlace(file, workspace, (place) => {
    // Under the runs' lock: the document is missing for a moment while another run replaces it.
    const unlock = lockDocument(place);
    const tmp = tempName(place.name);
    try {
      if (lstatOrUndefined(place.path)) return false;
      if (restoreTakenAside(place)) return false;
      writeNew(place.folder.at(tmp), Buffer.from(renderSkeleton(basename(file), probe)));
      // link() fails with EEXIST if the file appeared meanwhile, where rename would replace it.
      linkSync(place.folder.at(tmp), place.path);
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw err;
    } finally {
      unlinkQuietly(place.folder.at(tmp));
      unlock();
    }
  });
}

function lstatOrUndefined(path: string) {
  try {
    return lstatSync(path, { bigint: true });
  } catch {
    return undefined;
  }
}

/**
 * Creates `path` (never an existing name, nor through a symlink planted there) with `data`, and
 * `mode` when given; returns its status after the write.
 */
function writeNew(path: string, data: Buffer, mode?: number): BigIntStats {
  const fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o666);
  try {
    for (let at = 0; at < data.length;) at += writeSync(fd, data, at);
    if (mode !== undefined) fchmodSync(fd, mode);
    return fstatSync(fd, { bigint: true });
  } finally {
    closeSync(fd);
  }
}

function assertWritable(place: Place, st: BigIntStats): void {
  let writable = (st.mode & 0o222n) !== 0n;
  try {
    accessSync(place.path, constants.W_OK);
  } catch (err) {
    // Gone for a moment (vim's save) says nothing about permissions: the write that follows finds out.
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') writable = false;
  }
  // The mode bits count too: root may write anything, but a file marked read-only stays unwritten.
  if (!writable) {
    const file = place.real;
    throw new FindingsDiskError(
      `The findings document ${file} is read-only (mode ${(Number(st.mode) & 0o777).toString(8).padStart(3, '0')}), so it is left unchanged. ` +
        `Make it writable (chmod u+w ${file}) to have results written into it; each run's results still go to its run folder.`,
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
 * changes the size or time within a few ms. With `path`, the path must still name the same inode.
 */
function settledRead(fd: number, path: string | undefined, previousText: string | undefined): SettledRead {
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
    if (path) {
      const now = lstatOrUndefined(path);
      if (!now || !sameVersion(st, now)) return unsettled;
    }
  } while (Date.now() < deadline);
  return { ...unsettled, settled: true };
}

/** Whether `name` is one the document's inode goes by: its own, or a hidden one the tool took it aside to. */
function documentNames(place: Place): (name: string) => boolean {
  const aside = `.${place.name}.`;
  return (name) => name === place.name || (name.startsWith(aside) && name.endsWith('.aside'));
}

/**
 * Waits while a process holds the inode `st` open for writing (an in-place save under way), up to
 * WRITER_WAIT_MS. Returns whether it waited; when the writer is still there at the end, throws, or
 * with `orGoOn` returns.
 */
function waitWhileWritten(place: Place, st: BigIntStats, orGoOn = false): boolean {
  const deadline = Date.now() + WRITER_WAIT_MS;
  for (let waited = false; ; waited = true) {
    const writers = writersOf(st, documentNames(place));
    if (!writers?.length) return waited;
    if (Date.now() > deadline) {
      if (orGoOn) return waited;
      throw new FindingsDiskError(
        `The findings document ${place.real} has been open for writing in another program for over ${WRITER_WAIT_MS / 1000} s ` +
          `(${writers.map((w) => `process ${w.pid}, ${w.command}`).join('; ')}); it is left as it is this time, so that a save under way is not cut, ` +
          'and the next update tries again. Close the program that keeps it open for writing if this goes on.',
        'warn',
      );
    }
    pause(SETTLE_MS);
  }
}

/** The bytes and status of the inode behind `path` (not following a link), or undefined when it is gone. */
function fileAt(path: string): { bytes: Buffer; st: BigIntStats } | undefined {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
  } catch {
    return undefined;
  }
  try {
    const st = fstatSync(fd, { bigint: true });
    return st.isFile() ? { bytes: readAll(fd), st } : undefined;
  } finally {
    closeSync(fd);
  }
}

/**
 * Puts `data` in place of the document if, and only if, the file there now is the version `expected`
 * (its bytes, inode and modification time); see steps 2-4 above. Returns the status of the file
 * put in place, or undefined when the document held something else (put back) or vanished: the
 * caller reads again.
 */
function replaceIfUnchanged(place: Place, expected: { bytes: Buffer; st: BigIntStats }, data: Buffer, mode: number): BigIntStats | undefined {
  const { folder } = place;
  const tmp = tempName(place.name);
  const aside = tempName(place.name, 'aside');
  // Whether the name `aside` may go: not while it is the only name of a file that could not be put back.
  let dropAside = true;
  const putBackOrKeep = () => {
    try {
      putBack(place, aside);
    } catch (err) {
      if (!(err instanceof FindingsDiskError)) dropAside = false;
      throw err;
    }
  };
  try {
    const written = writeNew(folder.at(tmp), data, mode);
    try {
      renameSync(place.path, folder.at(aside));
    } catch (err) {
      // Missing for a moment: an editor (vim) has renamed it to its backup and is writing a new one.
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
    const taken = fileAt(folder.at(aside));
    if (!taken || !taken.bytes.equals(expected.bytes) || !sameContent(taken.st, expected.st)) {
      putBackOrKeep();
      return undefined;
    }
    try {
      linkSync(folder.at(tmp), place.path);
    } catch (err) {
      // An editor created the document while it was aside: that save is newer than what was taken.
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') return undefined;
      putBackOrKeep();
      throw err;
    }
    return written;
  } finally {
    unlinkQuietly(folder.at(tmp));
    if (dropAside) unlinkQuietly(folder.at(aside));
  }
}

/**
 * A run killed between taking the document aside and linking the new one in (steps 3 and 4) left
 * it under its hidden name: with the runs' lock held, no write is under way, so the newest such
 * file is put back rather than a skeleton created over the user's work.
 */
function restoreTakenAside(place: Place): boolean {
  const prefix = `.${place.name}.`;
  const mtime = (name: string) => lstatOrUndefined(place.folder.at(name))?.mtimeMs ?? 0n;
  const taken = readdirSync(place.folder.at('.'))
    .filter((name) => name.startsWith(prefix) && name.endsWith('.aside'))
    .sort((a, b) => Number(mtime(b) - mtime(a)))[0];
  if (!taken) return false;
  linkSync(place.folder.at(taken), place.path);
  unlinkSync(place.folder.at(taken));
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

/** Links a taken file back at the document's name; one that cannot go back, and that the newer file there does not hold, is kept under a visible name. */
function putBack(place: Place, aside: string): void {
  try {
    linkSync(place.folder.at(aside), place.path);
    return;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  // Two saves in the moment the document was aside (longer on a loaded machine). The newer one is at
  // the path; when it holds every line of the taken one in order (an editor that read the taken one
  // and added to it), nothing is lost by dropping the taken one. Otherwise both are kept.
  // The newer one may still be being written (an in-place save in pieces): it is judged once finished.
  const writing = fileAt(place.path);
  if (writing) waitWhileWritten(place, writing.st, true);
  const taken = fileAt(place.folder.at(aside));
  const current = fileAt(place.path);
  if (taken && current && keepsEveryLine(decodeDocument(current.bytes), decodeDocument(taken.bytes))) return;
  const keptName = `${place.name}.saved-${new Date().toISOString().replace(/[:.]/g, '-')}`;
  const kept = join(place.folder.path, keptName);
  linkSync(place.folder.at(aside), place.folder.at(keptName));
  throw new FindingsDiskError(
    `Two saves of the findings document ${place.real} landed while Inference Bench was writing it; the newer one is in place and the other is kept as ${kept}. Compare the two and delete ${kept}.`,
    'warn',
  );
}

/** Another run's lock on the document, left behind when it is older than LOCK_STALE_MS or its process (on this host) is gone. */
function isStale(lock: string, holder: string): boolean {
  const st = lstatOrUndefined(lock);
  if (!st) return false;
  if (Date.now() - Number(st.mtimeMs) > LOCK_STALE_MS) return true;
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
  return fileAt(path)?.bytes.toString('utf8');
}

/**
 * Takes the lock that runs writing the same document share (a file created exclusively beside it),
 * so that two runs never interleave their read and replace. Returns its release.
 */
function lockDocument(place: Place): () => void {
  const lockName = `.${place.name}.inference-bench.lock`;
  const lock = place.folder.at(lockName);
  const token = `${process.pid} ${hostname()} ${Math.random().toString(36).slice(2, 10)}\n`;
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    try {
      writeNew(lock, Buffer.from(token));
      return () => {
        if (readOrUndefined(lock) === token) unlinkQuietly(lock);
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const holder = readOrUndefined(lock);
    if (holder !== undefined && isStale(lock, holder)) {
      // Taken by rename, so that of two runs breaking the same stale lock only one removes it, and never a fresh one.
      const taken = place.folder.at(tempName(lockName, 'stale'));
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
      const shown = join(place.folder.path, lockName);
      throw new FindingsDiskError(
        `The findings document ${place.real} is being written by another Inference Bench run (lock ${shown}, held by process ${holder?.split(' ')[0] ?? '?'}) for over ${LOCK_WAIT_MS / 1000} s; ` +
          `it is left as it is this time and the next update tries again. If no other run is going, delete ${shown}.`,
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
  return atCheckedPlace(file, options.workspace, (place) => {
    const unlock = lockDocument(place);
    try {
      return applyLocked(place, update, options);
    } finally {
      unlock();
    }
  });
}

function applyLocked(place: Place, update: FindingsUpdate, options: DiskApplyOptions): DiskFindingsEdit {
  // After a lost race (a save landed in the inode just replaced), that old inode holds the user's
  // newest text: it is merged again and must replace the version written (`ours`).
  let held: number | undefined;
  let ours: { bytes: Buffer; st: BigIntStats } | undefined;
  let longest = options.previousText;
  try {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      let fd: number;
      try {
        fd = held ?? openRegular(place.path, place.real);
      } catch (err) {
        // Missing for a moment: an editor (vim) has renamed it to its backup and is writing a new one.
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
        pause(SETTLE_MS);
        continue;
      }
      try {
        const st = fstatSync(fd, { bigint: true });
        assertWritable(place, st);
        waitWhileWritten(place, st);
        const read = settledRead(fd, held === undefined ? place.path : undefined, longest);
        // The longest text seen, even in a read that did not hold still, is what a shorter read is
        // measured against: a run whose first update waits out an editor's saves still knows it.
        if (!longest || read.text.length > longest.length) longest = read.text;
        if (!read.settled) continue;
        if (read.text.length === 0 && options.previousText) {
          throw new FindingsDiskError(
            `The findings document ${place.real} is empty now, though it held ${options.previousText.length} characters a moment ago (another program saving it?); it is left as it is this time and the next update tries again.`,
            'warn',
            true,
          );
        }
        const result = applyFindingsUpdate(read.text, update, options);
        if (!result.edits.length && held === undefined) return { ...result, diskText: read.text };
        const data = encodeDocument(result.text);
        const replaced = replaceIfUnchanged(place, held === undefined ? read : ours!, data, Number(read.st.mode) & 0o7777);
        if (!replaced) {
          // Saved since: the path holds the newest text now.
          held = undefined;
          continue;
        }
        // A save that opened the file read before it was taken aside writes into it, not into the
        // document: wait for it to finish, and merge again what it wrote (our version is in place
        // by now: a writer that keeps it open longer than the wait gets what it wrote so far merged).
        waitWhileWritten(place, read.st, true);
        const now = fstatSync(fd, { bigint: true });
        if (sameContent(now, read.st) && readAll(fd).equals(read.bytes)) return { ...result, diskText: result.text };
        ours = { bytes: data, st: replaced };
        held = fd;
      } finally {
        if (held !== fd) closeSync(fd);
      }
    }
  } finally {
    if (held !== undefined) closeSync(held);
  }
  throw new FindingsDiskError(
    `The findings document ${place.real} kept changing while Inference Bench tried to write into it (${MAX_ATTEMPTS} attempts); it is left as it is this time and the next update tries again.`,
    'warn',
  );
}
