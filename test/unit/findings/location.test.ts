import * as assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findingsFileProblem, findingsPathInWorkspace } from '../../../src/core/findings/location';

// The rule both front ends apply: the CLI's --findings and the extension's inferenceBench.findingsDocument.
describe('where a findings document may be', () => {
  const ws = join('/', 'home', 'me', 'campaign');

  it('takes a path inside the workspace, relative or absolute', () => {
    assert.equal(findingsPathInWorkspace(ws, 'k25b6000bench1.md'), join(ws, 'k25b6000bench1.md'));
    assert.equal(findingsPathInWorkspace(ws, 'notes/./bench.md'), join(ws, 'notes', 'bench.md'));
    assert.equal(findingsPathInWorkspace(ws, join(ws, 'bench.md')), join(ws, 'bench.md'));
    assert.equal(findingsPathInWorkspace(ws, '..campaign-notes.md'), join(ws, '..campaign-notes.md'));
  });

  it('refuses any file outside it, and the workspace folder itself', () => {
    for (const given of ['../other.md', join('/', 'etc', 'motd'), join(ws, '..', 'campaign2', 'bench.md'), '.', ws]) {
      assert.equal(findingsPathInWorkspace(ws, given), undefined, given);
    }
  });

  it('follows symlinks: a link (of the file or of a folder) that leads outside is refused, one that stays inside is taken', () => {
    const top = mkdtempSync(join(tmpdir(), 'ib-location-'));
    const real = join(top, 'ws');
    mkdirSync(join(real, 'notes'), { recursive: true });
    mkdirSync(join(top, 'outside'));
    writeFileSync(join(top, 'outside', 'other.md'), '');
    writeFileSync(join(real, 'notes', 'real.md'), '');
    symlinkSync(join(top, 'outside', 'other.md'), join(real, 'out.md'));
    symlinkSync(join(top, 'outside'), join(real, 'elsewhere'));
    symlinkSync(join(real, 'notes', 'real.md'), join(real, 'in.md'));
    symlinkSync(join(top, 'outside', 'gone.md'), join(real, 'dangling.md'));
    // The workspace itself reached through a link counts as the same folder.
    symlinkSync(real, join(top, 'ws-link'));
    for (const ws of [real, join(top, 'ws-link')]) {
      assert.equal(findingsPathInWorkspace(ws, 'out.md'), undefined);
      assert.equal(findingsPathInWorkspace(ws, 'elsewhere/new.md'), undefined);
      assert.equal(findingsPathInWorkspace(ws, 'dangling.md'), undefined);
      assert.equal(findingsPathInWorkspace(ws, 'in.md'), join(ws, 'in.md'));
      assert.equal(findingsPathInWorkspace(ws, 'notes/new.md'), join(ws, 'notes', 'new.md'));
      assert.match(findingsFileProblem(ws, join(ws, 'elsewhere', 'new.md')) ?? '', /outside the workspace/);
      assert.equal(findingsFileProblem(ws, join(ws, 'in.md')), undefined);
    }
    assert.match(findingsFileProblem(real, join(real, 'notes')) ?? '', /is a folder, not a regular file/);
  });
});
