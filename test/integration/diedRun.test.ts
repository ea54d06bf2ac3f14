import * as assert from 'node:assert/strict';
import { ChildProcess, execFile, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { RunningSimulator, startSimulator } from '../../src/core/macro/simulator';
import { waitFor } from '../support/waitFor';

const pexec = promisify(execFile);

// A CLI killed with SIGKILL (what the out-of-memory killer sends) cannot mark its run; the next
// start must find the run dead and say so in the run folder and in its findings block, keeping
// what was measured. A real CLI against the bundled simulator over the local transport.
describe('a CLI run killed with SIGKILL mid-run', function () {
  this.timeout(120_000);
  let dir: string;
  let workspace: string;
  // Its own cache folder: the deployed agent's command line names it, which finds the agent later.
  let cache: string;
  let env: NodeJS.ProcessEnv;
  let runsDir: string;
  let sim: RunningSimulator;
  let cli: ChildProcess | undefined;

  before(async () => {
    assert.ok(existsSync('dist/cli.js') && existsSync('dist/agent.pyz'), 'dist/ is missing: run `npm run build` first');
    dir = mkdtempSync(join(tmpdir(), 'ib-died-'));
    workspace = join(dir, 'ws');
    cache = join(dir, 'cache');
    env = { ...process.env, XDG_CACHE_HOME: cache };
    runsDir = join(workspace, '.inference-bench', 'runs');
    mkdirSync(workspace);
    mkdirSync(cache, { mode: 0o700 });
    sim = await startSimulator({ port: 0 });
  });

  after(async () => {
    cli?.kill('SIGKILL');
    // The agent the killed CLI had started is left behind on the host (here this machine), as it would be.
    if (cache) spawnSync('pkill', ['-KILL', '-f', cache]);
    await sim?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  function macroArgs(concurrency: string, requests: string): string[] {
    const flags = ['--concurrency', concurrency, '--requests', requests, '--input-len', '16', '--output-len', '16', '--warmup', '0'];
    return [resolve('dist/cli.js'), 'macro', '--target', 'local', '--url', sim.url, ...flags, '--workspace', workspace, '--findings', 'bench.md'];
  }

  const readMeta = (id: string) => JSON.parse(readFileSync(join(runsDir, id, 'meta.json'), 'utf8')) as { status: string; reason?: string };
  /** The tool's block for `sectionId` in the findings document: its text, without the markers. */
  function block(sectionId: string): string {
    const file = join(workspace, 'bench.md');
    const text = existsSync(file) ? readFileSync(file, 'utf8') : '';
    const match = new RegExp(`<!-- inference-bench:begin id=${sectionId} [^\\n]*\\n([\\s\\S]*?)<!-- inference-bench:end id=${sectionId} -->`).exec(text);
    return match?.[1] ?? '';
  }
  /** The finished levels' rows of the block's serving table (the block's other tables, such as the server's state, have rows per level too). */
  const finishedRows = (text: string) =>
    (text.split('**Serving figures per load level**')[1] ?? '')
      .split('\n\n_')[0]
      .split('\n')
      .filter((l) => /^\| c=1 /.test(l) && !l.includes('(running)'));

  it('is marked dead in its run folder and its findings block at the next start, keeping every finished level', async () => {
    cli = spawn(process.execPath, macroArgs(Array(40).fill(1).join(','), '3'), { env, stdio: ['ignore', 'ignore', 'pipe'] });
    cli.stderr!.resume();
    const exited = new Promise((r) => cli!.once('exit', r));
    const pid = cli.pid!;
    // Two finished levels shown in the document, then the kill lands wherever the run is.
    const id = await waitFor('the run folder', () => existsSync(runsDir) && readdirSync(runsDir)[0], 30_000);
    await waitFor('two finished levels in the findings block', () => finishedRows(block(`macro-${id}`)).length >= 2, 60_000);
    cli.kill('SIGKILL');
    await exited;
    const shown = finishedRows(block(`macro-${id}`));
    assert.equal(readMeta(id).status, 'running', 'nothing marks the run as the process dies');
    assert.doesNotMatch(block(`macro-${id}`), /died/);

    const next = await pexec(process.execPath, macroArgs('1', '1'), { env });

    assert.match(next.stderr, new RegExp(`macro run ${id} on local had died; marked interrupted`));
    const meta = readMeta(id);
    assert.equal(meta.status, 'interrupted');
    assert.match(
      meta.reason!,
      new RegExp(`The process \\(pid ${pid}\\) that ran it ended without finishing it: killed \\(SIGKILL, or the out-of-memory killer\\)`),
    );
    const events = readFileSync(join(runsDir, id, 'events.jsonl'), 'utf8');
    assert.ok((events.match(/"type": ?"macro.level"/g) ?? []).length >= 2, 'the event log keeps the levels it received');
    const kept = JSON.parse(readFileSync(join(runsDir, id, 'result.json'), 'utf8')) as { levels: { completed: number; cut?: unknown }[] };
    assert.ok(kept.levels.filter((l) => !l.cut).length >= shown.length, 'result.json holds every level the block showed');

    const after = block(`macro-${id}`);
    assert.match(after, /⚠ \*\*This run died before it finished\*\*: The process \(pid \d+\)/);
    for (const row of shown) assert.ok(after.includes(row), `the block still holds ${row}`);
    assert.doesNotMatch(after, /\(running\)/, 'no level is still called running');
    // The new run went on as usual and wrote its own block.
    const newId = readdirSync(runsDir).find((n) => n !== id)!;
    assert.equal(readMeta(newId).status, 'completed');
    assert.match(block(`macro-${newId}`), /^\| c=1 /m);
    assert.doesNotMatch(block(`macro-${newId}`), /died/);

    // Told once: a later start leaves the dead run and its block as they are.
    const markedMeta = readFileSync(join(runsDir, id, 'meta.json'), 'utf8');
    const third = await pexec(process.execPath, macroArgs('1', '1'), { env });
    assert.doesNotMatch(third.stderr, /had died/);
    assert.equal(readFileSync(join(runsDir, id, 'meta.json'), 'utf8'), markedMeta);
    assert.equal(block(`macro-${id}`), after);
  });
});
