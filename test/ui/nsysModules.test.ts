// An Nsight Systems profile in the results view, as a user sees it: the VSIX installed into code-server,
// a profile run made with `infbench profile --profiler nsys` in the workspace, the layer chart drawn
// with the slow layer named, a click on a layer listing its kernels, and no Content-Security-Policy
// violation. The simulator (mimicking vLLM 0.16, layer 1 made slow in its report) stands for the
// server, and test/support/fake-nsys/nsys, a STAND-IN, for Nsight Systems (this machine has neither a
// GPU nor nsys): it runs the server as nsys does and has the simulator write the SQLite report.
import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CodeServer, CodeServerDirs, installExtension, launchChromium, makeCodeServerDirs, removeDirs, repoRoot, startCodeServer } from '../support/codeServer';
import { startUserServer, UserServer } from '../support/userServer';
import { packageVsix } from '../support/vsix';
import { poll, recordCspViolations, Workbench } from './workbench';

const outDir = join(repoRoot, 'test-output', 'ui');
const FAKE_NSYS = join(repoRoot, 'test', 'support', 'fake-nsys', 'nsys');
/** Where README.md's screenshot of the chart comes from; copied there when INFBENCH_UPDATE_SCREENSHOTS=1. */
const README_IMAGE = join(repoRoot, 'docs', 'images', 'nsys-layers.png');

declare const window: { __infbenchCspViolations?: string[] };

describe('an Nsight Systems profile in the results view (UI)', function () {
  this.timeout(180_000);
  let dirs: CodeServerDirs;
  let server: CodeServer | undefined;
  let browser: Awaited<ReturnType<typeof launchChromium>> | undefined;
  let user: UserServer | undefined;
  let wb: Workbench;

  before(async () => {
    mkdirSync(outDir, { recursive: true });
    dirs = makeCodeServerDirs('infbench-ui-nsys-');
    const workspace = join(dirs.root, 'workspace');
    mkdirSync(workspace);
    // Six layers, layer 3's kernels 1.5 times longer in the report.
    user = await startUserServer(['--mimic', 'vllm-0.16', '--layers', '6', '--slow-layer', '3:1.5', '--step-per-seq-ms', '0'], repoRoot);
    const cli = spawnSync(
      'node',
      [
        join(repoRoot, 'dist', 'cli.js'),
        'profile',
        '--url',
        user.url,
        '--profiler',
        'nsys',
        '--nsys',
        FAKE_NSYS,
        '--yes',
        '--concurrency',
        '4',
        '--output-len',
        '12',
        '--workspace',
        workspace,
      ],
      { encoding: 'utf8', cwd: repoRoot },
    );
    assert.equal(cli.status, 0, cli.stderr);
    const vsix = await packageVsix(join(dirs.root, 'inference-bench.vsix'));
    await installExtension(vsix.path, dirs);
    server = await startCodeServer({
      folder: workspace,
      dirs,
      logFile: join(outDir, 'code-server-nsys.log'),
      settings: { 'workbench.colorTheme': 'Default Dark Modern' },
    });
    browser = await launchChromium();
    await browser.context.addInitScript(recordCspViolations);
    wb = new Workbench(await browser.context.newPage());
    await wb.open(server.folderUrl(workspace));
  });

  afterEach(async function () {
    if (this.currentTest?.state === 'failed' && wb) await wb.screenshot('failed-nsys-modules').catch(() => undefined);
  });

  after(async () => {
    if (wb) writeFileSync(join(outDir, 'workbench-console-nsys.log'), wb.console.map((m) => `[${m.type()}] ${m.text()}`).join('\n'));
    await browser?.close();
    await server?.stop();
    user?.kill();
    if (dirs) removeDirs(dirs);
  });

  it('draws the step by layer and module, names the slow layer, and lists a layer’s kernels on a click', async () => {
    // The sidebar's view drawn: the extension's contributions (its commands among them) are registered.
    await wb.activityBarItem('Inference Bench').click();
    await wb.page
      .getByText(/Targets & Runs/i)
      .first()
      .waitFor({ timeout: 30_000 });
    await wb.runCommand('Inference Bench: Show Results');
    const view = wb.webview();
    const card = view.locator('#nsys-modules');
    await card.waitFor({ timeout: 30_000 });
    assert.match((await view.locator('#nsys-headline').textContent()) ?? '', /of a decode step .*layer 3's/);
    assert.match(
      (await view.locator('#nsys-slow-layer').textContent()) ?? '',
      /^Layer 3 is the slow one: its \S+ takes [\d.]+ ms per step, 38% over the mean of its 6 layers/,
    );
    // The table beside the bars: a row per layer and one for the modules outside them; the slow one says so.
    const rows = card.locator('table[data-table-id="nsys-layers"] tbody tr');
    assert.deepEqual(
      (await rows.locator('td:first-child').allTextContents()).map((t) => t.trim()),
      ['layer 0', 'layer 1', 'layer 2', 'layer 3', 'layer 4', 'layer 5', 'outside layers'],
    );
    assert.match((await rows.nth(3).locator('td').last().textContent()) ?? '', /slowest \S+, 38% over the mean/);
    // The bars: chart.js painted the canvas, its labels the layers.
    const painted = await poll('the layer chart to draw', async () => {
      const n = await card.locator('canvas').evaluate((c) => {
        const canvas = c as unknown as { width: number; height: number; getContext(k: '2d'): { getImageData(...a: number[]): { data: Uint8ClampedArray } } };
        const data = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
        let ink = 0;
        for (let i = 3; i < data.length; i += 4) if (data[i] !== 0) ink++;
        return ink;
      });
      return n > 0 ? n : undefined;
    });
    assert.ok(painted > 1000, `the chart painted ${painted} pixels`);
    // A click on layer 3's row lists its kernels.
    await rows.nth(3).click();
    const kernels = card.locator('#nsys-layer-kernels table[data-table-id="nsys-layer-kernels"]');
    await kernels.waitFor({ timeout: 10_000 });
    assert.match((await kernels.locator('caption').textContent()) ?? '', /^Layer 3: its kernels per decode step/);
    const paths = await kernels.locator('tbody tr td:last-child').allTextContents();
    assert.ok(paths.length >= 4 && paths.every((p) => p.startsWith('model.layers.3.')), paths.join(', '));
    const violations = await view.locator('body').evaluate(() => window.__infbenchCspViolations ?? []);
    assert.deepEqual(violations, [], 'securitypolicyviolation events in the results view');
    await card.scrollIntoViewIfNeeded();
    const shot = await wb.screenshot('results-nsys-layers');
    if (process.env.INFBENCH_UPDATE_SCREENSHOTS === '1') copyFileSync(shot, README_IMAGE);
  });
});
