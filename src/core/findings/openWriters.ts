import { readdirSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import { basename } from 'node:path';

// Which processes hold a file open for writing, read from /proc (Linux). An editor that saves in
// place holds the file open from its truncate to its last piece, however long it pauses between
// them; the file alone cannot tell such a pause from a finished save, the open descriptor can.
// Only processes this user may look into are seen (all of them for root).

export interface Writer {
  pid: number;
  command: string;
}

/**
 * The processes holding the inode `file` (device and inode number) open for writing, looking only
 * at descriptors whose path ends in a name `named` accepts (an inode renamed or deleted keeps being
 * found under its last name); undefined where /proc cannot tell.
 */
export function writersOf(file: { dev: bigint; ino: bigint }, named: (name: string) => boolean): Writer[] | undefined {
  if (process.platform !== 'linux') return undefined;
  let pids: string[];
  try {
    pids = readdirSync('/proc');
  } catch {
    return undefined;
  }
  const found: Writer[] = [];
  for (const pid of pids) {
    if (!/^\d+$/.test(pid)) continue;
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue; // another user's process, or gone
    }
    for (const fd of fds) {
      const link = `/proc/${pid}/fd/${fd}`;
      try {
        if (!named(basename(readlinkSync(link).replace(/ \(deleted\)$/, '')))) continue;
        const st = statSync(link, { bigint: true });
        if (st.ino !== file.ino || st.dev !== file.dev) continue;
        const flags = /^flags:\s*([0-7]+)/m.exec(readFileSync(`/proc/${pid}/fdinfo/${fd}`, 'utf8'))?.[1];
        // O_WRONLY or O_RDWR (O_ACCMODE is the low two bits).
        if (flags && (parseInt(flags, 8) & 3) !== 0) found.push({ pid: Number(pid), command: commandOf(pid) });
      } catch {
        // closed meanwhile
      }
    }
  }
  return found;
}

function commandOf(pid: string): string {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return '?';
  }
}
