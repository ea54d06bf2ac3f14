import * as assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { RunningSimulator, startSimulator } from '../../src/core/macro/simulator';

// A full disk, for real: the workspace is a small tmpfs, filled up before the run so that the run's
// own event log reaches its end a few dozen events in.
function pgrep(pattern: string): number[] {
  const r = spawnSync('pgrep', ['-f', pattern], { encoding: 'utf8' });
  return r.stdout
    .trim()
    .split('\n')
    .filter(Boolean)
    .map(Number)
    .filter((pid) => pid !== process.pid);
}

describe('a run on a disk that fills up', function () {
  this.timeout(60_000);
  const mount = mkdtempSync(join(tmpdir(), 'ib-full-'));
  const cache = mkdtempSync(join(tmpdir(), 'ib-full-cache-'));
  let sim: RunningSimulator;
  let mounted = false;

  before(async function () {
    assert.ok(existsSync('dist/cli.js') && existsSync('dist/agent.pyz'), 'dist/ is missing: run `npm run build` first');
    // Mounting needs root (CI runs as root); elsewhere there is no real full disk to be had.
    const m = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=256k', 'tmpfs', mount], { encoding: 'utf8' });
    if (m.status !== 0) this.skip();
    mounted = true;
    // Leave about 48 KiB: the run folder and its first events fit, the rest does not.
    writeFileSync(join(mount, 'filler'), Buffer.alloc(256 * 1024 - 48 * 1024));
    sim = await startSimulator({ port: 0, zeroCost: true });
  });

  after(async () => {
    await sim?.stop();
    if (mounted) spawnSync('umount', [mount]);
  });

  it('says "disk full at …", keeps the events whole, marks the run and leaves no temp file or process', async () => {
    const out = join(mount, 'out.json');
    const r = await new Promise<{ code: number | null; stderr: string }>((res) => {
      execFile(
        process.execPath,
        [
          resolve('dist/cli.js'),
          'macro',
          '--url',
          sim.url,
          '--concurrency',
          '4',
          '--requests',
          '2000',
          '--input-len',
          '16',
          '--output-len',
          '4',
          '--warmup',
          '0',
          '--workspace',
          mount,
          '--findings',
          'doc.md',
          '--out',
          out,
        ],
        { env: { ...process.env, XDG_CACHE_HOME: cache } },
        (err, _stdout, stderr) => res({ code: err ? ((err as { code?: number }).code ?? null) : 0, stderr }),
      );
    });
    assert.equal(r.code, 1, r.stderr);
    assert.doesNotMatch(r.stderr, /\n\s+at .*:\d+:\d+|Uncaught|node:internal/, `a stack trace on stderr:\n${r.stderr}`);
    assert.match(r.stderr, /Disk full at .*events\.jsonl/);
    const root = join(mount, '.inference-bench', 'runs');
    const [id] = readdirSync(root);
    const meta = JSON.parse(readFileSync(join(root, id, 'meta.json'), 'utf8')) as { status: string; reason: string };
    assert.equal(meta.status, 'failed');
    assert.match(meta.reason, /^Disk full at .*events\.jsonl.*stopped.*kept whole/);
    const log = readFileSync(join(root, id, 'events.jsonl'), 'utf8');
    assert.ok(log.length > 1000 && log.endsWith('\n'), 'events.jsonl is cut mid-line');
    for (const line of log.trimEnd().split('\n')) JSON.parse(line);
    const temps = readdirSync(mount, { recursive: true })
      .map(String)
      .filter((f) => f.endsWith('.tmp'));
    assert.deepEqual(temps, [], 'temp files left behind');
    // --out is written whole or not at all, and the message says where the result is (not "the run folder has the result").
    assert.ok(!existsSync(out), `a ${existsSync(out) ? statSync(out).size : 0}-byte --out was left`);
    assert.match(r.stderr, /infbench macro: Disk full at .*out\.json.*The events received are in the run folder; no .*out\.json was made/);
    assert.deepEqual(pgrep(`pyz .*macro --url ${sim.url}`), [], 'the agent still runs');
  });

  it('says that a read-only workspace is read-only (not "ENOENT … mkdir")', async () => {
    const ro = mkdtempSync(join(tmpdir(), 'ib-ro-'));
    assert.equal(spawnSync('mount', ['-t', 'tmpfs', '-o', 'ro,size=64k', 'tmpfs', ro]).status, 0);
    try {
      const r = spawnSync(
        process.execPath,
        [resolve('dist/cli.js'), 'macro', '--url', sim.url, '--concurrency', '1', '--requests', '1', '--warmup', '0', '--workspace', ro],
        { encoding: 'utf8', env: { ...process.env, XDG_CACHE_HOME: cache } },
      );
      assert.equal(r.status, 1, r.stderr);
      assert.match(r.stderr, new RegExp(`The workspace folder ${ro} is read-only \\(a read-only file system\\).*--workspace DIR`));
      assert.doesNotMatch(r.stderr, /ENOENT/);
    } finally {
      spawnSync('umount', [ro]);
    }
  });
});
