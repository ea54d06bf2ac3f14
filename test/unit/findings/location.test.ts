import * as assert from 'node:assert/strict';
import { join } from 'node:path';
import { findingsPathInWorkspace } from '../../../src/core/findings/location';

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
});
