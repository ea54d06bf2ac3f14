import * as assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { FindingsUpdate } from '../../../src/core/campaign/phaseContext';
import { applyFindingsUpdate } from '../../../src/core/findings/update';
import { diedRunBlock, keepRunFindings, settleDiedRuns } from '../../../src/core/findings/runFindings';
import { metaPath, RunFolder, RunMeta } from '../../../src/core/runs/runFolder';
import { procStat, RunOwner } from '../../../src/core/runs/runOwner';
import { StoredRuns } from '../../../src/core/runs/storedRuns';

/** A real process that ran and ended: what a killed CLI leaves in its run's meta.json. */
async function endedOwner(): Promise<RunOwner> {
  const child = spawn('sleep', ['60'], { stdio: 'ignore' });
  const owner = { pid: child.pid!, startTime: procStat(child.pid!)?.startTime, host: hostname() };
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await exited;
  return owner;
}

function blockOf(run: RunFolder): FindingsUpdate {
  return {
    sectionId: `macro-${run.info.id}`,
    heading: 'Serving benchmark — gpu-box',
    lines: ['**decode 57.1 tok/s at c=1**'],
    tables: [
      {
        id: 'levels',
        title: 'Serving metrics per load level',
        columns: [
          { key: 'load', label: 'Load' },
          { key: 'ok', label: 'OK', align: 'right' },
        ],
        rows: [
          { load: 'c=1', ok: '8' },
          { load: 'c=8 (running)', ok: '5' },
        ],
      },
    ],
  };
}

describe("a dead run's findings block", () => {
  let workspace: string;
  let doc: string;
  beforeEach(() => {
    workspace = mkdtempSync(join(tmpdir(), 'infbench-died-findings-'));
    doc = join(workspace, 'bench.md');
  });
  afterEach(() => rmSync(workspace, { recursive: true, force: true }));

  /** A run that wrote `update` into the document and was then killed. */
  async function killedRun(): Promise<{ run: RunFolder; update: FindingsUpdate }> {
    const run = RunFolder.create(workspace, 'macro', 'gpu-box', {});
    const update = blockOf(run);
    keepRunFindings(workspace, doc, update);
    writeFileSync(doc, applyFindingsUpdate('# Campaign\n\n## Serving benchmarks\n\n', update).text);
    const meta = JSON.parse(readFileSync(metaPath(run.dir), 'utf8')) as RunMeta;
    writeFileSync(metaPath(run.dir), JSON.stringify({ ...meta, owner: await endedOwner() }));
    return { run, update };
  }

  it('says the run died, with every row it showed, the one under way no longer called running', async () => {
    await killedRun();
    const { marked, blocks } = settleDiedRuns(workspace);
    assert.equal(marked.length, 1);
    assert.equal(blocks.length, 1);
    assert.match(blocks[0].update.lines[0], /^⚠ \*\*This run died before it finished\*\*: The process \(pid \d+\) that ran it ended/);
    assert.equal(blocks[0].update.lines[1], '**decode 57.1 tok/s at c=1**');
    assert.deepEqual(blocks[0].update.tables[0].rows, [
      { load: 'c=1', ok: '8' },
      { load: 'c=8 (cut short: the run died)', ok: '5' },
    ]);
    assert.equal(blocks[0].document, doc);
  });

  it('is asked for once, and is offered to the sidebar of the window that found the run dead', async () => {
    const { run } = await killedRun();
    const stored = new StoredRuns(() => workspace);
    await stored.refresh();
    assert.deepEqual(stored.takeDied(), [run.dir]);
    assert.deepEqual(stored.takeDied(), []);
    const block = diedRunBlock(workspace, run.dir)!;
    block.shown();
    assert.equal(diedRunBlock(workspace, run.dir), undefined);
    assert.deepEqual(settleDiedRuns(workspace), { marked: [], blocks: [] });
  });

  it('leaves a block the user edited by hand as theirs', async () => {
    const { run } = await killedRun();
    writeFileSync(doc, readFileSync(doc, 'utf8').replace('| c=1 ', '| c=1 (mine) '));
    assert.equal(settleDiedRuns(workspace).blocks.length, 0);
    assert.equal((JSON.parse(readFileSync(metaPath(run.dir), 'utf8')) as RunMeta).status, 'interrupted', 'the run folder says so all the same');
  });

  it('is kept only for a run of the workspace and a document inside it', () => {
    const run = RunFolder.create(workspace, 'macro', 'gpu-box', {});
    keepRunFindings(workspace, join(tmpdir(), 'elsewhere.md'), blockOf(run));
    keepRunFindings(workspace, doc, { ...blockOf(run), sectionId: 'budget-gpu-box' });
    assert.equal(existsSync(join(run.dir, 'findings.json')), false);
  });
});
