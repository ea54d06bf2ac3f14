import * as assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FindingsFile } from '../../../src/cli/findingsFile';
import { CUT_SETTLE_MS } from '../../../src/core/findings/diskDocument';
import { Logger } from '../../../src/core/log';
import { macroUpdate } from './fixtures';
import { EditorKind, raceOnce, SAVES, USER_DOC as RACE_USER_DOC } from './raceActors';

function recordingLog(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const push = (level: string) => (m: string) => lines.push(`${level}: ${m}`);
  return { lines, trace: push('trace'), debug: push('debug'), info: push('info'), warn: push('warn'), error: push('error') };
}

const USER_DOC = RACE_USER_DOC;

const SAVE_STYLE: Record<EditorKind, string> = {
  inplace: 'in place',
  rename: 'by renaming a new file over it',
  vim: 'as vim does (old file renamed to a backup, a new one written)',
};

describe('findings document on disk while editors and other runs save it', function () {
  // Each trial starts three node processes; a loaded machine takes seconds for that alone.
  this.timeout(180_000);

  // The node:fs module object itself (not an import's copy of it), so that a test can step into a rename the tool makes.
  const fs = createRequire(__filename)('node:fs') as typeof import('node:fs');
  // The tool names the document through its folder opened once (/proc/self/fd/N/doc.md on Linux), not by the path given.
  const isDoc = (p: import('node:fs').PathLike) => String(p).endsWith('/doc.md');

  // The narrowest window, made certain rather than waited for: the editor's save lands right before
  // the tool's first rename of the document (the old code's replace, the new code's take-aside).
  // The old code lost the rename and vim saves; the in-place one guards the new code's put-back.
  for (const kind of ['inplace', 'rename', 'vim'] as EditorKind[]) {
    it(`keeps a save ${SAVE_STYLE[kind]} that lands just before the tool replaces the document`, () => {
      const dir = realpathSync(mkdtempSync(join(tmpdir(), 'ib-findings-window-')));
      const path = join(dir, 'doc.md');
      writeFileSync(path, USER_DOC);
      const typed = '- typed just before the tool wrote';
      const rename = fs.renameSync;
      let saved = false;
      fs.renameSync = (from: import('node:fs').PathLike, to: import('node:fs').PathLike) => {
        if (!saved && (isDoc(from) || isDoc(to))) {
          saved = true;
          SAVES[kind](path, `${readFileSync(path, 'utf8')}${typed}\n`);
        }
        rename(from, to);
      };
      const log = recordingLog();
      try {
        new FindingsFile(path, log, { workspace: dir }).findings(macroUpdate(1));
      } finally {
        fs.renameSync = rename;
      }
      assert.ok(saved, 'the tool never renamed the document');
      const final = readFileSync(path, 'utf8');
      assert.ok(final.includes(typed), "the editor's save was replaced");
      for (const line of USER_DOC.split('\n').filter((l) => l.trim())) assert.ok(final.includes(line), `lost: ${line}`);
      assert.match(final, /inference-bench:begin id=macro/);
      assert.deepEqual(log.lines, []);
      assert.deepEqual(readdirSync(dir), ['doc.md']);
    });
  }

  // Two saves while the document is aside (steps 3-4): the first is taken, the second creates the
  // path anew, so the taken one cannot go back. On a loaded machine that moment lasts tens of ms.
  for (const keepsFirst of [true, false]) {
    it(
      keepsFirst
        ? 'drops a save taken aside when the newer save in its place holds every line of it, and writes into the newer one'
        : 'keeps a save taken aside under a visible name when the newer save in its place lacks a line of it',
      () => {
        const dir = realpathSync(mkdtempSync(join(tmpdir(), 'ib-findings-two-saves-')));
        const path = join(dir, 'doc.md');
        writeFileSync(path, USER_DOC);
        const first = `${USER_DOC}- saved first\n`;
        // The newer save: the first one with a line added, or with the user's introduction deleted.
        const second = keepsFirst ? `${first}- saved second\n` : `${first.replace('My own introduction, which must survive.\n', '')}- saved second\n`;
        const rename = fs.renameSync;
        const link = fs.linkSync;
        let step = 0;
        fs.renameSync = (from: import('node:fs').PathLike, to: import('node:fs').PathLike) => {
          if (step === 0 && isDoc(from)) {
            step = 1;
            writeFileSync(path, first);
          }
          rename(from, to);
        };
        fs.linkSync = (from: import('node:fs').PathLike, to: import('node:fs').PathLike) => {
          if (step === 1 && isDoc(to)) {
            step = 2;
            writeFileSync(path, second);
          }
          link(from, to);
        };
        const log = recordingLog();
        try {
          new FindingsFile(path, log, { workspace: dir }).findings(macroUpdate(1));
        } finally {
          fs.renameSync = rename;
          fs.linkSync = link;
        }
        assert.equal(step, 2, 'the tool never tried to put the taken save back');
        const final = readFileSync(path, 'utf8');
        assert.ok(final.includes('- saved first') && final.includes('- saved second'), 'a save was replaced');
        const kept = readdirSync(dir).filter((f) => f !== 'doc.md');
        if (keepsFirst) {
          assert.deepEqual(kept, [], 'nothing of the taken save is missing from the newer one: no copy is left beside the document');
          assert.deepEqual(log.lines, []);
          assert.match(final, /inference-bench:begin id=macro/);
        } else {
          assert.equal(kept.length, 1);
          assert.match(kept[0], /^doc\.md\.saved-/);
          assert.equal(readFileSync(join(dir, kept[0]), 'utf8'), first, 'the taken save is kept whole');
          assert.match(log.lines.join('\n'), /Compare the two/);
        }
      },
    );
  }

  // Two trials of each editor with one run and with two runs at once; bench/findings-race.ts runs many.
  // Before the fix, a rename-saving editor or vim lost the user's lines within two trials with two runs.
  for (const kind of ['inplace', 'rename', 'vim'] as EditorKind[]) {
    for (const writers of [1, 2]) {
      it(`never loses a line the user saved, with an editor saving ${SAVE_STYLE[kind]} while ${writers === 1 ? 'a run writes' : 'two runs write'}`, async () => {
        for (let trial = 0; trial < 2; trial++) {
          // A save every ~45 ms: with one every 20 ms (the bench's), a run seldom finds the file still long enough to write.
          const r = await raceOnce(kind, writers, 1500, 40);
          assert.ok(r.saves > 10 && r.sawTool > 0, `${r.saves} saves, ${r.sawTool} of them after a run's write: the trial did not race`);
          assert.equal(
            r.lost,
            0,
            `the editor found a line its user saved missing ${r.lost} times in ${r.saves} saves (first: ${r.firstLost}; its longest save took ${Math.round(r.longestSaveMs)} ms)`,
          );
          assert.deepEqual(r.lostAtEnd, [], 'lines missing at the end');
          assert.deepEqual(r.errors, []);
          // A save taken aside that the newer one in its place does not hold is kept, visibly and said.
          const kept = r.leftovers.filter((f) => /^doc\.md\.saved-/.test(f));
          assert.deepEqual(
            r.leftovers.filter((f) => !kept.includes(f)),
            [],
            'no temp file, lock or backup is left behind',
          );
          if (kept.length) assert.ok(r.warnings >= kept.length, `${kept.join(', ')} kept without a word`);
          // With the editor gone, each run's last update lands: the tool redid what an editor's save took.
          for (let i = 0; i < writers; i++) assert.match(r.final, new RegExp(`inference-bench:begin id=macro-run-${i} `));
        }
      });
    }
  }

  // An editor that writes a save in pieces with a pause between them (held off the CPU, or writing
  // as it encodes) shows a shorter file for the length of the pause, one that may end on a line
  // break. The tool must not take it for the save: the rest of the save would go to the file it replaced.
  it('keeps every line of an in-place save that pauses between its pieces for longer than the tool watches the file', async () => {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), 'ib-findings-pieces-')));
    const path = join(dir, 'doc.md');
    writeFileSync(path, USER_DOC);
    const saved = `${USER_DOC}- typed while the tool was writing\n`;
    const half = saved.indexOf('\n', saved.length >> 1) + 1;
    // A plain node process (not the tool's) as the editor: truncate, write up to a line break, say so, pause, write the rest.
    const editor = spawn(
      process.execPath,
      [
        '-e',
        `const fs = require('fs'); const [path, text, half, ms] = process.argv.slice(1); const fd = fs.openSync(path, 'w');
         fs.writeSync(fd, text.slice(0, +half)); process.stdout.write('half\\n');
         Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, +ms); fs.writeSync(fd, text.slice(+half)); fs.closeSync(fd);`,
        path,
        saved,
        String(half),
        String(CUT_SETTLE_MS * 2),
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const exited = new Promise((resolve) => editor.on('exit', resolve));
    await new Promise((resolve) => editor.stdout.once('data', resolve));
    const log = recordingLog();
    new FindingsFile(path, log, { workspace: dir }).findings(macroUpdate(1));
    await exited;
    const final = readFileSync(path, 'utf8');
    for (const line of saved.split('\n').filter((l) => l.trim())) assert.ok(final.includes(line), `lost: ${line}`);
    assert.match(final, /inference-bench:begin id=macro/);
    assert.deepEqual(log.lines, []);
    assert.deepEqual(readdirSync(dir), ['doc.md']);
  });

  // The sweep in test/fuzz/editors.fuzz.ts runs more pauses, editors and seeds; one trial each here.
  for (const pauseMs of [0, 5, 30]) {
    it(`never loses a line the user saved, with an editor saving in place in pieces ${pauseMs} ms apart while two runs write`, async () => {
      const r = await raceOnce('inplace', 2, 1500, 40, { pauseMs, seed: 35 });
      assert.ok(r.saves > 10 && r.sawTool > 0, `${r.saves} saves, ${r.sawTool} of them after a run's write: the trial did not race`);
      assert.equal(r.lost, 0, `the editor found a line its user saved missing ${r.lost} times in ${r.saves} saves (first: ${r.firstLost})`);
      assert.deepEqual(r.lostAtEnd, [], 'lines missing at the end');
      assert.deepEqual(r.errors, []);
      assert.deepEqual(r.leftovers, [], 'nothing is left beside the document');
    });
  }

  it('leaves a read-only document unwritten and says so', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ib-findings-ro-'));
    const path = join(dir, 'doc.md');
    writeFileSync(path, USER_DOC);
    chmodSync(path, 0o444);
    const log = recordingLog();
    new FindingsFile(path, log).findings(macroUpdate(1));
    assert.equal(readFileSync(path, 'utf8'), USER_DOC);
    assert.equal(log.lines.length, 1);
    assert.match(log.lines[0], /^error: .*doc\.md is read-only.*chmod u\+w/);
    assert.deepEqual(readdirSync(dir), ['doc.md']);
  });

  it("does not take a document emptied a moment ago as the user's intent", () => {
    const dir = mkdtempSync(join(tmpdir(), 'ib-findings-empty-'));
    const path = join(dir, 'doc.md');
    writeFileSync(path, USER_DOC);
    const log = recordingLog();
    const doc = new FindingsFile(path, log);
    doc.findings(macroUpdate(1));
    // Truncated, as by a save that has not written yet (or a crashed one): the tool writes nothing.
    writeFileSync(path, '');
    doc.findings(macroUpdate(2));
    assert.equal(readFileSync(path, 'utf8'), '');
    assert.match(log.lines.at(-1) ?? '', /^warn: .*doc\.md is empty .*left as it is/);
  });
});

// A neighbour that swaps the document, or a folder on its path, for a symlink to a file outside the
// workspace, timed here to land in the moment between the tool's check of the path and its write.
describe('findings document on disk while its path is swapped for a symlink', () => {
  const fs = createRequire(__filename)('node:fs') as typeof import('node:fs');

  /** A workspace with notes/doc.md, and a folder outside it holding a doc.md and victim.md of its own. */
  function setting(withDocument = true) {
    const root = realpathSync(mkdtempSync(join(tmpdir(), 'ib-findings-swap-')));
    const ws = join(root, 'ws');
    const outside = join(root, 'outside');
    mkdirSync(join(ws, 'notes'), { recursive: true });
    mkdirSync(outside);
    const file = join(ws, 'notes', 'doc.md');
    if (withDocument) writeFileSync(file, USER_DOC);
    writeFileSync(join(outside, 'victim.md'), '# Not the findings document\n');
    if (withDocument) writeFileSync(join(outside, 'doc.md'), '# An outside document of the same name\n');
    const outsideBefore = () => readdirSync(outside).map((f) => `${f}: ${readFileSync(join(outside, f), 'utf8')}`);
    return { ws, outside, file, before: outsideBefore(), outsideNow: outsideBefore };
  }

  /** Runs `body` with fs[name] doing `swap` once, right before (or, with `after`, right after) its first call that `when` accepts. */
  function swappingAt<K extends 'openSync' | 'lstatSync' | 'renameSync'>(
    name: K,
    when: (arg: string) => boolean,
    swap: () => void,
    body: () => void,
    after = false,
  ) {
    const original = fs[name] as (...args: unknown[]) => unknown;
    let done = false;
    const hook = (...args: unknown[]) => {
      const now = !done && when(String(args[0]));
      if (now) done = true;
      if (now && !after) swap();
      const result = original(...args);
      if (now && after) swap();
      return result;
    };
    (fs as Record<string, unknown>)[name] = Object.assign(hook, original);
    try {
      body();
    } finally {
      (fs as Record<string, unknown>)[name] = original;
    }
    assert.ok(done, `the tool never called ${name} where the swap was to land`);
  }

  it('never writes into an outside file when the document is swapped for a symlink after its path was checked', () => {
    const s = setting();
    const log = recordingLog();
    // Right after the tool looked at what the path names (the old code then resolved it a second time, and wrote where that led).
    swappingAt(
      'lstatSync',
      (p) => p === s.file,
      () => {
        renameSync(s.file, `${s.file}.real`);
        symlinkSync(join(s.outside, 'victim.md'), s.file);
      },
      () => new FindingsFile(s.file, log, { workspace: s.ws }).findings(macroUpdate(1)),
      true,
    );
    assert.deepEqual(s.outsideNow(), s.before, 'the file outside the workspace was changed, or something was left beside it');
    assert.match(log.lines.join('\n'), /^error: .*outside the workspace/m);
  });

  it("never writes outside when the document's folder is swapped for a symlink after its path was checked", () => {
    const s = setting();
    const log = recordingLog();
    swappingAt(
      'openSync',
      () => true,
      () => {
        renameSync(join(s.ws, 'notes'), join(s.ws, 'notes.real'));
        symlinkSync(s.outside, join(s.ws, 'notes'));
      },
      () => new FindingsFile(s.file, log, { workspace: s.ws }).findings(macroUpdate(1)),
    );
    assert.deepEqual(s.outsideNow(), s.before, 'the outside folder was written');
    assert.equal(readFileSync(join(s.ws, 'notes.real', 'doc.md'), 'utf8'), USER_DOC);
    assert.match(log.lines.join('\n'), /^error: .*outside the workspace/m);
  });

  it("writes into the document's own folder when that folder is swapped for a symlink while the tool writes", () => {
    const s = setting();
    const log = recordingLog();
    // Right before the tool takes the document aside: its folder is open by then, and stays the one written.
    swappingAt(
      'renameSync',
      (p) => p.endsWith('/doc.md'),
      () => {
        renameSync(join(s.ws, 'notes'), join(s.ws, 'notes.real'));
        symlinkSync(s.outside, join(s.ws, 'notes'));
      },
      () => new FindingsFile(s.file, log, { workspace: s.ws }).findings(macroUpdate(1)),
    );
    assert.deepEqual(s.outsideNow(), s.before, 'the outside folder was written');
    const final = readFileSync(join(s.ws, 'notes.real', 'doc.md'), 'utf8');
    for (const line of USER_DOC.split('\n').filter((l) => l.trim())) assert.ok(final.includes(line), `lost: ${line}`);
    assert.match(final, /inference-bench:begin id=macro/);
    assert.deepEqual(readdirSync(join(s.ws, 'notes.real')), ['doc.md']);
    assert.deepEqual(log.lines, []);
  });

  it('never creates the document outside when its folder is swapped for a symlink while it is created', () => {
    const s = setting(false);
    const doc = new FindingsFile(s.file, recordingLog(), { workspace: s.ws });
    swappingAt(
      'openSync',
      () => true,
      () => {
        renameSync(join(s.ws, 'notes'), join(s.ws, 'notes.real'));
        symlinkSync(s.outside, join(s.ws, 'notes'));
      },
      () => assert.throws(() => doc.ensure(), /not written: .*outside the workspace/),
    );
    assert.deepEqual(s.outsideNow(), s.before, 'something was created outside the workspace');
    assert.equal(existsSync(join(s.ws, 'notes.real', 'doc.md')), false);
  });
});
