import { chmodSync, existsSync, linkSync, readFileSync, realpathSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { FindingsUpdate } from '../campaign/phaseContext';
import { ProbeInfo, renderSkeleton } from './skeleton';
import { applyFindingsUpdate, ApplyOptions, FindingsEdit } from './update';

// The findings document as a file on disk, for the CLI and for a document no editor has open.
// Every write goes to a sibling temp file that is renamed over the document, so that a reader
// (an editor reloading it, git, a second tool) never sees half a document.

function tempPath(file: string): string {
  return join(dirname(file), `.${basename(file)}.${process.pid}.${Math.random().toString(36).slice(2, 8)}.tmp`);
}

/** Writes a sibling temp file and renames it over the target, keeping the target's permissions. */
export function writeFileAtomic(file: string, text: string): void {
  const tmp = tempPath(file);
  writeFileSync(tmp, text);
  try {
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
  writeFileSync(tmp, renderSkeleton(basename(file), probe));
  try {
    // link() fails with EEXIST if the file appeared meanwhile, where rename would replace it.
    linkSync(tmp, file);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  } finally {
    unlinkSync(tmp);
  }
}

/** Re-reads the document, applies one update and writes it back atomically (through symlinks). */
export function applyUpdateOnDisk(file: string, update: FindingsUpdate, options: ApplyOptions = {}): FindingsEdit {
  const real = realpathSync(file);
  const result = applyFindingsUpdate(readFileSync(real, 'utf8'), update, options);
  if (result.edits.length) writeFileAtomic(real, result.text);
  return result;
}
