import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { isAbsolute, join, relative, resolve } from 'node:path';
import { markIfDied, metaPath, RunMeta, runDir, runsRoot, writeAtomic } from '../runs/runFolder';
import { FindingsUpdate } from './findingsUpdate';
import { findingsPathInWorkspace } from './location';
import { markerId, parseRegions } from './markers';
import { runDiedLine } from './render';

/** The file in a run folder that keeps the run's last findings block, so that a run that dies can still say so there. */
const FINDINGS_FILE = 'findings.json';

interface KeptFindings {
  /** The findings document, relative to the workspace. */
  document: string;
  update: FindingsUpdate;
  /** The block has been told that the run died. */
  diedShown?: boolean;
}

/** The run a phase's findings section belongs to (phases name it `<phase>-<run id>`); undefined for other sections. */
function runOfSection(workspace: string, sectionId: string): string | undefined {
  // Run ids are a time and a phase (`2026-12-01_10-00-00-000-macro`): nothing that could name another folder.
  const match = /^(macro|micro|profile|probe)-([\w-]+)$/.exec(sectionId);
  return match && existsSync(metaPath(runDir(workspace, match[2]))) ? match[2] : undefined;
}

/**
 * Keeps the findings block a run last wrote in its run folder: if the process dies (SIGKILL, out
 * of memory) the next start finds the block there and adds that the run died, keeping its rows.
 */
export function keepRunFindings(workspace: string, document: string, update: FindingsUpdate): void {
  const runId = runOfSection(workspace, update.sectionId);
  const path = relative(workspace, resolve(workspace, document));
  if (!runId || path.startsWith('..') || isAbsolute(path)) return;
  try {
    writeAtomic(join(runDir(workspace, runId), FINDINGS_FILE), JSON.stringify({ document: path, update } satisfies KeptFindings));
  } catch {
    // A full disk is reported by the run itself; this copy only serves a run that dies.
  }
}

/** The block as it stands once the run is known dead: that line first, and no row still called running. */
export function diedFindings(update: FindingsUpdate, reason: string): FindingsUpdate {
  const tables = update.tables.map((table) => ({
    ...table,
    rows: table.rows.map((row) =>
      Object.fromEntries(Object.entries(row).map(([k, v]) => [k, typeof v === 'string' ? v.replace(/ \(running\)$/, ' (cut short: the run died)') : v])),
    ),
  }));
  return { ...update, lines: [runDiedLine(reason), ...update.lines], tables };
}

/** A run found dead whose findings block still has to say so. */
export interface DiedRunFindings {
  run: RunMeta;
  /** The findings document's path. */
  document: string;
  /** The block to write: the run's last one, saying it died. */
  update: FindingsUpdate;
  /** Records that the block was written (or need not be), so it is not written again. */
  shown(): void;
}

/** Whether the document still holds the tool's untouched block for `sectionId` (one the user removed or edited stays so). */
function blockIntact(document: string, sectionId: string): boolean {
  try {
    const id = markerId(sectionId);
    return parseRegions(readFileSync(document, 'utf8')).regions.some((r) => r.id === id && r.intact);
  } catch {
    return false;
  }
}

/**
 * The findings block of the run in `dir` if the run is marked dead and its block does not say so
 * yet; undefined otherwise. A block no longer in its document as the tool wrote it (removed, or
 * edited by hand) is left to the user and not asked for again.
 */
export function diedRunBlock(workspace: string, dir: string): DiedRunFindings | undefined {
  let meta: RunMeta;
  let kept: KeptFindings;
  try {
    meta = JSON.parse(readFileSync(metaPath(dir), 'utf8')) as RunMeta;
    if (!meta.died || !existsSync(join(dir, FINDINGS_FILE))) return undefined;
    kept = JSON.parse(readFileSync(join(dir, FINDINGS_FILE), 'utf8')) as KeptFindings;
  } catch {
    return undefined;
  }
  if (kept.diedShown) return undefined;
  const shown = () => {
    try {
      writeAtomic(join(dir, FINDINGS_FILE), JSON.stringify({ ...kept, diedShown: true }));
    } catch {
      // written again next time, to the same effect
    }
  };
  // Read back from a file anyone could edit: a document outside the workspace is never written.
  const document = findingsPathInWorkspace(workspace, kept.document);
  if (!document || !blockIntact(document, kept.update.sectionId)) {
    shown();
    return undefined;
  }
  return { run: meta, document, update: diedFindings(kept.update, meta.reason ?? ''), shown };
}

/**
 * Marks every run of the workspace whose process died interrupted (see markIfDied): `marked` are
 * the runs marked now, `blocks` the findings blocks that do not say so yet.
 */
export function settleDiedRuns(workspace: string): { marked: RunMeta[]; blocks: DiedRunFindings[] } {
  const root = runsRoot(workspace);
  const marked: RunMeta[] = [];
  const blocks: DiedRunFindings[] = [];
  let names: string[];
  try {
    names = readdirSync(root).sort();
  } catch {
    // no runs folder yet, or one that cannot be read: the run about to start says why if it matters
    return { marked, blocks };
  }
  for (const name of names) {
    const dir = join(root, name);
    const now = markIfDied(dir);
    if (now) marked.push(now);
    const block = diedRunBlock(workspace, dir);
    if (block) blocks.push(block);
  }
  return { marked, blocks };
}
