// The extension as a user meets it: the VSIX installed into code-server, driven in headless Chromium.
import * as assert from 'node:assert/strict';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Frame } from 'playwright-core';
import { CodeServer, CodeServerDirs, installExtension, launchChromium, makeCodeServerDirs, removeDirs, repoRoot, startCodeServer } from '../support/codeServer';
import { packageVsix, zipEntries } from '../support/vsix';
import { importVllmBench } from '../../src/core/compare/vllmBench';
import { poll, recordCspViolations, Workbench } from './workbench';

const outDir = join(repoRoot, 'test-output', 'ui');
const fixtureRuns = join(repoRoot, 'test', 'fixtures', 'runs', 'workspace', '.inference-bench');
const FIXTURE_TARGET = 'b6000-sim';
const DETAILED_VLLM = join(repoRoot, 'test', 'fixtures', 'vllm-bench', 'kimi-sim-c2-detailed.json');

/** Files the VSIX may hold (.vscodeignore is an allow-list); anything else is a packaging leak. */
const ALLOWED = [
  /^extension\.vsixmanifest$/,
  /^\[Content_Types\]\.xml$/,
  /^extension\/package\.json$/,
  /^extension\/readme\.md$/i,
  /^extension\/license(\.txt|\.md)?$/i,
  /^extension\/dist\/(extension|webview|traceWorker)\.js$/,
  /^extension\/dist\/agent\.pyz$/,
  /^extension\/media\//,
  /^extension\/docs\/images\/[\w-]+\.png$/,
];
const REQUIRED = [
  'extension/package.json',
  'extension/dist/extension.js',
  'extension/dist/webview.js',
  'extension/dist/traceWorker.js',
  'extension/dist/agent.pyz',
  'extension/media/icon.svg',
  'extension/media/codicons/codicon.css',
];

// Functions passed to evaluate() run in the webview; the repository's tsconfig has no DOM library,
// so the few browser names they use are declared here, for this file only.
interface PageCanvas {
  width: number;
  height: number;
  getContext(kind: '2d'): { getImageData(x: number, y: number, w: number, h: number): { data: Uint8ClampedArray } } | null;
}
declare const window: { __infbenchCspViolations?: string[]; __infbenchInlineRan?: boolean };
declare const document: { createElement(tag: 'script'): { textContent: string | null }; body: { append(node: unknown): void } };

interface CanvasInk {
  width: number;
  height: number;
  painted: number;
  colors: number;
}

describe('the extension in code-server (UI)', function () {
  this.timeout(120_000);
  let dirs: CodeServerDirs;
  let workspace: string;
  let vsix: { path: string; bytes: number };
  let server: CodeServer | undefined;
  let browser: Awaited<ReturnType<typeof launchChromium>> | undefined;
  let wb: Workbench;

  before(async () => {
    mkdirSync(outDir, { recursive: true });
    dirs = makeCodeServerDirs('infbench-ui-');
    workspace = join(dirs.root, 'workspace');
    mkdirSync(workspace);
    // Packed into the scratch folder: others may run these tests from the same working tree.
    vsix = await packageVsix(join(dirs.root, 'inference-bench.vsix'));
    await installExtension(vsix.path, dirs);
    // A dark theme, as most of the extension's users run it (and as the README's screenshot shows).
    server = await startCodeServer({
      folder: workspace,
      dirs,
      logFile: join(outDir, 'code-server.log'),
      settings: { 'workbench.colorTheme': 'Default Dark Modern' },
    });
    browser = await launchChromium();
    await browser.context.addInitScript(recordCspViolations);
    wb = new Workbench(await browser.context.newPage());
    await wb.open(server.folderUrl(workspace));
  });

  afterEach(async function () {
    if (this.currentTest?.state === 'failed' && wb)
      await wb.screenshot(`failed-${this.currentTest.title.replace(/[^\w]+/g, '-').slice(0, 60)}`).catch(() => undefined);
  });

  after(async () => {
    if (wb) writeFileSync(join(outDir, 'workbench-console.log'), wb.console.map((m) => `[${m.type()}] ${m.text()}`).join('\n'));
    await browser?.close();
    await server?.stop();
    if (dirs) removeDirs(dirs);
  });

  it('packs a VSIX that holds only what the extension needs, and code-server installs it', () => {
    const entries = zipEntries(vsix.path);
    assert.deepEqual(
      entries.filter((e) => !ALLOWED.some((re) => re.test(e))),
      [],
      'files in the VSIX that .vscodeignore should leave out',
    );
    assert.deepEqual(
      REQUIRED.filter((r) => !entries.includes(r)),
      [],
      'files the extension needs at run time, missing from the VSIX',
    );
    // The extension's page renders the packaged README, whose screenshots are relative links.
    const readmeImages = [...readFileSync(join(repoRoot, 'README.md'), 'utf8').matchAll(/!\[[^\]]*\]\(([^)\s]+)\)/g)].map((m) => m[1]);
    assert.ok(readmeImages.length >= 2, `README images found: ${readmeImages.join(', ')}`);
    assert.deepEqual(
      readmeImages.filter((img) => !entries.includes(`extension/${img}`)),
      [],
      'README images missing from the VSIX (the extension page would show broken images)',
    );
    // About 1 MB of code and 0.3 MB of the README's screenshots (the Nsight Systems layers view among them).
    assert.ok(vsix.bytes < 1.5 * 1024 * 1024, `the VSIX is ${vsix.bytes} bytes`);
    const installed = readdirSync(dirs.extensionsDir).filter((d) => d.startsWith('inference-bench.inference-bench-'));
    assert.equal(installed.length, 1, `installed extensions: ${readdirSync(dirs.extensionsDir).join(', ')}`);
  });

  it('shows the Inference Bench sidebar with its welcome view while nothing is configured', async () => {
    await wb.activityBarItem('Inference Bench').click();
    await wb.page.mouse.move(720, 600); // away from the activity bar, so its hover doesn't cover the screenshots
    await wb.page.getByText('No inference server configured yet.').waitFor();
    await wb.page.getByRole('button', { name: 'Add Target' }).first().waitFor();
    await wb.screenshot('sidebar-welcome');
    // Nothing else has run yet: showing its view is what activated the extension.
    await poll('the extension to log its activation', () => activationLog(dirs));
  });

  it('adds an SSH target from the command palette and lists it beside the stored runs', async () => {
    cpSync(fixtureRuns, join(workspace, '.inference-bench'), { recursive: true });
    await wb.runCommand('Inference Bench: Add Target');
    // No ~/.ssh/config here (HOME is a scratch folder): the host is typed in, as for a machine not in the config.
    await wb.quickInput.getByRole('option', { name: /Open SSH Config File/ }).waitFor();
    await wb.answer(/^Add Target \(1\/4\)$/, 'Enter user@host');
    await wb.answer(/user@host\[:port\]/, 'gpu-box');
    await wb.answer(/server URL/i);
    await wb.answer(/Python/);
    // Named after the stored run's target, so that the sidebar files the run under it.
    await wb.answer(/name/i, FIXTURE_TARGET);
    const settingsFile = join(workspace, '.vscode', 'settings.json');
    const targets = await poll('the target in .vscode/settings.json', () => {
      if (!existsSync(settingsFile)) return undefined;
      let parsed: Record<string, unknown>;
      try {
        parsed = JSON.parse(readFileSync(settingsFile, 'utf8')) as Record<string, unknown>;
      } catch {
        // VS Code writes settings.json in place: a read can land between its truncate and its write.
        return undefined;
      }
      const saved = parsed['inferenceBench.targets'];
      return Array.isArray(saved) && saved.length ? (saved as Record<string, unknown>[]) : undefined;
    });
    assert.deepEqual(targets, [{ name: FIXTURE_TARGET, kind: 'ssh', host: 'gpu-box', serverUrl: 'http://127.0.0.1:8000', python: 'python3' }]);
    // By its text: a tree item's accessible name is its tooltip when it has one.
    await wb.page.getByRole('treeitem').filter({ hasText: FIXTURE_TARGET }).first().waitFor();
    // With a target configured, the tree replaces the welcome view.
    await wb.page.getByText('No inference server configured yet.').waitFor({ state: 'hidden' });
    await wb.screenshot('sidebar-targets-and-runs');
  });

  it('opens the findings document from the command palette (findings.md before any probe names the campaign)', async () => {
    await wb.runCommand('Inference Bench: Open Findings Document');
    await wb.page
      .getByRole('tab', { name: /^findings\.md/ })
      .first()
      .waitFor();
    assert.ok(existsSync(join(workspace, 'findings.md')));
    // Its tables wrap in a text column: a rendered preview opens beside it, and the text keeps the focus.
    const groups = wb.page.locator('.editor-group-container');
    await groups
      .nth(0)
      .getByRole('tab', { name: /^findings\.md/ })
      .waitFor();
    await groups
      .nth(1)
      .getByRole('tab', { name: /^findings\.md/ })
      .waitFor();
    await poll('the rendered heading in the preview beside the text', () => renderedFrame(wb, 'h1', 'Findings: findings'));
    await wb.page.locator('.monaco-editor.focused').waitFor();
    await wb.screenshot('findings-with-preview');
  });

  it("draws the stored macro run's chart in the results view with no Content-Security-Policy violation", async () => {
    await wb.runCommand('Inference Bench: Show Results');
    const view = wb.webview();
    const canvas = view.locator('canvas').first();
    await canvas.waitFor({ timeout: 30_000 });
    assert.match((await view.locator('body').textContent()) ?? '', new RegExp(FIXTURE_TARGET), "the results view does not name the stored run's target");
    // chart.js draws on a canvas: count the pixels it painted and how many colours it used.
    const ink = await poll('the chart to draw', async () => {
      const seen = await canvas.evaluate((c): CanvasInk => {
        const data = (c as unknown as PageCanvas).getContext('2d')!.getImageData(0, 0, c.width, c.height).data;
        const colors = new Set<number>();
        let painted = 0;
        for (let i = 0; i < data.length; i += 4) {
          if (data[i + 3] === 0) continue;
          painted++;
          colors.add(((data[i] >> 4) << 8) | ((data[i + 1] >> 4) << 4) | (data[i + 2] >> 4));
        }
        return { width: c.width, height: c.height, painted, colors: colors.size };
      });
      return seen.painted > 0 ? seen : undefined;
    });
    assert.ok(ink.painted > ink.width * ink.height * 0.005, `the chart painted only ${ink.painted} of ${ink.width * ink.height} pixels`);
    assert.ok(ink.colors >= 3, `the chart used ${ink.colors} colours: axes, labels and a data line need more`);
    await wb.page.waitForTimeout(500); // let late resource loads report any refusal
    const violations = await view.locator('body').evaluate(() => window.__infbenchCspViolations ?? []);
    assert.deepEqual(violations, [], 'securitypolicyviolation events in the results view');
    assert.deepEqual(wb.cspConsoleErrors(), [], 'Content-Security-Policy errors in the console');
    await wb.screenshot('results-webview');
  });

  it('fits the serving table beside the findings document in a 1600 px window, every column one click away', async () => {
    await wb.page.setViewportSize({ width: 1600, height: 900 });
    try {
      const view = wb.webview();
      const table = view.locator('#serving-table table');
      await table.waitFor({ timeout: 30_000 });
      // Measured after the view has laid out at the new width.
      const overflow = () => view.locator('#serving-table .table-scroll').evaluate((e) => ({ scroll: e.scrollWidth, client: e.clientWidth }));
      const fewer = await poll('the serving table laid out without sideways scrolling', async () => {
        const o = await overflow();
        return o.scroll <= o.client ? o : undefined;
      }).catch(async () => assert.fail(`the serving table scrolls sideways: ${JSON.stringify(await overflow())}`));
      assert.ok(fewer.client > 0);
      const narrow = await table.locator('th').count();
      await wb.screenshot('results-serving-table-1600');
      await view.locator('#serving-columns').click();
      await poll('every column shown', async () => ((await table.locator('th').count()) > narrow ? true : undefined));
      assert.ok((await view.locator('#serving-table th').count()) >= 19);
      assert.equal(await view.locator('#serving-columns').getAttribute('aria-pressed'), 'true');
      await view.locator('#serving-columns').click();
    } finally {
      await wb.page.setViewportSize({ width: 1440, height: 900 });
    }
  });

  it('refuses an inline script in the results view (no unsafe-inline), and the violation check sees it', async () => {
    const view = wb.webview();
    const ran = await view.locator('body').evaluate(() => {
      const s = document.createElement('script');
      s.textContent = 'window.__infbenchInlineRan = true';
      document.body.append(s);
      return window.__infbenchInlineRan ?? false;
    });
    assert.equal(ran, false, 'an inline script without the nonce ran');
    const violations = await poll('the securitypolicyviolation event', () =>
      view.locator('body').evaluate(() => {
        const v = window.__infbenchCspViolations ?? [];
        return v.length ? v : undefined;
      }),
    );
    assert.match(violations.join('\n'), /script-src/);
  });

  it('logs its activation time to its output channel', () => {
    const ms = activationLog(dirs);
    assert.ok(ms !== undefined, `no "activated in N ms" line in an "Inference Bench.log" under ${join(dirs.userDataDir, 'logs')}`);
    writeFileSync(join(outDir, 'figures.json'), JSON.stringify({ activationMs: ms, vsixBytes: vsix.bytes }, null, 2));
    assert.ok(ms < 2000, `activation took ${ms} ms`);
  });

  it("draws an imported vllm bench serve run's requests, clears the hover readout on a run switch, and saves them as a Chrome trace", async () => {
    const a = importVllmBench(workspace, DETAILED_VLLM);
    const b = importVllmBench(workspace, DETAILED_VLLM);
    // A results view reads the stored runs when it opens: close it and open it again to see the two imported.
    await wb.runCommand('View: Close All Editors');
    await wb.runCommand('Inference Bench: Show Results');
    const view = wb.webview();
    const runSelect = view.locator('#run-select');
    await runSelect.waitFor({ timeout: 30_000 });
    await runSelect.selectOption(a.info.id);
    const canvas = view.locator('#run-timeline canvas');
    await canvas.waitFor({ timeout: 30_000 });
    assert.match((await canvas.getAttribute('aria-label')) ?? '', /^8 requests on 2 lanes/);
    const readout = view.locator('#run-timeline .timeline-readout');
    const hint = ((await readout.textContent()) ?? '').trim();
    assert.match(hint, /mouse wheel/);
    const box = (await canvas.boundingBox())!;
    // Over the first lane (the bars start 20 px down), a third of the way along the run.
    await canvas.hover({ position: { x: box.width * 0.35, y: 30 } });
    await poll('the readout to describe the request under the pointer', async () =>
      /request on lane 1: .*first token after \d+ ms/.test((await readout.textContent()) ?? '') ? true : undefined,
    );
    await runSelect.selectOption(b.info.id);
    await poll("the readout to drop the other run's request", async () => (((await readout.textContent()) ?? '').trim() === hint ? true : undefined));
    assert.match(
      (await view.locator('#run-timeline .timeline-server-note').textContent()) ?? '',
      /No server series \(running, waiting, KV cache\): the run kept no reading of the server's \/metrics/,
    );
    await wb.screenshot('results-imported-timeline');
    await view.locator('#run-timeline').getByRole('button', { name: 'Chrome Trace' }).click();
    // code-server's save dialog is a quick input holding the proposed path: accept it.
    await wb.quickInput.waitFor({ timeout: 15_000 });
    await wb.inputBox.press('Enter');
    const file = join(workspace, `${b.info.id}.trace.json`);
    await poll(`${file} to be written`, () => (existsSync(file) ? true : undefined), 15_000);
    const trace = JSON.parse(readFileSync(file, 'utf8')) as { traceEvents: { name: string; ph: string }[] };
    assert.equal(trace.traceEvents.filter((e) => e.ph === 'X' && e.name.startsWith('request')).length, 8);
  });
});

/** The frame (a webview's document) holding an element `selector` with this text; the Markdown preview is one. */
async function renderedFrame(wb: Workbench, selector: string, text: string): Promise<Frame | undefined> {
  for (const f of wb.page.frames()) {
    try {
      if (await f.locator(selector).filter({ hasText: text }).count()) return f;
    } catch {
      // a frame that went away while we looked
    }
  }
  return undefined;
}

/** The N of the extension's "activated in N ms" log line, once it is there. */
function activationLog(dirs: CodeServerDirs): number | undefined {
  const log = findFile(join(dirs.userDataDir, 'logs'), 'Inference Bench.log');
  const m = log && /activated in (\d+) ms/.exec(readFileSync(log, 'utf8'));
  return m ? Number(m[1]) : undefined;
}

function findFile(dir: string, name: string): string | undefined {
  if (!existsSync(dir)) return undefined;
  const hit = (readdirSync(dir, { recursive: true }) as string[]).find((f) => f.endsWith(name));
  return hit ? join(dir, hit) : undefined;
}
