import * as assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '../../../src/core/log';
import { runMacroPhase } from '../../../src/core/phases/macro';
import { LevelProgress } from '../../../src/shared/results';
import { replayingAgent } from '../../support/replayAgent';

describe('a macro level in progress', () => {
  it("is named by the progress event's label, whatever its message says", async () => {
    const seen: LevelProgress[] = [];
    await runMacroPhase(
      {
        target: { name: 't', kind: 'local', serverUrl: 'http://127.0.0.1:9', python: 'python3' },
        transport: replayingAgent([
          // Reading a dataset is progress of no level.
          { type: 'progress', done: 0, total: 0, message: 'reading ShareGPT conversations from /data/sharegpt.json' },
          { type: 'progress', done: 3, total: 8, label: 'rate 4/s', message: 'three of eight requests done after 1 s' },
          { type: 'done', ok: true },
        ]),
        agent: { python: 'python3', path: 'agent.pyz', hash: 'x' },
        workspace: mkdtempSync(join(tmpdir(), 'ib-progress-')),
        sink: { runChanged: (r) => r.levelProgress && seen.push(r.levelProgress), findings() {} },
        log: silentLogger,
      },
      { requestRate: [4] },
    );
    assert.deepEqual(
      seen.map((p) => [p.level, p.done, p.total]),
      [['rate 4/s', 3, 8]],
    );
  });
});
