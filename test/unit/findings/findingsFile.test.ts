import * as assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { FindingsFile, findingsFlagPath } from '../../../src/cli/findingsFile';
import { userText } from '../../../src/core/findings/markers';
import { Logger } from '../../../src/core/log';
import { macroUpdate } from './fixtures';

function recordingLog(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const push = (level: string) => (m: string) => lines.push(`${level}: ${m}`);
  return { lines, trace: push('trace'), debug: push('debug'), info: push('info'), warn: push('warn'), error: push('error') };
}

describe("findings document on disk (the CLI's sink)", () => {
  it("creates the skeleton once, then keeps the user's edits made between updates", () => {
    const dir = mkdtempSync(join(tmpdir(), 'ib-findings-'));
    const path = join(dir, 'k25b6000bench1.md');
    const doc = new FindingsFile(path, recordingLog(), { now: () => new Date('2026-12-01T10:00:00Z') });
    doc.ensure({ target: 'local', hardware: '8× NVIDIA H200' });
    assert.match(readFileSync(path, 'utf8'), /^# Findings: k25b6000bench1\n[\s\S]*\*\*Hardware:\*\* 8× NVIDIA H200/);
    doc.findings(macroUpdate(1));
    // The user types into the file in between, as an editor would save it.
    const typed = readFileSync(path, 'utf8').replace('## Notes\n', '## Notes\n\nSaw a TTFT spike at c=64.\n');
    writeFileSync(path, typed);
    doc.findings(macroUpdate(3));
    const final = readFileSync(path, 'utf8');
    assert.equal(userText(final), userText(typed));
    assert.match(final, /\| +4 \| +54\.0 \|/);
    doc.ensure();
    assert.equal(readFileSync(path, 'utf8'), final, 'ensure() never rewrites an existing document');
    assert.deepEqual(readdirSync(dir), ['k25b6000bench1.md'], 'no temp file is left behind');
  });

  it("writes through a symlink to a file of the workspace and keeps the file's permissions", () => {
    const dir = mkdtempSync(join(tmpdir(), 'ib-findings-'));
    const real = join(dir, 'real.md');
    writeFileSync(real, '# Mine\n\n## Macro\n\n');
    chmodSync(real, 0o640);
    symlinkSync(real, join(dir, 'link.md'));
    new FindingsFile(join(dir, 'link.md'), recordingLog(), { workspace: dir }).findings(macroUpdate(1));
    assert.match(readFileSync(real, 'utf8'), /inference-bench:begin id=macro/);
    assert.equal(statSync(real).mode & 0o777, 0o640);
    assert.ok(lstatSync(join(dir, 'link.md')).isSymbolicLink(), 'the link is still a link');
  });

  it("keeps a user's line that is not UTF-8 (a Latin-1 byte) byte for byte", () => {
    const dir = mkdtempSync(join(tmpdir(), 'ib-findings-'));
    const path = join(dir, 'doc.md');
    const before = Buffer.concat([
      Buffer.from('# Mine\n\n## Macro\n\nNotes from the caf'),
      Buffer.from([0xe9]),
      Buffer.from(' (Latin-1), and a cut \xe2\x82 sequence\n', 'latin1'),
    ]);
    writeFileSync(path, before);
    new FindingsFile(path).findings(macroUpdate(1));
    const after = readFileSync(path);
    const begin = after.indexOf('<!-- inference-bench:begin');
    const endLine = after.indexOf('\n', after.indexOf('<!-- inference-bench:end')) + 1;
    assert.ok(begin > 0 && endLine > begin, 'the block was written');
    assert.deepEqual(Buffer.concat([after.subarray(0, begin), after.subarray(endLine)]), before);
  });

  it('puts back a document that a run killed mid-write left under its hidden name, rather than a fresh skeleton', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ib-findings-'));
    // The name a write gives the document for the microseconds it is taken aside.
    writeFileSync(join(dir, '.doc.md.4242.k3x9ab.aside'), '# Mine\n\n## Macro\n\nmy line\n');
    new FindingsFile(join(dir, 'doc.md'), recordingLog(), { workspace: dir }).findings(macroUpdate(1));
    const text = readFileSync(join(dir, 'doc.md'), 'utf8');
    assert.match(text, /^# Mine\n\n## Macro\n\nmy line\n<!-- inference-bench:begin id=macro/);
    assert.deepEqual(readdirSync(dir), ['doc.md']);
  });

  it('takes over the lock a run that died left behind', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ib-findings-'));
    writeFileSync(join(dir, 'doc.md'), '# Mine\n\n## Macro\n\n');
    const gone = spawnSync(process.execPath, ['-e', '']).pid!;
    writeFileSync(join(dir, '.doc.md.inference-bench.lock'), `${gone} ${hostname()} k3x9ab\n`);
    const log = recordingLog();
    new FindingsFile(join(dir, 'doc.md'), log, { workspace: dir }).findings(macroUpdate(1));
    assert.deepEqual(log.lines, []);
    assert.match(readFileSync(join(dir, 'doc.md'), 'utf8'), /inference-bench:begin id=macro/);
    assert.deepEqual(readdirSync(dir), ['doc.md'], 'the lock is gone with the write');
  });

  it('logs what to do instead of throwing when the document cannot be written', () => {
    const log = recordingLog();
    new FindingsFile(join(tmpdir(), 'no-such-dir-ib', 'x', 'f.md'), log).findings(macroUpdate(1));
    assert.equal(log.lines.length, 1);
    assert.match(log.lines[0], /^error: Could not update the findings document .*f\.md: .*Check that its folder exists/);
  });

  it('says the results are in the run folder only where there are results: not when the document cannot be created before the run', () => {
    const doc = new FindingsFile(join(tmpdir(), 'no-such-dir-ib', 'x', 'f.md'), recordingLog());
    assert.throws(
      () => doc.ensure(),
      (err: Error) => /^Could not create the findings document .*f\.md: .*Nothing was measured yet\.$/.test(err.message) && !/run folder/.test(err.message),
    );
  });
});

// Nothing outside the workspace, and nothing but a regular file, is ever written, whatever a link says.
describe('where the findings document on disk may be written', () => {
  const USER = '# Mine\n\n## Macro\n\nmy line\n';

  function workspaceAndOutside(): { ws: string; outside: string } {
    const top = mkdtempSync(join(tmpdir(), 'ib-findings-place-'));
    mkdirSync(join(top, 'ws'));
    mkdirSync(join(top, 'outside'));
    return { ws: join(top, 'ws'), outside: join(top, 'outside') };
  }

  it('refuses a document that is a symlink to a file outside the workspace, and leaves that file alone', () => {
    const { ws, outside } = workspaceAndOutside();
    writeFileSync(join(outside, 'other.md'), USER);
    symlinkSync(join(outside, 'other.md'), join(ws, 'doc.md'));
    const log = recordingLog();
    const doc = new FindingsFile(join(ws, 'doc.md'), log, { workspace: ws });
    doc.ensure({ target: 'local' });
    doc.findings(macroUpdate(1));
    assert.equal(readFileSync(join(outside, 'other.md'), 'utf8'), USER);
    assert.ok(lstatSync(join(ws, 'doc.md')).isSymbolicLink());
    assert.match(log.lines.at(-1) ?? '', /^error: The findings document .*doc\.md is not written: its real path .*other\.md .* is outside the workspace/);
    assert.deepEqual(readdirSync(outside), ['other.md']);
    // The CLI says so before it connects anywhere.
    assert.throws(
      () => findingsFlagPath(ws, 'doc.md'),
      /--findings doc\.md is refused: its real path .*other\.md .*outside the workspace.*nothing was written there/,
    );
  });

  it('refuses a document in a symlinked folder that leads outside the workspace, and creates nothing there', () => {
    const { ws, outside } = workspaceAndOutside();
    symlinkSync(outside, join(ws, 'notes'));
    const log = recordingLog();
    const doc = new FindingsFile(join(ws, 'notes', 'doc.md'), log, { workspace: ws });
    assert.throws(() => doc.ensure(), /is outside the workspace/);
    doc.findings(macroUpdate(1));
    assert.deepEqual(readdirSync(outside), []);
    assert.match(log.lines.at(-1) ?? '', /^error: .*is outside the workspace/);
  });

  it('never replaces a device node with a regular file, inside the workspace or through a link', function () {
    const { ws, outside } = workspaceAndOutside();
    // A private null device rather than /dev/null itself: the old code replaced whatever it was given.
    const device = join(ws, 'null');
    try {
      execFileSync('mknod', [device, 'c', '1', '3'], { stdio: 'ignore' });
    } catch {
      this.skip(); // creating a device node needs root
    }
    execFileSync('mknod', [join(outside, 'null'), 'c', '1', '3']);
    symlinkSync(device, join(ws, 'doc.md'));
    symlinkSync(join(outside, 'null'), join(ws, 'out.md'));
    const log = recordingLog();
    // Without a workspace as well: the extension's own check has put the path inside it already.
    new FindingsFile(join(ws, 'doc.md'), log).findings(macroUpdate(1));
    new FindingsFile(join(ws, 'doc.md'), log, { workspace: ws }).findings(macroUpdate(1));
    new FindingsFile(join(ws, 'out.md'), log, { workspace: ws }).findings(macroUpdate(1));
    assert.ok(lstatSync(device).isCharacterDevice(), 'the device is still a device');
    assert.ok(lstatSync(join(outside, 'null')).isCharacterDevice(), 'the device outside is still a device');
    assert.equal(log.lines.length, 3);
    assert.match(log.lines[0], /^error: .*null is a device, not a regular file/);
    assert.match(log.lines[1], /^error: .*null is a device, not a regular file/);
    assert.match(log.lines[2], /^error: .*is outside the workspace/);
    assert.deepEqual(readdirSync(ws).sort(), ['doc.md', 'null', 'out.md']);
  });

  it('refuses a FIFO as the document at once instead of waiting for a writer', () => {
    const { ws } = workspaceAndOutside();
    execFileSync('mkfifo', [join(ws, 'doc.md')]);
    // In a child process: a blocking open of a FIFO never returns, and would stop this test run with it.
    const script = `
      const { FindingsFile } = require(${JSON.stringify(join(__dirname, '../../../src/cli/findingsFile'))});
      const { macroUpdate } = require(${JSON.stringify(join(__dirname, 'fixtures'))});
      const lines = [];
      const log = { trace() {}, debug() {}, info() {}, warn: (m) => lines.push('warn: ' + m), error: (m) => lines.push('error: ' + m) };
      new FindingsFile(process.argv[1], log).findings(macroUpdate(1));
      new FindingsFile(process.argv[1], log, { workspace: process.argv[2] }).findings(macroUpdate(1));
      process.stdout.write(JSON.stringify(lines));`;
    const child = spawnSync(process.execPath, ['--require', 'tsx/cjs', '-e', script, join(ws, 'doc.md'), ws], { encoding: 'utf8', timeout: 60_000 });
    assert.equal(child.signal, null, 'the update blocked on the FIFO until it was killed');
    const lines = JSON.parse(child.stdout) as string[];
    assert.equal(lines.length, 2, child.stderr);
    for (const line of lines) assert.match(line, /^error: .*doc\.md is a FIFO \(named pipe\), not a regular file/);
    assert.ok(lstatSync(join(ws, 'doc.md')).isFIFO());
  });
});
