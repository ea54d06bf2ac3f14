import { closeSync, constants, fstatSync, openSync, readlinkSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { inside } from './location';

// The findings document's folder, opened once and written through. Node has no openat(), but on
// Linux /proc/self/fd/N names the very folder that descriptor N holds: a name looked up below it is
// looked up in that folder, whatever its path names by then. So a folder on the way that is swapped
// for a symlink after the check cannot take a write elsewhere: the walk that opens the folder
// refuses a symlink at every step, and every later open, rename, link and unlink goes through the
// folder opened. Where /proc/self/fd is missing (macOS, Windows) names are looked up along the path
// again, and a swap between the check and the write is not caught.

/** A folder on the way, or the document, became something else (a symlink, or gone) between the check and the open: check the path again. */
export class PathChanged extends Error {
  constructor(
    message: string,
    /** The error of the open that found it, when there was one. */
    readonly reason?: NodeJS.ErrnoException,
  ) {
    super(message);
  }
}

export interface PinnedFolder {
  /** The folder's real path as checked, for messages. */
  readonly path: string;
  /** A path that names `name` in this very folder. */
  at(name: string): string;
  close(): void;
}

// O_PATH (Linux's value on every architecture Node runs on; Node does not export it): a folder
// that may be passed through but not listed (mode 711, as /home often is) can still be held.
const O_PATH = 0o10000000;
const DIR_FLAGS = O_PATH | constants.O_DIRECTORY;

let procFdWorks: boolean | undefined;

/** Whether /proc/self/fd/N leads to what descriptor N holds (Linux with /proc mounted). */
function procFdLeadsTo(fd: number): boolean {
  if (procFdWorks === undefined) {
    try {
      const held = fstatSync(fd, { bigint: true });
      const named = statSync(`/proc/self/fd/${fd}`, { bigint: true });
      procFdWorks = held.ino === named.ino && held.dev === named.dev;
    } catch {
      procFdWorks = false;
    }
  }
  return procFdWorks;
}

function unpinned(dir: string): PinnedFolder {
  return { path: dir, at: (name) => join(dir, name), close: () => undefined };
}

/**
 * Opens the folder `dir` (a real path, checked to lie in `root`) by walking down from `root` (the
 * workspace's real path, or `/`), one name at a time, none of them a symlink.
 */
export function openFolder(root: string, dir: string): PinnedFolder {
  if (process.platform !== 'linux') return unpinned(dir);
  if (dir !== root && !inside(root, dir)) throw new PathChanged(`${dir} is no longer inside ${root}`);
  let fd = openSync(root, DIR_FLAGS);
  if (!procFdLeadsTo(fd)) {
    closeSync(fd);
    return unpinned(dir);
  }
  try {
    let at = root;
    for (const name of relative(root, dir).split(sep).filter(Boolean)) {
      at = join(at, name);
      let next: number;
      try {
        next = openSync(`/proc/self/fd/${fd}/${name}`, DIR_FLAGS | constants.O_NOFOLLOW);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ELOOP' || code === 'ENOTDIR') throw new PathChanged(`the folder ${at} became a symlink or a file`, err as NodeJS.ErrnoException);
        if (code === 'ENOENT') throw new PathChanged(`the folder ${at} is missing`, err as NodeJS.ErrnoException);
        throw err;
      }
      closeSync(fd);
      fd = next;
    }
    // Moved out of the workspace after the walk passed it: the folder is not where it was checked.
    const now = readlinkSync(`/proc/self/fd/${fd}`);
    if (now !== dir && !inside(root, now)) throw new PathChanged(`the folder ${dir} was moved to ${now}`);
  } catch (err) {
    closeSync(fd);
    throw err;
  }
  const held = fd;
  return { path: dir, at: (name) => `/proc/self/fd/${held}/${name}`, close: () => closeSync(held) };
}
