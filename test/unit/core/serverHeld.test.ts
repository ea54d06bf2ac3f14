import * as assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serverHeldBy } from '../../../src/core/campaign/serverHealth';
import { pendingServerChanges, serverChangesRoot, ServerChangeState } from '../../../src/core/server/serverChange';

// The workspace's server change records as a stop for micro leaves them (change.json, one folder a change).
function workspaceWith(changes: { name: string; state: ServerChangeState; purpose: string; target?: string }[]): string {
  const workspace = mkdtempSync(join(tmpdir(), 'ib-held-'));
  for (const c of changes) {
    const dir = join(serverChangesRoot(workspace), c.name);
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(dir, 'change.json'),
      JSON.stringify({ target: c.target ?? 'gpubox', url: 'http://127.0.0.1:8000', purpose: c.purpose, state: c.state, history: [] }),
    );
  }
  return workspace;
}

describe('the sidebar tells a server the tool stopped from one that died', () => {
  it('says "stopped for micro" while a planned stop for micro holds the server down', () => {
    const ws = workspaceWith([{ name: '2026-12-03_10-00-00-gpubox', state: 'stopped', purpose: 'micro' }]);
    assert.equal(serverHeldBy(pendingServerChanges(ws, 'gpubox')), 'stopped for micro');
  });

  it('follows the change through its steps: stopping, restarted for the profile, being put back', () => {
    const held = (state: ServerChangeState, purpose = 'micro, then profile') =>
      serverHeldBy(pendingServerChanges(workspaceWith([{ name: 'c', state, purpose }]), 'gpubox'));
    assert.equal(held('stopping'), 'stopping for micro, then profile');
    assert.equal(held('changed', 'profile'), 'restarted for profile');
    assert.equal(held('restoring'), 'being put back after micro, then profile');
  });

  it('leaves a server that stopped on its own, or after a change that failed or ended, to show as not answering', () => {
    const ws = workspaceWith([
      { name: '2026-12-03_09-00-00-gpubox', state: 'restored', purpose: 'micro' },
      { name: '2026-12-03_09-30-00-gpubox', state: 'failed', purpose: 'profile' },
      { name: '2026-12-03_10-00-00-other', state: 'stopped', purpose: 'micro', target: 'other' },
    ]);
    assert.equal(serverHeldBy(pendingServerChanges(ws, 'gpubox')), undefined);
  });
});
