import * as assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { reportCommand } from '../../../src/cli/commands/report';
import { campaignReportHtml, reportPreviewHtml, reportRuns } from '../../../src/core/findings/report';
import { RunSummary } from '../../../src/shared/results';
import { beginMarker, endMarker } from '../../../src/core/findings/markers';

const RUN = '2026-11-30_14-02-11-482-macro';
const section = '| Load | TPOT p50 ms |\n| --- | ---: |\n| c=1 | 21.70 |';
const FINDINGS = [
  '# k25b6000bench1',
  '',
  'My note: <script>alert(1)</script> and <img src=x onerror=alert(2)> <style>body{}</style>.',
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

  it("shows the tool's note under each section as small text, not as a literal <sub> tag, and keeps any HTML inside escaped", () => {
    const findings = [
      '# k25b6000bench1',
      '',
      section,
      '',
      '<sub>Written by Inference Bench at 2026-12-02 10:00:00 UTC · section `macro-a`</sub>',
      '',
      '<sub><img src=x onerror=alert(3)></sub>',
      '',
      '    <sub>in a code block</sub>',
      '',
    ].join('\n');
    const html = campaignReportHtml(findings, [], { title: 't.md', madeAt: new Date('2026-12-02T00:00:00Z') });
    assert.ok(
      html.includes('<p class="tool-note"><small>Written by Inference Bench at 2026-12-02 10:00:00 UTC · section <code>macro-a</code></small></p>'),
      html,
    );
    assert.ok(html.includes('<p class="tool-note"><small>&lt;img src=x onerror=alert(3)&gt;</small></p>'), 'HTML inside a note stays text');
    assert.ok(html.includes('<pre><code>&lt;sub&gt;in a code block&lt;/sub&gt;'), 'a code block is shown as written');
    assert.equal((html.match(/&lt;sub&gt;/g) ?? []).length, 1, 'no literal <sub> outside the code block');
  });

  it('draws each macro run quoted as throughput and median TPOT against load, in inline SVG with its text escaped', () => {
    const run: RunSummary = {
      id: RUN,
      phase: 'macro',
      target: 'h200 <b>&',
      startedAt: '2026-11-30T14:02:11Z',
      status: 'completed',
      macro: {
        levels: [1, 4, 16].map((c, i) => ({
          max_concurrency: c,
          request_rate: null,
          completed: 16,
          failed: 0,
          duration: 10,
          total_input_tokens: 1,
          total_output_tokens: 1,
          request_throughput: 1,
          output_throughput: [45.4, 169.7, 536.3][i],
          total_token_throughput: 1,
          median_tpot_ms: [21.7, 22.3, 24.7][i],
        })),
      },
    };
    const html = campaignReportHtml(FINDINGS, reportRuns([run], FINDINGS), { title: 't.md', madeAt: new Date('2026-12-02T00:00:00Z') });
    const all = html.match(/<svg[\s\S]*?<\/svg>/g) ?? [];
    // Beside the two panels, the run's levels as a Pareto front (drawn and tested on its own).
    const svgs = all.filter((svg) => !svg.includes('Pareto front'));
    assert.equal(svgs.length, 2, 'a throughput panel and a TPOT panel');
    assert.equal(all.length, 3, 'and the Pareto front of its levels');
    assert.match(svgs[0], /<title>Output throughput \(tok\/s\) against load<\/title>/);
    assert.match(svgs[1], /<title>Median TPOT \(ms\) against load<\/title>/);
    for (const [svg, values] of [
      [svgs[0], ['c=1: 45.4 tok/s', 'c=4: 170 tok/s', 'c=16: 536 tok/s']],
      [svgs[1], ['c=1: 21.7 ms', 'c=4: 22.3 ms', 'c=16: 24.7 ms']],
    ] as const) {
      assert.equal((svg.match(/<circle /g) ?? []).length, 3);
      for (const v of values) assert.ok(svg.includes(`<title>${v}</title>`), `${v} in ${svg}`);
      assert.match(svg, /<polyline points="[\d., ]+"/);
    }
    // Throughput grows with load: its points climb (SVG y falls) left to right.
    const ys = [...svgs[0].matchAll(/<circle cx="[\d.]+" cy="([\d.]+)"/g)].map((m) => Number(m[1]));
    assert.ok(ys[0] > ys[1] && ys[1] > ys[2], `${ys}`);
    assert.ok(html.includes('on h200 &lt;b&gt;&amp;</h3>'), 'the target is escaped');
    assert.ok(!/<script/.test(html), 'no script');
  });

  it('previews in the editor under a nonce policy: no inline style or script applies, its one style block does', () => {
    const html = campaignReportHtml(FINDINGS, [], { title: 't.md', madeAt: new Date('2026-12-02T00:00:00Z') });
    const preview = reportPreviewHtml(html, 'bm9uY2U=');
    assert.match(preview, /Content-Security-Policy" content="default-src 'none'; style-src 'nonce-bm9uY2U='; img-src data:"/);
    assert.ok(!preview.includes('unsafe-inline'));
    assert.equal((preview.match(/<style nonce="bm9uY2U=">/g) ?? []).length, 1);
    assert.equal((preview.match(/<style/g) ?? []).length, 1, 'the user’s <style> stays text');
    assert.throws(() => reportPreviewHtml(html, '"><script>'), /base64/);
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
    assert.match(html, /<h2>Charts<\/h2>[\s\S]*<svg[\s\S]*Output throughput/, 'the stored run is charted');
  });

  it('refuses a document outside the workspace, and says what to give', async () => {
    const workspace = mkdtempSync(join(tmpdir(), 'ib-report-'));
    await assert.rejects(reportCommand.run(['--workspace', workspace, '--findings', '../elsewhere.md']), /outside the workspace/);
    await assert.rejects(reportCommand.run(['--workspace', workspace]), /--findings FILE is needed/);
  });
});
