import * as assert from 'node:assert/strict';
import { ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { metaPath, RunFolder, RunMeta } from '../../../src/core/runs/runFolder';
import { currentOwner, ownerLiveness, procStat, RunOwner } from '../../../src/core/runs/runOwner';
import { StoredRuns } from '../../../src/core/runs/storedRuns';
import { waitFor } from '../../support/waitFor';

// Real processes stand in for the CLI that wrote a run: a `sleep` that runs, one that has ended,
// and a pid whose recorded start time is not the one /proc gives (what a reused pid looks like).
const children: ChildProcess[] = [];

function sleeper(): ChildProcess {
  const child = spawn('sleep', ['60'], { stdio: 'ignore' });
  children.push(child);
  return child;
}

function ended(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve() : child.once('exit', () => resolve())));
}

async function endedProcess(): Promise<RunOwner> {
  const child = sleeper();
  const owner = ownerOf(child.pid!);
  child.kill('SIGKILL');
  await ended(child);
  return owner;
}

function ownerOf(pid: number): RunOwner {
  return { pid, startTime: procStat(pid)?.startTime, host: hostname() };
}

function setOwner(run: RunFolder, owner: RunOwner): void {
  const meta = JSON.parse(readFileSync(metaPath(run.dir), 'utf8')) as RunMeta;
  writeFileSync(metaPath(run.dir), JSON.stringify({ ...meta, owner }));
}

after(() => children.forEach((c) => c.kill('SIGKILL')));

describe("whether a run's process still runs", () => {
  it('takes a running process with the start time it was recorded with for alive', () => {
    const child = sleeper();
    const owner = ownerOf(child.pid!);
    assert.ok(owner.startTime, '/proc gives the start time on Linux');
    assert.equal(ownerLiveness(owner), 'alive');
  });

  it('takes a pid whose process has ended for dead', async () => {
    assert.equal(ownerLiveness(await endedProcess()), 'dead');
  });

  it('takes a pid now held by a process that started at another time for dead (a reused pid)', () => {
    const child = sleeper();
    const real = ownerOf(child.pid!);
    assert.equal(ownerLiveness({ ...real, startTime: String(Number(real.startTime) - 1) }), 'dead');
  });

  it('takes a killed process its parent has not collected yet (a zombie) for dead', async () => {
    // The shell starts `sleep 0` and then becomes a long sleep that never collects it.
    const shell = spawn('sh', ['-c', 'sleep 0 & echo $!; exec sleep 60'], { stdio: ['ignore', 'pipe', 'ignore'] });
    children.push(shell);
    const pid = Number(await new Promise<string>((resolve) => shell.stdout!.once('data', (b: Buffer) => resolve(b.toString()))));
    const owner = ownerOf(pid);
    await waitFor('the uncollected `sleep 0` to be a zombie', () => procStat(pid)?.state === 'Z', 15_000, 20);
    assert.equal(ownerLiveness(owner), 'dead');
  });

  it('decides by the pid alone where no start time was recorded (no /proc)', async () => {
    const child = sleeper();
    assert.equal(ownerLiveness({ pid: child.pid!, host: hostname() }), 'alive');
    assert.equal(ownerLiveness({ ...(await endedProcess()), startTime: undefined }), 'dead');
  });

  it('never takes the process of another machine (a workspace on a shared disk) for dead', async () => {
    assert.equal(ownerLiveness({ ...(await endedProcess()), host: 'another-box' }), 'unknown');
  });

  it("never takes the process of another container's pid namespace (same host name, same workspace) for dead", async () => {
    const owner = await endedProcess();
    assert.equal(ownerLiveness({ ...owner, pidNamespace: currentOwner().pidNamespace }), 'dead');
    assert.equal(ownerLiveness({ ...owner, pidNamespace: 'pid:[1]' }), 'unknown');
  });
});

describe('runs whose process died', () => {
  let workspace: string;
  beforeEach(() => (workspace = mkdtempSync(join(tmpdir(), 'infbench-died-'))));
  afterEach(() => rmSync(workspace, { recursive: true, force: true }));

  it('are marked interrupted when the runs are listed, naming the pid and keeping the events received', async () => {
    const run = RunFolder.create(workspace, 'macro', 'gpu-box', {});
    run.appendEvent(JSON.stringify({ type: 'macro.level', level: 0, summary: { completed: 3 } }));
    const owner = await endedProcess();
    setOwner(run, owner);
    const [listed] = RunFolder.list(workspace);
    assert.equal(listed.info.status, 'interrupted');
    assert.match(listed.info.reason!, new RegExp(`process \\(pid ${owner.pid}\\) that ran it ended without finishing it: killed`));
    assert.match(listed.info.reason!, /results it had received are kept/);
    assert.ok(listed.info.finishedAt, 'the time of its last write stands for when it ended');
    assert.equal(listed.readEvents().length, 1);
  });

  it('keep the macro levels they had received in result.json, the one under way cut short, so the views draw them', async () => {
    const run = RunFolder.create(workspace, 'macro', 'gpu-box', {});
    const level = (n: number, partial: boolean, completed: number) =>
      JSON.stringify({ type: 'macro.level', level: n, partial, summary: { max_concurrency: 8, level: n, num_prompts: 32, completed, failed: 0 } });
    run.appendEvent(level(0, true, 10));
    run.appendEvent(level(0, false, 32));
    run.appendEvent(level(1, true, 12));
    setOwner(run, await endedProcess());
    const stored = new StoredRuns(() => workspace);
    await stored.refresh();
    const levels = stored.runs[0].macro!.levels;
    assert.deepEqual(
      levels.map((l) => [l.completed, l.partial ?? false, l.cut]),
      [
        [32, false, undefined],
        [12, true, { reason: 'interrupted', done: 12, planned: 32 }],
      ],
    );
  });

  it('leave the runs of live processes running, this one included', () => {
    const mine = RunFolder.create(workspace, 'macro', 'gpu-box', {});
    const other = RunFolder.create(workspace, 'micro', 'gpu-box', {});
    setOwner(other, ownerOf(sleeper().pid!));
    assert.deepEqual(
      RunFolder.list(workspace).map((r) => [r.info.id, r.info.status]),
      [
        [other.info.id, 'running'],
        [mine.info.id, 'running'],
      ],
    );
  });

  it('show as interrupted in the sidebar once the process dies, though the folder did not change', async () => {
    const child = sleeper();
    const run = RunFolder.create(workspace, 'macro', 'gpu-box', {});
    setOwner(run, ownerOf(child.pid!));
    const stored = new StoredRuns(() => workspace);
    await stored.refresh();
    assert.equal(stored.runs[0].status, 'running');
    child.kill('SIGKILL');
    await ended(child);
    await stored.refresh();
    assert.equal(stored.runs[0].status, 'interrupted');
    assert.match(stored.runs[0].reason!, new RegExp(`pid ${child.pid}`));
    assert.equal((JSON.parse(readFileSync(metaPath(run.dir), 'utf8')) as RunMeta).status, 'interrupted', 'meta.json says so too');
  });
});
