// The programs that race over one findings document, each a process of its own as in real life:
// an editor that saves the user's typing (in place, by renaming a new file over it, or as vim does
// by default) and a run of the tool writing its results; and a hostile neighbour that swaps the
// document, or its folder, for a symlink to a file outside the workspace. Run as a script:
//   node --require tsx/cjs test/unit/findings/raceActors.ts editor <inplace|rename|vim> FILE MS PAUSE_MS DONE_FLAG [PIECE_PAUSE_MS SEED]
//   node --require tsx/cjs test/unit/findings/raceActors.ts writer <section id> FILE DONE_FLAG WORKSPACE
//   node --require tsx/cjs test/unit/findings/raceActors.ts swapper <file|folder|create> PATH OUTSIDE MS PERIOD_MS DONE_FLAG
// Each says "ready" once loaded, starts on a line on its stdin (so that all of them race from the
// same moment however long each took to start) and prints one JSON line with what it saw at the end.
// raceOnce() starts them and gathers the reports.
import { spawn } from 'node:child_process';
import {
  closeSync,
  lstatSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  renameSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FindingsFile } from '../../../src/cli/findingsFile';
import { macroUpdate } from './fixtures';
import { Random } from './random';

export type EditorKind = 'inplace' | 'rename' | 'vim';

export const USER_DOC = [
  '# Findings: race',
  '',
  'My own introduction, which must survive.',
  '',
  '## 2. Macro results',
  '',
  'Hand-written note about the sweep.',
  '',
  '## Notes',
  '',
  ...Array.from({ length: 200 }, (_, i) => `- observation ${i}: the user's own line`),
  '',
].join('\n');

const pause = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/** The file's text; a document missing for a moment (a writer or vim has it aside) is read again. */
function readSoon(file: string): string {
  for (let tries = 0; ; tries++) {
    try {
      return readFileSync(file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || tries > 2000) throw err;
      pause(1);
    }
  }
}

/**
 * How an editor writes a save's bytes: by default in two pieces 1 ms apart; with `pauseMs`, in 2 to
 * 5 pieces with that pause between them (an editor held off the CPU, or one that writes as it
 * encodes), cut at random places, half of them right after a line break so that the part written
 * so far reads as a finished file.
 */
export interface Pieces {
  pauseMs: number;
  rng: Random;
}

function writeInPieces(fd: number, text: string, pieces?: Pieces): void {
  if (!pieces) {
    writeSync(fd, text.slice(0, text.length >> 1));
    pause(1);
    writeSync(fd, text.slice(text.length >> 1));
    return;
  }
  const { rng, pauseMs } = pieces;
  const cuts = Array.from({ length: 1 + rng.int(4) }, () => {
    const at = 1 + rng.int(text.length - 1);
    const lineEnd = text.indexOf('\n', at);
    return rng.chance(0.5) && lineEnd >= 0 ? lineEnd + 1 : at;
  }).sort((a, b) => a - b);
  let at = 0;
  for (const cut of [...cuts, text.length]) {
    if (cut <= at) continue;
    if (at > 0) pause(pauseMs);
    writeSync(fd, text.slice(at, cut));
    at = cut;
  }
}

export const SAVES: Record<EditorKind, (file: string, text: string, pieces?: Pieces) => void> = {
  // Truncate, a moment later write (VS Code, emacs with backup-by-copying, nano).
  inplace: (file, text, pieces) => {
    const fd = openSync(file, 'w');
    pause(pieces?.pauseMs ?? 4);
    writeInPieces(fd, text, pieces);
    closeSync(fd);
  },
  // A whole new file renamed over the document (JetBrains "safe write", emacs by default).
  rename: (file, text, pieces) => {
    const tmp = `${file}.editor-tmp`;
    const fd = openSync(tmp, 'w');
    writeInPieces(fd, text, pieces);
    fsyncSync(fd);
    closeSync(fd);
    renameSync(tmp, file);
  },
  // vim's default (backupcopy=auto, writebackup): the document renamed to a backup, a fresh file
  // created at its name and written in pieces, then the backup deleted.
  vim: (file, text, pieces) => {
    const backup = `${file}~`;
    let moved = true;
    try {
      renameSync(file, backup);
    } catch {
      moved = false;
    }
    const fd = openSync(file, 'w');
    writeInPieces(fd, text, pieces);
    fsyncSync(fd);
    closeSync(fd);
    if (moved) unlinkSync(backup);
  },
};

/**
 * An editor whose user types a line and saves, again and again. Before each save it reloads the
 * file (as an editor does when it changed on disk) and checks that every line the user ever saved
 * is in it. Reports how often one was missing.
 */
function editor(kind: EditorKind, file: string, ms: number, pauseMs: number, doneFlag: string, pieces?: Pieces): void {
  const wanted = USER_DOC.split('\n').filter((l) => l.trim());
  let saves = 0;
  let lost = 0;
  let sawTool = 0;
  let firstLost: string | undefined;
  let longestSaveMs = 0;
  // At least `ms`, and on until a run's write has been seen twice (a loaded machine holds the runs
  // off longer), so that every trial races; bounded so that a run that never writes fails the trial.
  const end = Date.now() + ms;
  const bound = end + 20 * ms;
  for (; (Date.now() < end || sawTool < 2) && Date.now() < bound; saves++) {
    const seen = readSoon(file);
    if (seen.includes('<!-- inference-bench:begin id=macro-run-')) sawTool++;
    const missing = wanted.find((l) => !seen.includes(l));
    if (missing) {
      lost++;
      firstLost ??= missing;
    }
    const typed = `- typed line ${saves} (${kind})`;
    wanted.push(typed);
    const began = performance.now();
    SAVES[kind](file, `${seen.replace(/\n*$/, '\n')}${typed}\n`, pieces);
    longestSaveMs = Math.max(longestSaveMs, performance.now() - began);
    // A user who saves in bursts and in lulls: with pieces, the pause after a save is drawn up to `pauseMs`.
    pause(pieces ? 1 + pieces.rng.int(pauseMs) : pauseMs);
  }
  writeFileSync(doneFlag, '');
  process.stdout.write(`${JSON.stringify({ saves, lost, firstLost, sawTool, longestSaveMs })}\n`);
}

/** A run of the tool writing its macro block, a row more each time. */
function writer(sectionId: string, file: string, doneFlag: string, workspace: string): void {
  const lines: string[] = [];
  const push = (level: string) => (m: string) => lines.push(`${level}: ${m}`);
  const log = { trace: push('trace'), debug: push('debug'), info: push('info'), warn: push('warn'), error: push('error') };
  const doc = new FindingsFile(file, log, { workspace });
  let updates = 0;
  // Writing as long as the editor saves, then once more.
  for (; !existsSync(doneFlag); updates++) {
    doc.findings(macroUpdate(1 + (updates % 8), sectionId));
    pause(5);
  }
  // The last word: with the editor gone this update lands.
  doc.findings(macroUpdate(8, sectionId));
  process.stdout.write(
    `${JSON.stringify({ updates, errors: lines.filter((l) => l.startsWith('error')), warnings: lines.filter((l) => l.startsWith('warn')).length })}\n`,
  );
}

export type SwapKind = 'file' | 'folder' | 'create';

/**
 * A neighbour that, every `periodMs` for `ms`, swaps `path` (the document, or its folder) for a
 * symlink to `outside` and back; `create` swaps the folder of a document that does not exist yet
 * (and deletes the one a run created, so that each update creates it again).
 */
function swapper(kind: SwapKind, path: string, outside: string, ms: number, periodMs: number, doneFlag: string): void {
  const stash = `${path}.swapper-real`;
  const link = `${path}.swapper-link`;
  symlinkSync(outside, link);
  let swaps = 0;
  for (const end = Date.now() + ms; Date.now() < end; swaps++) {
    if (kind === 'create') rmSync(join(path, 'doc.md'), { force: true });
    renameSync(path, stash);
    renameSync(link, path);
    pause(periodMs);
    renameSync(path, link);
    renameSync(stash, path);
    pause(periodMs);
  }
  unlinkSync(link);
  writeFileSync(doneFlag, '');
  process.stdout.write(`${JSON.stringify({ swaps })}\n`);
}

export interface RaceReport {
  saves: number;
  /** Times the editor found a line its user had saved missing from the file. */
  lost: number;
  firstLost?: string;
  /** Reloads in which the editor found a run's block: the runs wrote while it saved. */
  sawTool: number;
  /** The longest of the editor's saves, from opening the file to closing it (a save held off the CPU takes longer). */
  longestSaveMs: number;
  /** The user's lines missing from the document at the end. */
  lostAtEnd: string[];
  updates: number;
  errors: string[];
  /** Updates a run left for later (the document kept changing, or was empty a moment). */
  warnings: number;
  final: string;
  /** Files left beside the document (temp files, locks, backups). */
  leftovers: string[];
}

interface Actor {
  ready: Promise<void>;
  go: () => void;
  report: Promise<string>;
}

function start(args: string[]): Actor {
  const child = spawn(process.execPath, ['--require', 'tsx/cjs', __filename, ...args], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  let ready!: () => void;
  const isReady = new Promise<void>((r) => (ready = r));
  child.stdout.on('data', (b: Buffer) => {
    out += b.toString();
    if (out.startsWith('ready\n')) ready();
  });
  const report = new Promise<string>((resolve, reject) =>
    child.on('exit', (code) => (code === 0 ? resolve(out.slice('ready\n'.length)) : reject(new Error(`${args[0]} exited with ${code}: ${out}`)))),
  );
  return { ready: Promise.race([isReady, report.then(() => undefined)]), go: () => child.stdin.end('go\n'), report };
}

/**
 * One trial: an editor of `kind` saving for at least `ms` (pausing `pauseMs` after each save) while
 * `writers` runs of the tool write; with `pieces`, each save is written in pieces `pieces.pauseMs`
 * apart, and the pause after it drawn between 1 and `pauseMs`.
 */
export async function raceOnce(kind: EditorKind, writers: number, ms: number, pauseMs = 15, pieces?: { pauseMs: number; seed: number }): Promise<RaceReport> {
  const dir = mkdtempSync(join(tmpdir(), 'ib-findings-race-'));
  const file = join(dir, 'doc.md');
  // Where the editor says it is done: outside the document's folder, which must hold nothing else at the end.
  const flags = mkdtempSync(join(tmpdir(), 'ib-findings-race-flag-'));
  const doneFlag = join(flags, 'editor-done');
  writeFileSync(file, USER_DOC);
  try {
    const actors = [
      start(['editor', kind, file, String(ms), String(pauseMs), doneFlag, ...(pieces ? [String(pieces.pauseMs), String(pieces.seed)] : [])]),
      ...Array.from({ length: writers }, (_, i) => start(['writer', `macro-run-${i}`, file, doneFlag, dir])),
    ];
    await Promise.all(actors.map((a) => a.ready));
    actors.forEach((a) => a.go());
    const [ed, ...ws] = await Promise.all(actors.map((a) => a.report));
    const e = JSON.parse(ed) as { saves: number; lost: number; firstLost?: string; sawTool: number; longestSaveMs: number };
    const w = ws.map((x) => JSON.parse(x) as { updates: number; errors: string[]; warnings: number });
    const final = readFileSync(file, 'utf8');
    const typed = Array.from({ length: e.saves }, (_, i) => `- typed line ${i} (${kind})`);
    const lostAtEnd = [...USER_DOC.split('\n').filter((l) => l.trim()), ...typed].filter((l) => !final.includes(l));
    return {
      saves: e.saves,
      lost: e.lost,
      firstLost: e.firstLost,
      sawTool: e.sawTool,
      longestSaveMs: e.longestSaveMs,
      lostAtEnd,
      updates: w.reduce((n, x) => n + x.updates, 0),
      errors: w.flatMap((x) => x.errors),
      warnings: w.reduce((n, x) => n + x.warnings, 0),
      final,
      leftovers: readdirSync(dir).filter((f) => f !== 'doc.md'),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
    rmSync(flags, { recursive: true, force: true });
  }
}

export interface SwapReport {
  swaps: number;
  updates: number;
  /** What changed outside the workspace: files written, created or left there (temp files, locks). */
  outsideChanged: string[];
  errors: string[];
}

/** A snapshot of every file under `dir` and its bytes (links as their target). */
function snapshot(dir: string): Map<string, string> {
  const files = new Map<string, string>();
  for (const name of readdirSync(dir, { recursive: true }) as string[]) {
    const path = join(dir, name);
    const st = lstatSync(path);
    if (st.isFile()) files.set(name, readFileSync(path, 'latin1'));
    else if (!st.isDirectory()) files.set(name, `(${st.isSymbolicLink() ? 'link' : 'other'})`);
  }
  return files;
}

/**
 * One trial: `writers` runs of the tool update `ws/notes/doc.md` while a swapper (`kind`) swaps the
 * document or its folder for a symlink to a folder outside the workspace (holding its own doc.md,
 * except for `create`) every `periodMs`. Reports what changed outside.
 */
export async function swapOnce(kind: SwapKind, writers: number, ms: number, periodMs: number): Promise<SwapReport> {
  const root = mkdtempSync(join(tmpdir(), 'ib-findings-swap-'));
  const ws = join(root, 'ws');
  const outside = join(root, 'outside');
  const flags = mkdtempSync(join(tmpdir(), 'ib-findings-swap-flag-'));
  const doneFlag = join(flags, 'swapper-done');
  const file = join(ws, 'notes', 'doc.md');
  for (const d of [ws, join(ws, 'notes'), outside]) mkdirSync(d);
  if (kind !== 'create') writeFileSync(file, USER_DOC);
  writeFileSync(join(outside, 'victim.md'), "# Not the findings document\n\nSomeone else's text.\n");
  if (kind !== 'create') writeFileSync(join(outside, 'doc.md'), '# An outside document of the same name\n');
  const before = snapshot(outside);
  try {
    const actors = [
      kind === 'file'
        ? start(['swapper', kind, file, join(outside, 'victim.md'), String(ms), String(periodMs), doneFlag])
        : start(['swapper', kind, join(ws, 'notes'), outside, String(ms), String(periodMs), doneFlag]),
      ...Array.from({ length: writers }, (_, i) => start(['writer', `macro-run-${i}`, file, doneFlag, ws])),
    ];
    await Promise.all(actors.map((a) => a.ready));
    actors.forEach((a) => a.go());
    const [sw, ...ws_] = await Promise.all(actors.map((a) => a.report));
    const w = ws_.map((x) => JSON.parse(x) as { updates: number; errors: string[] });
    const after = snapshot(outside);
    const outsideChanged = [...new Set([...before.keys(), ...after.keys()])].filter((f) => before.get(f) !== after.get(f));
    return {
      swaps: (JSON.parse(sw) as { swaps: number }).swaps,
      updates: w.reduce((n, x) => n + x.updates, 0),
      outsideChanged,
      errors: w.flatMap((x) => x.errors),
    };
  } finally {
    rmSync(root, { recursive: true, force: true });
    rmSync(flags, { recursive: true, force: true });
  }
}

if (require.main === module) {
  const [role, a, file, ...rest] = process.argv.slice(2);
  process.stdout.write('ready\n');
  readSync(0, Buffer.alloc(3));
  if (role === 'editor') {
    const pieces = rest[3] === undefined ? undefined : { pauseMs: Number(rest[3]), rng: new Random(Number(rest[4])) };
    editor(a as EditorKind, file, Number(rest[0]), Number(rest[1]), rest[2], pieces);
  } else if (role === 'swapper') swapper(a as SwapKind, file, rest[0], Number(rest[1]), Number(rest[2]), rest[3]);
  else writer(a, file, rest[0], rest[1]);
}
