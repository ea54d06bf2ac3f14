import * as assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import * as vscode from 'vscode';
import { closeAllEditors, workspaceFolder } from '../helpers';

function findRepoRoot(from: string): string {
  for (let dir = from; dir !== dirname(dir); dir = dirname(dir)) if (existsSync(join(dir, 'test', 'fixtures', 'vllm-bench'))) return dir;
  throw new Error(`no repository (a folder with test/fixtures/vllm-bench) above ${from}`);
}
// A --save-detailed result of vllm bench serve at concurrency 2 (test/fixtures/vllm-bench/README.md says how it was made).
const DETAILED = join(findRepoRoot(__dirname), 'test', 'fixtures', 'vllm-bench', 'kimi-sim-c2-detailed.json');

describe('Import vllm bench serve Result', () => {
  const runsRoot = () => join(workspaceFolder(), '.inference-bench', 'runs');
  const listRuns = () => new Set(existsSync(runsRoot()) ? readdirSync(runsRoot()) : []);
  let before = new Set<string>();
  beforeEach(() => {
    before = listRuns();
  });
  afterEach(async () => {
    for (const d of listRuns()) if (!before.has(d)) rmSync(join(runsRoot(), d), { recursive: true, force: true });
    await closeAllEditors();
  });

  it("makes a macro run of a --save-detailed result, each of its requests kept for the run's timeline", async () => {
    const runId = await vscode.commands.executeCommand<string | undefined>('inferenceBench.importVllmResult', vscode.Uri.file(DETAILED));
    assert.ok(runId, 'the command made no run');
    assert.deepEqual(
      [...listRuns()].filter((d) => !before.has(d)),
      [runId],
    );
    const saved = JSON.parse(readFileSync(DETAILED, 'utf8'));
    const meta = JSON.parse(readFileSync(join(runsRoot(), runId, 'meta.json'), 'utf8'));
    assert.equal(meta.phase, 'macro');
    const result = JSON.parse(readFileSync(join(runsRoot(), runId, 'result.json'), 'utf8'));
    assert.equal(result.requests, saved.completed, 'one request per completed one of the file');
    assert.equal(result.levels[0].max_concurrency, 2);
    assert.equal(result.levels[0].median_tpot_ms, saved.median_tpot_ms);
  });

  it('makes no run of a JSON that is not a vllm bench serve result', async () => {
    const other = join(workspaceFolder(), 'not-a-result.json');
    writeFileSync(other, JSON.stringify({ hello: 'world' }));
    try {
      const runId = await vscode.commands.executeCommand<string | undefined>('inferenceBench.importVllmResult', vscode.Uri.file(other));
      assert.equal(runId, undefined);
      assert.deepEqual(
        [...listRuns()].filter((d) => !before.has(d)),
        [],
      );
    } finally {
      rmSync(other, { force: true });
    }
  });
});
