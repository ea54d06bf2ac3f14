import * as assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FindingsFile } from '../../../src/cli/findingsFile';
import { Logger } from '../../../src/core/log';
import { macroUpdate } from './fixtures';

function recordingLog(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const push = (level: string) => (m: string) => lines.push(`${level}: ${m}`);
  return { lines, trace: push('trace'), debug: push('debug'), info: push('info'), warn: push('warn'), error: push('error') };
}

const USER_DOC = [
  '# Findings: race',
  '',
  'My own introduction, which must survive.',
  '',
  '## 2. Macro results',
  '',
  'Hand-written note about the sweep.',
  '',
  '## Notes',
  '',
  ...Array.from({ length: 200 }, (_, i) => `- observation ${i}: the user's own line`),
  '',
].join('\n');

// An editor that saves its buffer in place, the way many do: truncate, a moment later write.
// Before each save it checks the file as the tool left it: every line of the user's must be there
// (between its own saves only the tool writes, and the tool renames whole files, so the check never
// sees half of anything). It prints how many times the user's text was found missing.
const EDITOR = `
const fs = require('node:fs');
const [file, doc] = process.argv.slice(1);
const mine = fs.readFileSync(doc, 'utf8');
const wanted = mine.split('\\n').filter((l) => l.trim());
const pause = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
let saves = 0, lost = 0, stop = false;
process.on('SIGTERM', () => (stop = true));
const cycle = () => {
  if (stop) { process.stdout.write(JSON.stringify({ saves, lost })); process.exit(0); }
  const seen = fs.readFileSync(file, 'utf8');
  if (wanted.some((l) => !seen.includes(l))) lost++;
  const fd = fs.openSync(file, 'w');
  pause(4);
  fs.writeSync(fd, mine.slice(0, mine.length >> 1));
  pause(1);
  fs.writeSync(fd, mine.slice(mine.length >> 1));
  fs.closeSync(fd);
  saves++;
  setTimeout(cycle, 40);
};
cycle();
`;

describe('findings document on disk while another program saves it', function () {
  this.timeout(60_000);

  it("never replaces the user's document with a read that caught an editor mid-save", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ib-findings-race-'));
    const path = join(dir, 'doc.md');
    writeFileSync(path, USER_DOC);
    writeFileSync(join(dir, 'editor-buffer.txt'), USER_DOC);
    const editor = spawn(process.execPath, ['-e', EDITOR, path, join(dir, 'editor-buffer.txt')], { stdio: ['ignore', 'pipe', 'inherit'] });
    let report = '';
    editor.stdout.on('data', (b: Buffer) => (report += b.toString()));
    const exited = new Promise<void>((r) => editor.on('exit', () => r()));
    const log = recordingLog();
    const doc = new FindingsFile(path, log);
    try {
      await new Promise((r) => setTimeout(r, 100));
      // For a fixed time rather than a count: the old code's updates are quicker than the fixed one's.
      for (let i = 0, started = Date.now(); Date.now() - started < 2500; i++) {
        doc.findings(macroUpdate(1 + (i % 8)));
        await new Promise((r) => setTimeout(r, 7));
      }
    } finally {
      editor.kill('SIGTERM');
      await exited;
    }
    const { saves, lost } = JSON.parse(report) as { saves: number; lost: number };
    assert.ok(saves > 20, `the editor saved only ${saves} times: the test did not race`);
    assert.equal(lost, 0, `the editor found its user's text missing ${lost} times in ${saves} saves`);
    // With the editor gone, the next update lands and keeps every line of the user's.
    doc.findings(macroUpdate(8));
    const final = readFileSync(path, 'utf8');
    for (const line of USER_DOC.split('\n').filter((l) => l.trim())) assert.ok(final.includes(line), `lost: ${line}`);
    assert.match(final, /inference-bench:begin id=macro/);
    assert.deepEqual(readdirSync(dir).sort(), ['doc.md', 'editor-buffer.txt'], 'no temp file is left behind');
  });

  it('leaves a read-only document unwritten and says so', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ib-findings-ro-'));
    const path = join(dir, 'doc.md');
    writeFileSync(path, USER_DOC);
    chmodSync(path, 0o444);
    const log = recordingLog();
    new FindingsFile(path, log).findings(macroUpdate(1));
    assert.equal(readFileSync(path, 'utf8'), USER_DOC);
    assert.equal(log.lines.length, 1);
    assert.match(log.lines[0], /^error: .*doc\.md is read-only.*chmod u\+w/);
    assert.deepEqual(readdirSync(dir), ['doc.md']);
  });

  it("does not take a document emptied a moment ago as the user's intent", () => {
    const dir = mkdtempSync(join(tmpdir(), 'ib-findings-empty-'));
    const path = join(dir, 'doc.md');
    writeFileSync(path, USER_DOC);
    const log = recordingLog();
    const doc = new FindingsFile(path, log);
    doc.findings(macroUpdate(1));
    // Truncated, as by a save that has not written yet (or a crashed one): the tool writes nothing.
    writeFileSync(path, '');
    doc.findings(macroUpdate(2));
    assert.equal(readFileSync(path, 'utf8'), '');
    assert.match(log.lines.at(-1) ?? '', /^warn: .*doc\.md is empty .*left as it is/);
  });
});
