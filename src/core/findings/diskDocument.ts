import {
  accessSync,
  BigIntStats,
  chmodSync,
  closeSync,
  constants,
  existsSync,
  fstatSync,
  linkSync,
  openSync,
  readSync,
  realpathSync,
  renameSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { FindingsUpdate } from '../campaign/phaseContext';
import { ProbeInfo, renderSkeleton } from './skeleton';
import { applyFindingsUpdate, ApplyOptions, FindingsEdit } from './update';

// The findings document as a file on disk, for the CLI and for a document no editor has open.
// Every write goes to a sibling temp file that is renamed over the document, so that a reader
// (an editor reloading it, git, a second tool) never sees half a document. An editor may save the
// same file at any moment, often in place (truncate, then write), so a write is only made from a
// read that held still, and the rename only replaces the very version that was read.

/** A findings document the tool must leave alone this time; the message says why and what to do. */
export class FindingsDiskError extends Error {
  constructor(
    message: string,
    readonly level: 'warn' | 'error',
  ) {
    super(message);
  }
}

export interface DiskApplyOptions extends ApplyOptions {
  /** The text the caller last saw in the file (read or written): a file that is suddenly empty is not taken as the user's. */
  previousText?: string;
}

export interface DiskFindingsEdit extends FindingsEdit {
  /** The file's text after this call (what was written, or what was read when nothing changed). */
  diskText: string;
}

// A read is trusted once the file held still this long (an in-place save takes a few ms).
const SETTLE_MS = 10;
// An empty file, or one that shrank to a cut-off line, must hold still longer before it is taken as the user's.
const CUT_SETTLE_MS = 200;
const MAX_ATTEMPTS = 60;

function tempPath(file: string): string {
  return join(dirname(file), `.${basename(file)}.${process.pid}.${Math.random().toString(36).slice(2, 8)}.tmp`);
}

function pause(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function sameVersion(a: BigIntStats, b: BigIntStats): boolean {
  return a.ino === b.ino && a.dev === b.dev && a.size === b.size && a.mtimeNs === b.mtimeNs && a.ctimeNs === b.ctimeNs;
}

/** Writes a sibling temp file and renames it over the target, keeping the target's permissions. */
export function writeFileAtomic(file: string, text: string): void {
  const tmp = tempPath(file);
  try {
    writeFileSync(tmp, text);
    if (existsSync(file)) chmodSync(tmp, statSync(file).mode & 0o7777);
    renameSync(tmp, file);
  } catch (err) {
    if (existsSync(tmp)) unlinkSync(tmp);
    throw err;
  }
}

/**
 * Writes the skeleton if the document does not exist. Returns false when it existed: a document
 * that exists is never replaced, even one created a moment ago by someone else.
 */
export function createSkeletonIfAbsent(file: string, probe?: ProbeInfo): boolean {
  if (existsSync(file)) return false;
  const tmp = tempPath(file);
  try {
    writeFileSync(tmp, renderSkeleton(basename(file), probe));
    // link() fails with EEXIST if the file appeared meanwhile, where rename would replace it.
    linkSync(tmp, file);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  } finally {
    if (existsSync(tmp)) unlinkSync(tmp);
  }
}

function assertWritable(file: string, st: BigIntStats): void {
  let writable = (st.mode & 0o222n) !== 0n;
  try {
    accessSync(file, constants.W_OK);
  } catch {
    writable = false;
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

function readAll(fd: number): string {
  const size = Number(fstatSync(fd).size);
  const buf = Buffer.alloc(size);
  let got = 0;
  while (got < size) {
    const n = readSync(fd, buf, got, size - got, got);
    if (n === 0) break;
    got += n;
  }
  return buf.subarray(0, got).toString('utf8');
}

/**
 * Reads the document through `fd` once it holds still: an in-place save caught half-way changes
 * the size or time within a few ms. Returns undefined when it kept changing. With `file`, the path
 * must still name the same inode.
 */
function settledRead(fd: number, file: string | undefined, previousText: string | undefined): { text: string; st: BigIntStats } | undefined {
  const st = fstatSync(fd, { bigint: true });
  const text = readAll(fd);
  // Empty, or shorter than before and cut mid-line, looks like a save caught half-way: it must hold still longer.
  const cut = text.length === 0 || (previousText !== undefined && text.length < previousText.length && !/\n$/.test(text));
  const deadline = Date.now() + (cut ? CUT_SETTLE_MS : SETTLE_MS);
  do {
    pause(SETTLE_MS);
    if (!sameVersion(st, fstatSync(fd, { bigint: true }))) return undefined;
    if (file) {
      try {
        if (!sameVersion(st, statSync(file, { bigint: true }))) return undefined;
      } catch {
        return undefined;
      }
    }
  } while (Date.now() < deadline);
  return { text, st };
}

/**
 * Re-reads the document, applies one update and writes it back atomically (through symlinks).
 * The rename replaces only the version the update was computed from: a file changed since (by an
 * editor saving it) is read again and the update applied to the new text. A file that is suddenly
 * empty is left as it is (a save in progress, most likely); a read-only one is never written.
 */
export function applyUpdateOnDisk(file: string, update: FindingsUpdate, options: DiskApplyOptions = {}): DiskFindingsEdit {
  const real = realpathSync(file);
  // After a lost race (an in-place save landed in the inode just replaced), that old inode holds
  // the user's newest text: it is merged again and must replace the version written (`ours`).
  let held: number | undefined;
  let ours: BigIntStats | undefined;
  try {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const fd = held ?? openSync(real, 'r');
      try {
        assertWritable(real, fstatSync(fd, { bigint: true }));
        const read = settledRead(fd, held === undefined ? real : undefined, options.previousText);
        if (!read) continue;
        if (read.text.length === 0 && options.previousText) {
          throw new FindingsDiskError(
            `The findings document ${real} is empty now, though it held ${options.previousText.length} characters a moment ago (another program saving it?); it is left as it is this time and the next update tries again.`,
            'warn',
          );
        }
        const result = applyFindingsUpdate(read.text, update, options);
        if (!result.edits.length && held === undefined) return { ...result, diskText: read.text };
        const expected = held === undefined ? read.st : ours!;
        const tmp = tempPath(real);
        try {
          writeFileSync(tmp, result.text);
          chmodSync(tmp, Number(read.st.mode) & 0o7777);
          // The last look before the rename: the path must still hold the version expected, and
          // the inode read must not have been written through another open descriptor.
          if (!sameVersion(expected, statSync(real, { bigint: true }))) {
            // Saved again by path since: that is now the newest text, read from the path.
            held = undefined;
            continue;
          }
          if (!sameVersion(read.st, fstatSync(fd, { bigint: true }))) continue;
          renameSync(tmp, real);
        } finally {
          if (existsSync(tmp)) unlinkSync(tmp);
        }
        if (sameVersion(read.st, fstatSync(fd, { bigint: true }))) return { ...result, diskText: result.text };
        ours = statSync(real, { bigint: true });
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
