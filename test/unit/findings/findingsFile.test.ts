import * as assert from 'node:assert/strict';
import { chmodSync, lstatSync, mkdtempSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FindingsFile } from '../../../src/cli/findingsFile';
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
    const doc = new FindingsFile(path, recordingLog(), () => new Date('2026-12-01T10:00:00Z'));
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

  it("writes through a symlink and keeps the file's permissions", () => {
    const dir = mkdtempSync(join(tmpdir(), 'ib-findings-'));
    const real = join(dir, 'real.md');
    writeFileSync(real, '# Mine\n\n## Macro\n\n');
    chmodSync(real, 0o640);
    symlinkSync(real, join(dir, 'link.md'));
    new FindingsFile(join(dir, 'link.md')).findings(macroUpdate(1));
    assert.match(readFileSync(real, 'utf8'), /inference-bench:begin id=macro/);
    assert.equal(statSync(real).mode & 0o777, 0o640);
    assert.ok(lstatSync(join(dir, 'link.md')).isSymbolicLink(), 'the link is still a link');
  });

  it('logs what to do instead of throwing when the document cannot be written', () => {
    const log = recordingLog();
    new FindingsFile(join(tmpdir(), 'no-such-dir-ib', 'x', 'f.md'), log).findings(macroUpdate(1));
    assert.equal(log.lines.length, 1);
    assert.match(log.lines[0], /^error: Could not update the findings document .*f\.md: .*Check that its folder exists/);
  });
});
