import * as assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { reportCommand } from '../../../src/cli/commands/report';
import { campaignReportHtml } from '../../../src/core/findings/report';
import { beginMarker, endMarker } from '../../../src/core/findings/markers';

const RUN = '2026-11-30_14-02-11-482-macro';
const section = '| Load | TPOT p50 ms |\n| --- | ---: |\n| c=1 | 21.70 |';
const FINDINGS = [
  '# k25b6000bench1',
  '',
  'My note: <script>alert(1)</script> and <img src=x onerror=alert(2)>.',
  '',
  beginMarker('macro-a', section),
  section,
  endMarker('macro-a'),
  '',
  `Run \`${RUN}\`.`,
  '',
].join('\n');

describe('campaign report', () => {
  it("renders the document's tables and the user's words, escapes their HTML, and loads nothing", () => {
    const html = campaignReportHtml(FINDINGS, [], { title: 'k25b6000bench1.md', madeAt: new Date('2026-12-02T00:00:00Z') });
    assert.match(html, /<table>[\s\S]*<th>Load<\/th>[\s\S]*<td style="text-align:right">21.70<\/td>/);
    assert.ok(html.includes('&lt;script&gt;alert(1)&lt;/script&gt;'), 'the user’s HTML is shown as text');
    assert.ok(!/<script|<img|onerror=alert/.test(html.replace(/&lt;[^&]*&gt;/g, '')), 'nothing runs');
    assert.ok(!html.includes('inference-bench:begin') && !html.includes('inference-bench:end'), 'the region markers are gone');
    assert.match(html, /Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:"/);
    assert.ok(!/(src|href)="https?:/.test(html), 'no outside resource');
  });

  it('infbench report writes the HTML beside the document with the runs it quotes', async () => {
    const workspace = mkdtempSync(join(tmpdir(), 'ib-report-'));
    cpSync(join(__dirname, '..', '..', 'fixtures', 'runs', 'workspace'), workspace, { recursive: true });
    writeFileSync(join(workspace, 'k25b6000bench1.md'), FINDINGS);
    const out = process.stdout.write;
    let printed = '';
    process.stdout.write = ((chunk: string) => ((printed += chunk), true)) as typeof process.stdout.write;
    try {
      assert.equal(await reportCommand.run(['--workspace', workspace, '--findings', 'k25b6000bench1.md']), 0);
    } finally {
      process.stdout.write = out;
    }
    assert.match(printed, /Report: .*k25b6000bench1\.html \(1 run\)/);
    const html = readFileSync(join(workspace, 'k25b6000bench1.html'), 'utf8');
    assert.match(html, new RegExp(`<td><code>${RUN}</code></td><td>macro</td>`));
  });

  it('refuses a document outside the workspace, and says what to give', async () => {
    const workspace = mkdtempSync(join(tmpdir(), 'ib-report-'));
    await assert.rejects(reportCommand.run(['--workspace', workspace, '--findings', '../elsewhere.md']), /outside the workspace/);
    await assert.rejects(reportCommand.run(['--workspace', workspace]), /--findings FILE is needed/);
  });
});
