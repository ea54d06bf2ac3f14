import * as assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FindingsFile } from '../../../src/cli/findingsFile';
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

  // Two trials of each editor with one run and with two runs at once; bench/findings-race.ts runs many.
  // Before the fix, a rename-saving editor or vim lost the user's lines within two trials with two runs.
  for (const kind of ['inplace', 'rename', 'vim'] as EditorKind[]) {
    for (const writers of [1, 2]) {
      it(`never loses a line the user saved, with an editor saving ${SAVE_STYLE[kind]} while ${writers === 1 ? 'a run writes' : 'two runs write'}`, async () => {
        for (let trial = 0; trial < 2; trial++) {
          // A save every ~45 ms: with one every 20 ms (the bench's), a run seldom finds the file still long enough to write.
          const r = await raceOnce(kind, writers, 1500, 40);
          assert.ok(r.saves > 10 && r.sawTool > 0, `${r.saves} saves, ${r.sawTool} of them after a run's write: the trial did not race`);
          assert.equal(r.lost, 0, `the editor found a line its user saved missing ${r.lost} times in ${r.saves} saves (first: ${r.firstLost})`);
          assert.deepEqual(r.lostAtEnd, [], 'lines missing at the end');
          assert.deepEqual(r.errors, []);
          assert.deepEqual(r.leftovers, [], 'no temp file, lock or backup is left behind');
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
