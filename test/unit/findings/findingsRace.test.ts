import * as assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
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
        if (!saved && (from === path || to === path)) {
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
          if (step === 0 && from === path) {
            step = 1;
            writeFileSync(path, first);
          }
          rename(from, to);
        };
        fs.linkSync = (from: import('node:fs').PathLike, to: import('node:fs').PathLike) => {
          if (step === 1 && to === path) {
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
          // The one loss no writer can rule out (docs in diskDocument.ts): a save that writes the
          // document's own path in pieces (in place, or vim's new file) held off the CPU mid-write for
          // longer than the tool watches a shrunken file, and read half-way as finished.
          if (kind === 'rename' || r.longestSaveMs < CUT_SETTLE_MS)
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
