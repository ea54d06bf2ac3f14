import { lstatSync, realpathSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';

/** Whether `file` lies inside the folder `root`, by the names alone (no link followed). */
export function inside(root: string, file: string): boolean {
  const rel = relative(root, file);
  return !(rel === '' || rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel));
}

/** The path with every symlink of its existing part resolved; the part that does not exist yet is kept as written. */
export function realPathOf(file: string): string {
  const missing: string[] = [];
  let at = resolve(file);
  for (;;) {
    try {
      return join(realpathSync(at), ...missing.reverse());
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      // A dangling symlink is not "missing": it names a file somewhere, and realpath cannot say where.
      if (code !== 'ENOENT' || isSymlink(at) || dirname(at) === at) throw err;
      missing.push(basename(at));
      at = dirname(at);
    }
  }
}

function isSymlink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

/**
 * Why the findings document at `file` may not be written, or undefined when it may: its real path
 * (symlinks of the file and of its folders resolved) must lie inside the workspace's real path,
 * and what is there must be a regular file (or nothing yet). A device, a FIFO or a socket is never
 * opened for writing: a rename over /dev/null would replace it, and a FIFO blocks whoever reads it.
 */
export function findingsFileProblem(workspace: string, file: string): string | undefined {
  let real: string;
  let root: string;
  try {
    root = realPathOf(workspace);
    real = realPathOf(file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return `it is a symlink to a file that does not exist (${file})`;
    if (code === 'ELOOP') return `it is a loop of symlinks (${file})`;
    return `its path could not be resolved (${err instanceof Error ? err.message : String(err)})`;
  }
  if (!inside(root, real)) return `its real path ${real} (symlinks resolved) is outside the workspace ${root}`;
  return fileTypeProblem(real);
}

/** Why `real` is not a regular file the tool may write (nothing there yet is fine), from lstat: nothing is opened. */
export function fileTypeProblem(real: string): string | undefined {
  let st;
  try {
    st = lstatSync(real);
  } catch {
    return undefined;
  }
  if (st.isFile()) return undefined;
  const kind = st.isFIFO()
    ? 'a FIFO (named pipe)'
    : st.isCharacterDevice() || st.isBlockDevice()
      ? 'a device'
      : st.isSocket()
        ? 'a socket'
        : st.isDirectory()
          ? 'a folder'
          : 'not a regular file';
  return `${real} is ${kind}, not a regular file`;
}

/**
 * The findings document's path for `given` (relative to the workspace, or absolute), or undefined
 * when it lies outside the workspace, also through a symlink (of the file or of a folder on the
 * way): the tool edits the user's campaign document there, and never some other file of the
 * machine that a mistyped path, a setting or a link happens to name.
 */
export function findingsPathInWorkspace(workspace: string, given: string): string | undefined {
  const root = resolve(workspace);
  const file = resolve(root, given);
  if (!inside(root, file)) return undefined;
  let real: string;
  try {
    real = realPathOf(file);
  } catch {
    // A dangling link or a loop: where it leads is unknown, so it is not taken as inside.
    return undefined;
  }
  let realRoot: string;
  try {
    realRoot = realpathSync(root);
  } catch {
    // No workspace folder yet: nothing in it can be a link.
    return file;
  }
  return inside(realRoot, real) ? file : undefined;
}
