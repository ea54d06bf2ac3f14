// The live flow as a user meets it in code-server: from the command palette, run the macro phase
// against the simulator behind an SSH target (a private sshd on loopback) and watch the chart gain points while the run goes; see
// the findings document fill in; break a real H200 trace down and inspect its kernels beside the
// editor; switch to a light theme and see the charts follow. Screenshots in dark and light go to
// test-output/screenshots/live-*.png.
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import type { Frame, Page } from 'playwright-core';
import { defaultFindingsDocument } from '../../src/core/findings/campaignName';
import { RunningSimulator, startSimulator } from '../../src/core/macro/simulator';
import { CodeServer, CodeServerDirs, installExtension, launchChromium, makeCodeServerDirs, removeDirs, repoRoot, startCodeServer } from '../support/codeServer';
import { makeKey, Sshd, startSshd, writeClientConfig } from '../support/sshd';
import { listening, startUserServer, UserServer } from '../support/userServer';
import { packageVsix } from '../support/vsix';
import { escapeRegExp, poll, recordCspViolations, Workbench } from './workbench';

// Functions passed to evaluate() run in the webview; the repository's tsconfig has no DOM library,
// so the few browser names they use are declared here, for this file only.
interface PageCanvas {
  getContext(kind: '2d'): { getImageData(x: number, y: number, w: number, h: number): { data: Uint8ClampedArray } } | null;
}
declare const window: { __infbenchCspViolations?: string[]; infbenchBench(n: number): Promise<{ ms: number; painted: number }> };

const outDir = join(repoRoot, 'test-output', 'ui');
const TARGET = 'gpu-box';
const TRACE = 'llama_cudagraph_decode.pt.trace.json.gz';

/** The first frame for which `matches` holds, looked for until `timeoutMs`; frames come and go as webviews load. */
async function frameWhere(page: Page, what: string, matches: (f: Frame) => Promise<boolean>, timeoutMs = 30_000): Promise<Frame> {
  return poll(
    what,
    async () => {
      for (const f of page.frames()) {
        try {
          if (await matches(f)) return f;
        } catch {
          // a frame that went away while we looked
        }
      }
      return undefined;
    },
    timeoutMs,
  );
}

/** The inner document of the webview whose <title> is `title` (the results panel and the kernel view both live in iframes). */
function webviewFrame(page: Page, title: string, timeoutMs = 30_000): Promise<Frame> {
  return frameWhere(page, `the "${title}" webview`, async (f) => (await f.title()) === title && (await f.locator('#app').count()) > 0, timeoutMs);
}

/** The webview (the findings preview) showing a heading with this text. */
function frameWithHeading(page: Page, text: string): Promise<Frame> {
  return frameWhere(page, `a heading "${text}" in a webview`, async (f) => (await f.locator('h1, h2, h3').filter({ hasText: text }).count()) > 0);
}

/** How many requests the server has finished, from its Prometheus counter (vllm:request_success_total). */
async function requestsServed(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return [...text.matchAll(/^vllm:request_success_total\{[^}]*\} ([0-9.e+]+)$/gm)].reduce((sum, m) => sum + Number(m[1]), 0);
}

/** OpenSSH's fingerprint of a public key line, from ssh-keygen itself. */
function sshFingerprint(publicLine: string): string {
  return execFileSync('ssh-keygen', ['-l', '-f', '-'], { input: `${publicLine}\n`, encoding: 'utf8' }).split(' ')[1];
}

/** Whether an element's top edge is inside its page's viewport (run in the webview). */
function inSight(el: { getBoundingClientRect(): { top: number; bottom: number }; ownerDocument: { defaultView: { innerHeight: number } | null } }): boolean {
  const r = el.getBoundingClientRect();
  return r.top >= 0 && r.bottom <= (el.ownerDocument.defaultView?.innerHeight ?? 0);
}

/** Mean brightness (0..255) of a canvas's corner, where the chart paints the theme's background. */
function canvasBackground(frame: Frame): Promise<number> {
  return frame
    .locator('canvas')
    .first()
    .evaluate((c: PageCanvas) => {
      const d = c.getContext('2d')!.getImageData(2, 2, 1, 1).data;
      return (d[0] + d[1] + d[2]) / 3;
    });
}

describe('live results in code-server (UI)', function () {
  this.timeout(300_000);
  let dirs: CodeServerDirs;
  let workspace: string;
  let sim: RunningSimulator;
  let keyed: RunningSimulator | undefined;
  let sshd: Sshd | undefined;
  let server: CodeServer | undefined;
  let browser: Awaited<ReturnType<typeof launchChromium>> | undefined;
  let wb: Workbench;
  /** The server a step starts as its user would (without the profiler); killed at the end. */
  let noProfiler: UserServer | undefined;
  /** The server whose GPUs are held while it runs (the busy-GPU Run All); killed at the end. */
  let busyServer: UserServer | undefined;
  const figures: Record<string, unknown> = {};

  before(async () => {
    mkdirSync(outDir, { recursive: true });
    dirs = makeCodeServerDirs('infbench-ui-live-');
    // A quick timing model (5 ms decode steps) so the sweep takes seconds, slow enough to watch; its
    // profiler writes per-rank traces of the seed model's step (TP 8, about half in all-reduce).
    sim = await startSimulator({ stepBaseMs: 5, stepPerSeqMs: 0.05, prefillPerTokenMs: 0.002, profilerDir: join(dirs.root, 'traces') });
    workspace = join(dirs.root, 'workspace');
    mkdirSync(join(workspace, '.vscode'), { recursive: true });
    // The GPU box is reached over SSH: a private sshd on loopback with its own keys, and a Host alias
    // in ~/.ssh/config (code-server's HOME is a scratch folder) with its known_hosts entry.
    const key = makeKey(dirs.root, 'id_ui');
    sshd = await startSshd({ authorizedKeys: [key.publicLine] });
    writeClientConfig(
      join(dirs.home, '.ssh'),
      { [TARGET]: ['HostName 127.0.0.1', `Port ${sshd.port}`, `User ${userInfo().username}`, `IdentityFile ${key.privateFile}`, 'IdentitiesOnly yes'] },
      [sshd.knownHostsLine],
    );
    // No GPU here: a stand-in nvidia-smi (test/fixtures/ui/README.md) gives the probe the seed box's
    // eight H200s, reached the way a user enters an environment: the target's command prefix.
    const fakeSmi = join(repoRoot, 'test', 'fixtures', 'ui', 'fake-nvidia-smi');
    const target = { name: TARGET, host: TARGET, serverUrl: sim.url, python: 'python3', commandPrefix: ['env', `PATH=${fakeSmi}:${process.env.PATH}`] };
    writeFileSync(join(workspace, '.vscode', 'settings.json'), JSON.stringify({ 'inferenceBench.targets': [target] }, null, 2));
    copyFileSync(join(repoRoot, 'test', 'fixtures', 'traces', TRACE), join(workspace, TRACE));
    const vsix = await packageVsix(join(outDir, 'inference-bench-live.vsix'));
    await installExtension(vsix.path, dirs);
    server = await startCodeServer({
      folder: workspace,
      dirs,
      logFile: join(outDir, 'code-server-live.log'),
      settings: { 'workbench.colorTheme': 'Default Dark Modern' },
    });
    browser = await launchChromium();
    await browser.context.addInitScript(recordCspViolations);
    const page = await browser.context.newPage();
    await page.setViewportSize({ width: 1600, height: 1000 });
    wb = new Workbench(page);
    await wb.open(server.folderUrl(workspace));
  });

  after(async () => {
    writeFileSync(join(outDir, 'live-figures.json'), JSON.stringify(figures, null, 2));
    if (wb) writeFileSync(join(outDir, 'live-console.log'), wb.console.map((m) => `[${m.type()}] ${m.text()}`).join('\n'));
    await browser?.close();
    await server?.stop();
    await sim?.stop();
    await keyed?.stop();
    noProfiler?.kill();
    busyServer?.kill();
    await sshd?.stop();
    if (dirs) removeDirs(dirs);
  });

  afterEach(async function () {
    // What the user would have seen when a step failed.
    if (this.currentTest?.state === 'failed' && wb)
      await wb.screenshot(`live-failed-${this.currentTest.title.slice(0, 40).replace(/[^A-Za-z0-9]+/g, '-')}`).catch(() => undefined);
  });

  const SECOND = 'gpu-box-2';
  /** The findings document's name: after the probe, the simulator's model and this GPU-less host (cpu). */
  const findingsName = () => defaultFindingsDocument(workspace);
  /** A target's row in the sidebar (its accessible name is "name, description"). */
  const targetRow = (name: string) => wb.page.getByRole('treeitem', { name: new RegExp(`^${name}, `) }).first();

  /** The findings preview's tab: in the second editor column, named after the document. */
  const previewTab = () =>
    wb.page
      .locator('.editor-group-container')
      .nth(1)
      .getByRole('tab', { name: new RegExp(`^${escapeRegExp(findingsName())}`) });

  it('shows the SSH target (a ~/.ssh/config alias for a loopback sshd) in the sidebar', async () => {
    await wb.activityBarItem('Inference Bench').click();
    await wb.page
      .getByRole('treeitem', { name: new RegExp(TARGET) })
      .first()
      .waitFor({ timeout: 30_000 });
    await wb.screenshot('live-sidebar-dark');
  });

  it('probes the target from the palette: the sidebar shows the server, its model and each GPU with memory used / total', async () => {
    await wb.runCommand('Inference Bench: Probe Target');
    await wb.page.getByRole('treeitem', { name: /^GPU 7, NVIDIA H200 · 126\.7 \/ 140\.4 GiB/ }).waitFor({ timeout: 60_000 });
    assert.equal(await wb.page.getByRole('treeitem', { name: /^GPU \d, NVIDIA H200/ }).count(), 8);
    // The server's kind and release as the probe found them, and the URL on the target's row.
    await wb.page.getByRole('treeitem', { name: /^connected · vLLM \d+\.\d+\.\d+ \(simulator\), moonshotai\/Kimi-K2\.5/ }).waitFor();
    await wb.page.getByRole('treeitem', { name: new RegExp(`^${TARGET}, ${sim.url.replace('http://', '').replace(/[.]/g, '\\.')}$`) }).waitFor();
    // The probe fills in the findings document's environment section, and its preview shows it.
    // Waiting for that also lets the preview finish loading before the next step covers its tab: the
    // results view took 18 s (and once over 30 s) to load when it covered a preview still loading,
    // likely VS Code's webview service worker waiting on the covered page's requests (its 30 s
    // resolveTimeout, webview/browser/pre/service-worker.js) before the next webview's worker can start.
    await frameWithHeading(wb.page, `Environment: ${TARGET}`);
    await wb.screenshot('live-sidebar-probed-dark');
  });

  it('runs the macro phase from the palette and the chart gains points while the run goes', async () => {
    await wb.runCommand('Inference Bench: Run Macro Phase');
    await wb.answer(/Single stream, then a concurrency sweep/);
    // The sweep takes seconds, and how long the results view takes to load is the workbench's. To see
    // points arrive while the run goes whatever that takes, the server is held still (SIGSTOP, as a
    // stalled server is) once the run has points, until the view shows them. Its first two requests
    // are the warm-up, which the run discards; it hands on its points at most once a second, when a
    // request finishes (LIVE_UPDATE_MS in src/core/phases/macro.ts): so once a request has finished
    // more than a second after the warm-up, the points before it have been handed on.
    await poll('the warm-up requests answered', async () => ((await requestsServed(sim.url)) >= 2 ? true : undefined), 60_000);
    await new Promise((r) => setTimeout(r, 1200));
    const servedThen = await requestsServed(sim.url);
    await poll('a request answered a second after the warm-up', async () => ((await requestsServed(sim.url)) > servedThen ? true : undefined), 60_000);
    sim.process.kill('SIGSTOP');
    let view: Frame;
    let first: number;
    const points = async () => Number((await view.locator('body').getAttribute('data-points')) ?? 0);
    try {
      view = await webviewFrame(wb.page, 'Inference Bench Results');
      await view
        .locator('#run-status')
        .getByText(/running/)
        .waitFor();
      first = await poll('the points measured before the server stalled', async () => ((await points()) > 0 ? points() : undefined));
    } finally {
      sim.process.kill('SIGCONT');
    }
    const later = await poll(
      'more points while the run goes',
      async () => {
        const n = await points();
        return n > first && (await view.locator('#run-status').innerText()).includes('running') ? n : undefined;
      },
      60_000,
    );
    figures.pointsSeenWhileRunning = [first, later];
    await wb.screenshot('live-macro-running-dark');
    await view
      .locator('#run-status')
      .getByText(/completed/)
      .waitFor({ timeout: 120_000 });
    assert.match(await view.locator('#run-headline').innerText(), /tok\/s/);
    // Every chart has its data as a table: open the throughput one and read the levels.
    await view
      .getByText(/^Data table/)
      .first()
      .click();
    await view.locator('table[data-table-id="macro-throughput"] tbody tr').first().waitFor();
    const rows = await view.locator('table[data-table-id="macro-throughput"] tbody tr').count();
    assert.equal(rows, 4, 'the throughput table should list the four levels of the seed sweep');
    const violations = await view.locator('body').evaluate(() => window.__infbenchCspViolations ?? []);
    assert.deepEqual(violations, [], 'Content-Security-Policy violations in the results view');
  });

  it('fills the findings document in the editor as the run goes', async () => {
    await wb.page
      .getByRole('tab', { name: new RegExp(escapeRegExp(findingsName())) })
      .first()
      .waitFor({ timeout: 30_000 });
    await poll(
      'the macro section in the findings document',
      () => {
        const file = join(workspace, findingsName());
        return existsSync(file) && readFileSync(file, 'utf8').includes(`Serving benchmark — ${TARGET}`) ? true : undefined;
      },
      60_000,
    ).catch(async () => {
      // The document may hold the section unsaved: then the editor shows it.
      await wb.page.locator('.monaco-editor').getByText(`Serving benchmark — ${TARGET}`).first().waitFor({ timeout: 10_000 });
    });
    await wb.screenshot('live-macro-findings-dark');
  });

  it('shows the findings document rendered beside its text, its result tables as tables', async () => {
    // The preview shares the results' column (as a tab beside them), next to the text's column.
    await previewTab().click();
    const preview = await frameWithHeading(wb.page, `Serving benchmark — ${TARGET}`);
    // The levels table as a table: its header cells and a row per level, not pipes wrapped over lines.
    const table = preview
      .locator('table')
      .filter({ has: preview.locator('th', { hasText: /^Load$/ }) })
      .first();
    await table.waitFor();
    await table.locator('th', { hasText: /^TTFT p99 ms$/ }).waitFor();
    assert.ok((await table.locator('tbody tr').count()) >= 4, 'the preview should render a row per level of the seed sweep');
    assert.equal(await preview.locator('p', { hasText: /^\|/ }).count(), 0, 'a table left as text in the preview');
    await wb.screenshot('live-findings-preview-dark');
    // Back to the charts for the steps that follow.
    await wb.page.getByRole('tab', { name: /^Inference Bench Results/ }).click();
  });

  it('exports the throughput chart as PNG and its data as CSV through the save dialog', async () => {
    const view = await webviewFrame(wb.page, 'Inference Bench Results');
    const card = view.locator('section.card', { hasText: 'Throughput vs concurrency' });
    const runId = (await view.locator('#run-select').inputValue()).trim();
    for (const [button, ext] of [
      ['PNG', 'png'],
      ['CSV', 'csv'],
    ] as const) {
      await card.getByRole('button', { name: button }).click();
      // code-server's save dialog is a quick input holding the proposed path: accept it, with Enter
      // in its own box (focus was in the results view a moment before, see Workbench.answer).
      await wb.quickInput.waitFor({ timeout: 15_000 });
      await wb.inputBox.press('Enter');
      const file = join(workspace, `${runId}-throughput.${ext}`);
      await poll(`${file} to be written`, () => (existsSync(file) ? true : undefined), 15_000);
      const bytes = readFileSync(file);
      if (ext === 'png') assert.deepEqual([...bytes.subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47], 'not a PNG file');
      else
        assert.match(
          bytes.toString('utf8'),
          /^concurrency,level,completed,failed,duration \(s\),req\/s,output tok\/s,total tok\/s,load generator limit\r\n1,complete,/,
        );
    }
  });

  it('comes back after a reload of the window showing the same run (the serializer restores the panel)', async () => {
    const before = await (await webviewFrame(wb.page, 'Inference Bench Results')).locator('#run-select').inputValue();
    await wb.page.reload();
    await wb.page.locator('.monaco-workbench').waitFor({ timeout: 60_000 });
    // The results share their column with the findings preview: the tab restored on top may be either,
    // and VS Code restores a webview only once it is shown, so its tab is brought forward as a user would.
    await wb.page.getByRole('tab', { name: /^Inference Bench Results/ }).click();
    const view = await webviewFrame(wb.page, 'Inference Bench Results', 60_000);
    await view.getByText('Throughput vs concurrency').waitFor({ timeout: 30_000 });
    assert.equal(await view.locator('#run-select').inputValue(), before);
  });

  it('runs the profiler phase from the palette and shows the decode step split by category on every rank', async () => {
    await wb.runCommand('Inference Bench: Run Profiler Phase');
    await wb.answer(/Decode batch of 4/);
    // Which profiler: the server's torch profiler (inferenceBench.profiler is not set, so it is asked).
    await wb.answer(new RegExp(`^Run Profiler Phase on ${TARGET}: which profiler$`), 'Torch profiler');
    const view = await webviewFrame(wb.page, 'Inference Bench Results');
    await view.getByRole('heading', { name: new RegExp(`Profiler \\(decode step\\) · ${TARGET}`) }).waitFor({ timeout: 60_000 });
    await view
      .locator('#run-status')
      .getByText(/completed/)
      .waitFor({ timeout: 180_000 });
    await view.getByText('Decode step by kernel category, per rank').waitFor();
    const headline = await view.locator('#run-headline').innerText();
    figures.profileHeadline = headline;
    assert.match(headline, /all-reduce/, 'the seed model spends most of its step in all-reduce');
    await view
      .getByText(/^Data table/)
      .first()
      .click();
    await view.locator('table[data-table-id="profile-step"] tbody tr').first().waitFor();
    const ranks = await view.locator('table[data-table-id="profile-step"] tbody tr').count();
    assert.equal(ranks, 8, 'one bar per rank of the TP 8 simulator');
    await wb.screenshot('live-profile-phase-dark');
    // With a macro and a profile run, the view accounts where the milliseconds of a decode step go.
    const budget = view.getByRole('heading', { name: /Where the milliseconds go/ });
    await budget.waitFor({ timeout: 30_000 });
    await budget.scrollIntoViewIfNeeded();
    figures.budgetReadings = await view.locator('.readings li').allInnerTexts();
    assert.ok(
      (figures.budgetReadings as string[]).some((r) => /all-reduce/i.test(r)),
      `readings: ${figures.budgetReadings}`,
    );
    // The budget is of this target's runs only, and says so.
    assert.match(await view.locator('.budget-scope').innerText(), new RegExp(`^For target ${TARGET}`));
    await wb.screenshot('live-budget-dark');
    // The Kernel Breakdown panel: all ranks with the headline's own percentages, then one rank.
    await view.getByRole('button', { name: /Inspect kernels/ }).click();
    const kernels = await webviewFrame(wb.page, 'Kernel breakdown');
    await kernels.locator('#rank-select').waitFor({ timeout: 30_000 });
    assert.equal(await kernels.locator('#rank-select option').count(), 9, 'all ranks, then each of the 8');
    const top = /^(\S+) (\d+\.\d)%/.exec(headline);
    if (top) {
      const figure = await kernels.locator('button.category', { hasText: top[1] }).first().locator('.category-figure').innerText();
      assert.ok(figure.endsWith(`${top[2]}%`), `the panel says ${figure} where the headline says ${top[2]}%`);
    }
    await kernels.locator('#rank-select').selectOption('3');
    await kernels
      .locator('.step-line')
      .getByText(/rank 3/)
      .waitFor();
    await kernels.locator('button.category').first().click();
    await kernels
      .locator('#category-kernels h3')
      .getByText(/on rank 3/)
      .waitFor();
    await wb.screenshot('live-kernels-rank-dark');
  });

  it('times a 10,000-point chart update inside the results view', async () => {
    const view = await webviewFrame(wb.page, 'Inference Bench Results');
    const runs: number[] = [];
    for (let i = 0; i < 7; i++) {
      const r = await view.locator('body').evaluate(() => window.infbenchBench(10_000));
      assert.ok(r.painted > 1000, 'the benchmark chart did not draw');
      runs.push(r.ms);
    }
    runs.sort((a, b) => a - b);
    figures.chartUpdate10kMs = { median: runs[3], min: runs[0], max: runs[6] };
    assert.ok(runs[3] < 250, `a 10,000-point update took ${runs[3]} ms`);
  });

  it('breaks a real trace down from the Explorer and inspects a kernel in the side view, then inserts it into the findings', async () => {
    await wb.page
      .getByRole('tab', { name: /^Explorer/ })
      .first()
      .click();
    await wb.page
      .getByRole('treeitem', { name: new RegExp(TRACE.replace(/\./g, '\\.')) })
      .first()
      .click({ button: 'right' });
    await wb.chooseMenuItem(/Analyze Trace File/);
    const view = await webviewFrame(wb.page, 'Inference Bench Results');
    // The view still shows the profiler phase's run (completed, with the same heading) until the
    // analysis run replaces it: wait for the analysis run itself, then for it to complete.
    await view
      .locator('header h2, h2')
      .filter({ hasText: /· trace files/ })
      .first()
      .waitFor({ timeout: 60_000 });
    await view
      .locator('#run-status')
      .getByText(/completed/)
      .waitFor({ timeout: 60_000 });
    await view.getByText('Decode step by kernel category, per rank').waitFor({ timeout: 60_000 });
    await view.locator('.extras table tbody tr').first().waitFor({ timeout: 30_000 });
    assert.ok((await view.locator('.extras table tbody tr').count()) > 0, 'no top kernels listed');
    await wb.screenshot('live-profile-dark');
    await view.getByRole('button', { name: /Inspect kernels/ }).click();
    const kernels = await webviewFrame(wb.page, 'Kernel breakdown');
    // The side view still shows the profiler phase's run (opened by an earlier step) until the
    // analysis run's breakdown reaches it: a category clicked before then belongs to the old run.
    await kernels
      .locator('h2')
      .filter({ hasText: /^trace files · / })
      .waitFor({ timeout: 30_000 });
    const firstCategory = kernels.locator('button.category').first();
    await firstCategory.waitFor({ timeout: 30_000 });
    await firstCategory.click();
    // What the click opened is in sight in the short side view, not below the fold.
    await poll("the category's kernels scrolled into sight", () =>
      kernels
        .locator('#category-kernels h3')
        .evaluate(inSight)
        .then((yes) => yes || undefined),
    );
    await kernels.locator('#category-kernels tbody tr').first().click();
    await kernels.locator('#kernel-detail').getByText('launches per decode step').waitFor();
    const name = await kernels.locator('#kernel-detail .kernel-name').innerText();
    await wb.screenshot('live-kernels-dark');
    await kernels
      .locator('#kernel-detail')
      .getByRole('button', { name: /Insert into findings/ })
      .click();
    await kernels.getByText('Inserted into the findings document.').waitFor({ timeout: 15_000 });
    await wb.page
      .locator('.monaco-editor')
      .getByText(`Kernel ${name.slice(0, 30)}`)
      .first()
      .waitFor({ timeout: 15_000 })
      .catch(() => undefined);
    figures.insertedKernel = name;
  });

  it('runs a custom macro workload from the quick picks (requests per level, a length range, goodput SLOs) and offers it first next time', async () => {
    await wb.runCommand('Inference Bench: Run Macro Phase');
    // Each preset says what it sends, requests per level included.
    await wb.quickInput
      .getByText(/concurrency 1, 8, 32, 64; max\(8, 4 × concurrency\) requests per level; random prompts, 256 → 128 tokens/)
      .first()
      .waitFor();
    await wb.answer(new RegExp(`^Run Macro Phase on ${TARGET}$`), 'Custom');
    await wb.answer(/: load$/, 'Concurrency levels');
    await wb.answer(/: concurrency levels$/, '2');
    await wb.answer(/: requests per level$/, '6');
    await wb.answer(/: dataset$/, 'Random prompts');
    await wb.answer(/: prompt and output tokens$/, '32, 16');
    await wb.answer(/: length range$/, '0.5');
    await wb.answer(/: sampling$/, '');
    await wb.answer(/: goodput SLOs$/, 'ttft:1000 tpot:100');
    // The findings document quotes the figures people cite, the goodput asked for among them, and says
    // what was sent (the prompts' range); the run folder's full table has what vllm bench serve prints:
    // duration, E2EL, total tok/s and, with lengths drawn over a range, each level's mean lengths.
    const file = join(workspace, findingsName());
    const fullTable = await poll(
      "the custom run's table in the findings document",
      () => {
        const text = existsSync(file) ? readFileSync(file, 'utf8') : '';
        const full = /`(\.inference-bench\/runs\/[^`]+\/serving-table\.md)`/.exec(text.slice(text.indexOf('each ±50%')))?.[1];
        return /Goodput req\/s/.test(text) && /TTFT p99 ms/.test(text) && /random prompts, 32 → 16 tokens, each ±50% \(16–48 → 8–24/.test(text) && full
          ? readFileSync(join(workspace, full), 'utf8')
          : undefined;
      },
      90_000,
    );
    for (const column of ['Duration s', 'E2EL mean ms', 'Total tok/s', 'Prompt tok mean', 'Goodput req/s']) assert.ok(fullTable.includes(column), column);
    await wb.runCommand('Inference Bench: Run Macro Phase');
    await wb.quickInput.getByText(/Again: Custom/).waitFor();
    // The question stays while the user looks elsewhere: a click into the results view takes focus
    // (as VS Code itself gives focus back to a webview between two questions) and the pick is still there.
    const results = await webviewFrame(wb.page, 'Inference Bench Results');
    await results.locator('canvas').first().click();
    await poll('focus in the results view', async () => ((await wb.page.evaluate('document.activeElement?.tagName')) === 'IFRAME' ? true : undefined));
    assert.ok(await wb.quickInput.isVisible(), 'the workload pick closed when focus moved into the results view');
    await wb.quickInput
      .getByText(
        'concurrency 2; 6 requests per level; random prompts, 32 → 16 tokens, each ±50% (16–48 → 8–24, range ratio 0.5); goodput SLOs TTFT ≤ 1000 ms, TPOT ≤ 100 ms',
      )
      .first()
      .waitFor();
    await wb.screenshot('live-macro-presets-dark');
    await wb.inputBox.click();
    await wb.page.keyboard.press('Escape');
  });

  it('compares two macro runs in the results view: B in other colours, and what changed beyond noise in one line', async () => {
    const view = await webviewFrame(wb.page, 'Inference Bench Results');
    const other = await view
      .locator('#compare-select option', { hasText: new RegExp(`^B: macro · ${TARGET} `) })
      .first()
      .getAttribute('value');
    await view.locator('#compare-select').selectOption(other!);
    const verdict = view.locator('#compare-verdict');
    await verdict.waitFor({ timeout: 30_000 });
    // The CLI's own compare rules answer: changes flagged beyond noise, or none.
    assert.match(await verdict.innerText(), /^(▲ \d+ changes? beyond noise: .+|No difference between .+ beyond noise .+|Nothing to compare between .+)$/);
    await wb.screenshot('live-compare-dark');
    await view.locator('#compare-select').selectOption('');
    await verdict.waitFor({ state: 'detached' });
  });

  it('adds a second target on the same host from its ~/.ssh/config alias, and both show the one connection', async () => {
    // The sidebar as the steps before left it (a click on its icon would close it when shown).
    if (!(await targetRow(TARGET).isVisible())) await wb.openSideBar('Inference Bench');
    await targetRow(TARGET).waitFor();
    // Focus in the sidebar, where a user's click puts it (on a GPU row: a click on the target's own row
    // would fold it): the compare step left it in the results view's select, and focus handed back after
    // Escape can land after the palette opened and close it.
    await wb.page
      .getByRole('treeitem', { name: /^GPU 0/ })
      .first()
      .click();
    await wb.runCommand('Inference Bench: Add Target');
    // The config's Host aliases are offered first, with where each one goes.
    await wb.quickInput.getByRole('option', { name: new RegExp(`${TARGET}.*127\\.0\\.0\\.1:${sshd!.port}`) }).waitFor();
    await wb.quickInput.getByRole('option', { name: /Open SSH Config File/ }).waitFor();
    await wb.screenshot('live-add-target-hosts-dark');
    await wb.answer(/^Add Target \(1\/4\)$/, TARGET);
    await wb.answer(/server URL/i, sim.url);
    await wb.answer(/Python/);
    await wb.answer(/name/i, SECOND);
    // Checked at once: it connects (over the host's existing connection) and says so.
    await wb.page.getByText(`Inference Bench: target "${SECOND}" added and connected.`, { exact: false }).first().waitFor({ timeout: 30_000 });
    const stateRows = wb.page.getByRole('treeitem', { name: /^connected/ });
    await poll('both targets showing the connected host', async () => ((await stateRows.count()) === 2 ? true : undefined));
    await wb.screenshot('live-targets-shared-host-dark');
    // Probing the new target from the notification: its run takes the results view over, and the
    // budget below it no longer describes the first target (it was kept until the tab was reopened).
    const view = await webviewFrame(wb.page, 'Inference Bench Results');
    assert.match(await view.locator('.budget-scope').innerText(), new RegExp(`^For target ${TARGET} `));
    await wb.page
      .locator('.notification-toast', { hasText: `target "${SECOND}" added` })
      .getByRole('button', { name: 'Probe Target' })
      .click();
    await view.locator('#run-select option:checked', { hasText: new RegExp(`^probe · ${SECOND} `) }).waitFor({ state: 'attached', timeout: 30_000 });
    await poll('the budget to leave the first target', async () => {
      const scopes = await view.locator('.budget-scope').allInnerTexts();
      return scopes.every((t) => !t.startsWith(`For target ${TARGET} `)) ? true : undefined;
    });
    // The probe run itself shows what it found.
    await view.getByRole('heading', { name: 'Environment' }).waitFor();
    await wb.screenshot('live-second-target-probe-dark');
    // Back to the first target's macro run, as the steps after expect the view.
    const macroRun = await view
      .locator('#run-select option', { hasText: new RegExp(`^macro · ${TARGET} `) })
      .first()
      .getAttribute('value');
    await view.locator('#run-select').selectOption(macroRun!);
    await poll('the budget back on the first target', async () =>
      (await view.locator('.budget-scope').allInnerTexts()).some((t) => t.startsWith(`For target ${TARGET} `)) ? true : undefined,
    );
  });

  it('disconnects the shared host from one target\'s context menu: neither is left connected or "connecting…"', async () => {
    await targetRow(SECOND).click({ button: 'right' });
    await wb.chooseMenuItem('Disconnect');
    await poll('both targets not connected', async () => ((await wb.page.getByRole('treeitem', { name: /^not connected/ }).count()) === 2 ? true : undefined));
    assert.equal(await wb.page.getByRole('treeitem', { name: /connecting…/ }).count(), 0);
    await wb.screenshot('live-targets-disconnected-dark');
    // Connect from the other target brings both back.
    await targetRow(TARGET).click({ button: 'right' });
    await wb.chooseMenuItem('Connect');
    await poll(
      'both targets connected again',
      async () => ((await wb.page.getByRole('treeitem', { name: /^connected/ }).count()) === 2 ? true : undefined),
      30_000,
    );
  });

  it('edits and removes a target from its context menu', async () => {
    await targetRow(SECOND).click({ button: 'right' });
    await wb.chooseMenuItem('Edit Target...');
    await wb.answer(new RegExp(`^Edit Target: ${SECOND}$`), 'Server URL');
    await wb.answer(/server's URL/, 'http://127.0.0.1:30000');
    await wb.page.getByRole('treeitem', { name: new RegExp(`^${SECOND}, ${TARGET} · 127\\.0\\.0\\.1:30000$`) }).waitFor();
    await wb.screenshot('live-target-edited-dark');
    await targetRow(SECOND).click({ button: 'right' });
    await wb.chooseMenuItem('Remove Target');
    await wb.page.getByRole('dialog').getByRole('button', { name: 'Remove' }).click();
    await targetRow(SECOND).waitFor({ state: 'detached' });
    // The host's connection stays for the target still on it.
    await wb.page.getByRole('treeitem', { name: /^connected · vLLM/ }).waitFor();
    // What the user would open: the workspace's settings file keeps the first target as it was.
    const names = await poll('the second target gone from .vscode/settings.json', () => {
      try {
        const saved = JSON.parse(readFileSync(join(workspace, '.vscode', 'settings.json'), 'utf8')) as Record<string, { name: string }[]>;
        const list = saved['inferenceBench.targets'].map((t) => t.name);
        return list.includes(SECOND) ? undefined : list;
      } catch {
        return undefined; // VS Code writes settings.json in place: a read can land between its truncate and its write
      }
    });
    assert.deepEqual(names, [TARGET]);
  });

  it('refuses a changed host key with both fingerprints, and after a yes that shows the command removes the old key and connects trusting the new one', async () => {
    await targetRow(TARGET).click({ button: 'right' });
    await wb.chooseMenuItem('Disconnect');
    await wb.page.getByRole('treeitem', { name: /^not connected/ }).waitFor();
    // The host now holds another key than known_hosts (as after a reinstall, or a man in the middle).
    const knownHosts = join(dirs.home, '.ssh', 'known_hosts');
    const old = makeKey(dirs.root, 'old_host_key');
    writeFileSync(knownHosts, `[127.0.0.1]:${sshd!.port} ${old.publicLine.split(' ').slice(0, 2).join(' ')}\n`);
    const oldPrint = sshFingerprint(old.publicLine);
    const newPrint = sshFingerprint(sshd!.hostKey.publicLine);
    await targetRow(TARGET).click({ button: 'right' });
    await wb.chooseMenuItem('Connect');
    const toast = wb.page.locator('.notification-toast', { hasText: 'has CHANGED' }).first();
    await toast.waitFor({ timeout: 30_000 });
    const said = await toast.innerText();
    assert.ok(said.includes(newPrint) && said.includes(oldPrint), `both fingerprints in the notification: ${said}`);
    await toast.getByRole('button', { name: 'Open known_hosts' }).waitFor();
    await wb.screenshot('live-host-key-changed-dark');
    await toast.getByRole('button', { name: 'Remove Old Key...' }).click();
    const dialog = wb.page.getByRole('dialog');
    await dialog.getByText(`ssh-keygen -R '[127.0.0.1]:${sshd!.port}' -f '${knownHosts}'`, { exact: false }).waitFor();
    await wb.screenshot('live-host-key-remove-dark');
    await dialog.getByRole('button', { name: 'Remove and Connect' }).click();
    // Connecting again asks to trust the key the host offers, with its fingerprint, as ssh does.
    await wb.page.getByRole('dialog').getByText(newPrint, { exact: false }).waitFor({ timeout: 30_000 });
    await wb.page.getByRole('dialog').getByRole('button', { name: 'Trust' }).click();
    await wb.page.getByRole('treeitem', { name: /^connected/ }).waitFor({ timeout: 30_000 });
    const kept = readFileSync(knownHosts, 'utf8');
    assert.ok(kept.includes(sshd!.hostKey.publicLine.split(' ')[1]) && !kept.includes(old.publicLine.split(' ')[1]), kept);
    assert.ok(existsSync(`${knownHosts}.old`), 'ssh-keygen keeps the previous known_hosts');
    // Focus back where a user leaves it, in the sidebar: with the dialogs gone, VS Code hands it to the
    // results view's frame without its page taking it, and the next palette would wait on that page.
    await wb.page.getByRole('treeitem', { name: /^GPU 0/ }).click();
  });

  it('follows a switch to a light theme: the charts repaint with the new colours', async () => {
    const results = await webviewFrame(wb.page, 'Inference Bench Results');
    const dark = await canvasBackground(results);
    // To the preferred light theme (Light Modern by default), as a user flips it from the palette.
    await wb.runCommand('Preferences: Toggle between Light/Dark Themes');
    const light = await poll(
      'the chart to repaint light',
      async () => {
        const v = await canvasBackground(results);
        return v > 180 ? v : undefined;
      },
      20_000,
    );
    figures.chartBackground = { dark, light };
    assert.ok(dark < 80, `the dark theme's chart background was ${dark}`);
    await wb.screenshot('live-profile-light');
    const kernels = await webviewFrame(wb.page, 'Kernel breakdown');
    await kernels.locator('button.category').first().waitFor();
    await wb.screenshot('live-kernels-light');
    // Back to the macro run, as drawn in the light theme.
    const macroRun = await results
      .locator('#run-select option', { hasText: /^macro/ })
      .first()
      .getAttribute('value');
    await results.locator('#run-select').selectOption(macroRun!);
    await results.getByText('Throughput vs concurrency').waitFor();
    await wb.screenshot('live-macro-light');
    await previewTab().click();
    await poll('the findings preview drawn in the light theme', async () => {
      for (const f of wb.page.frames()) {
        try {
          if (
            await f
              .locator('table th', { hasText: /^Load$/ })
              .first()
              .isVisible()
          )
            return true;
        } catch {
          // a frame that went away while we looked
        }
      }
      return undefined;
    });
    await wb.screenshot('live-findings-preview-light');
    await wb.page.getByRole('tab', { name: /^Inference Bench Results/ }).click();
    // The sidebar as the steps before left it (a click on its icon would close it when shown).
    if (!(await targetRow(TARGET).isVisible())) await wb.openSideBar('Inference Bench');
    await wb.page.getByRole('treeitem', { name: /^GPU 0/ }).waitFor();
    await wb.screenshot('live-sidebar-light');
  });

  it('shows a server killed mid-session as not answering within seconds, its host still connected', async () => {
    sim.process.kill('SIGKILL');
    // The sidebar's health check runs every few seconds through the open connection; no probe, no click.
    await wb.page.getByRole('treeitem', { name: /^connected · server not answering, nothing answers at http:\/\/127\.0\.0\.1:/ }).waitFor({ timeout: 30_000 });
    await wb.screenshot('live-server-killed-light');
  });

  const KEYED = 'gpu-box-keyed';
  const API_KEY = 'sk-ui-test-key';

  it('adds a key-protected server on the same host: its row asks for the API key, and Set Server API Key from its context menu probes it again with the key', async () => {
    // vLLM 0.16 started with --api-key: every /v1 request without the key answers 401.
    keyed = await startSimulator({ stepBaseMs: 5, stepPerSeqMs: 0.05, prefillPerTokenMs: 0.002, extraArgs: ['--mimic', 'vllm-0.16', '--api-key', API_KEY] });
    // Focus in the sidebar, where a user's click puts it: a webview frame given focus earlier would swallow the palette.
    await targetRow(TARGET).click();
    await wb.runCommand('Inference Bench: Add Target');
    await wb.answer(/^Add Target \(1\/4\)$/, TARGET);
    await wb.answer(/server URL \(2\/4\)$/, keyed.url);
    await wb.answer(/Python \(3\/4\)$/);
    await wb.answer(/name \(4\/4\)$/, KEYED);
    await wb.page
      .locator('.notification-toast', { hasText: `target "${KEYED}" added` })
      .getByRole('button', { name: 'Probe Target' })
      .click({ timeout: 30_000 });
    // The probe met the 401: the row says the server wants a key, and where to give it.
    await wb.page.getByRole('treeitem', { name: /wants an API key: Set Server API Key\.\.\./ }).waitFor({ timeout: 60_000 });
    await wb.screenshot('live-keyed-server-wants-key-light');
    await targetRow(KEYED).click({ button: 'right' });
    await wb.chooseMenuItem('Set Server API Key...');
    await wb.answer(new RegExp(`API key of the server on ${KEYED}$`), API_KEY);
    // No probe by hand: setting the key probes the target again. With the key the probe reads the model
    // list the 401 had hidden, and the row stops asking for the key.
    await wb.page.getByRole('treeitem', { name: /^connected · vLLM 0\.16\.\d+ \(simulator\), moonshotai\/Kimi/ }).waitFor({ timeout: 60_000 });
    assert.equal(await wb.page.getByRole('treeitem', { name: /wants an API key/ }).count(), 0, 'the row still asks for the key');
    await wb.screenshot('live-keyed-server-probed-light');
    await targetRow(KEYED).click();
  });

  it("shows a target's decode-step budget from the palette, the view scrolled to it", async () => {
    await wb.runCommand('Inference Bench: Show Decode-Step Budget');
    await wb.answer(/Decode-step budget of which target\?/, TARGET);
    const view = await webviewFrame(wb.page, 'Inference Bench Results');
    await poll('the view at the budget', async () => ((await view.locator('body').getAttribute('data-revealed')) === 'budget' ? true : undefined));
    assert.match(await view.locator('.budget-scope').innerText(), new RegExp(`^For target ${TARGET} `));
    await view.getByRole('heading', { name: /Where the milliseconds go/ }).waitFor();
    await wb.screenshot('live-decode-step-budget-light');
  });

  it("shows a macro run's timeline: every request a bar over the server's running, waiting and KV cache, zoomed in and back", async () => {
    await wb.runCommand('Preferences: Toggle between Light/Dark Themes');
    const view = await webviewFrame(wb.page, 'Inference Bench Results');
    const macroRun = await view
      .locator('#run-select option', { hasText: new RegExp(`^macro · ${TARGET} `) })
      .first()
      .getAttribute('value');
    await view.locator('#run-select').selectOption(macroRun!);
    const canvas = view.locator('#run-timeline canvas');
    await canvas.scrollIntoViewIfNeeded();
    // Every request the run kept is a bar on the whole-run view, and the server's series are drawn beneath.
    const bars = await poll('the timeline drawn', async () => Number((await canvas.getAttribute('data-bars')) ?? 0) || undefined);
    // The whole run shows every request it kept, each a bar.
    assert.match((await canvas.getAttribute('aria-label'))!, new RegExp(`^${bars} requests on \\d+ lanes`));
    const series = (await canvas.getAttribute('data-series'))!.split('|');
    for (const s of ['output tok/s (client)', 'requests in flight (client)', 'running (server)', 'KV cache used % (server)'])
      assert.ok(series.includes(s), `${s} not among ${series.join(', ')}`);
    const painted = await canvas.evaluate((c: PageCanvas & { width: number; height: number }) => {
      const d = c.getContext('2d')!.getImageData(0, 0, c.width, c.height).data;
      const colours = new Set<number>();
      for (let i = 0; i < d.length; i += 4 * 97) colours.add((d[i] << 16) | (d[i + 1] << 8) | d[i + 2]);
      return colours.size;
    });
    assert.ok(painted > 4, `the timeline painted ${painted} colours`);
    const whole = (await canvas.getAttribute('data-view'))!.split(',').map(Number);
    await view.getByRole('button', { name: 'Zoom in' }).click();
    await view.getByRole('button', { name: 'Zoom in' }).click();
    const zoomed = (await canvas.getAttribute('data-view'))!.split(',').map(Number);
    assert.ok(Math.abs(zoomed[1] - zoomed[0] - (whole[1] - whole[0]) / 4) < 0.01, `zoomed to ${zoomed} from ${whole}`);
    assert.equal(await canvas.getAttribute('data-zoomed'), 'true');
    await wb.screenshot('live-timeline-dark');
    await view.getByRole('button', { name: 'Reset zoom' }).click();
    assert.deepEqual((await canvas.getAttribute('data-view'))!.split(',').map(Number), whole);
    // The profile run's steps on their own time axis; a click on one lists its categories and kernels.
    const profileRun = await view
      .locator('#run-select option', { hasText: new RegExp(`^profile · ${TARGET} `) })
      .first()
      .getAttribute('value');
    await view.locator('#run-select').selectOption(profileRun!);
    const steps = view.locator('#step-timeline canvas');
    await steps.scrollIntoViewIfNeeded();
    assert.ok(Number(await steps.getAttribute('data-steps')) > 0, 'no profiled step drawn');
    const box = (await steps.boundingBox())!;
    // The first step starts at the axis's origin, the plot's left edge (92 px in).
    await steps.click({ position: { x: 93, y: box.height - 60 } });
    await view.locator('table[data-table-id="profile-step-kernels"] tbody tr').first().waitFor();
    assert.equal(await steps.getAttribute('data-selected'), '0');
    await wb.screenshot('live-step-timeline-dark');
  });

  const NO_PROFILER = 'gpu-box-noprof';

  it('runs all phases on a server started without the profiler: the plan, the restart with its command, the start-up in the output channel, and the original put back', async () => {
    // vLLM 0.16 as its user started it from a shell, without the profiler: a process of its own that
    // the tool adopts, restarts with the profiler and must put back as it was.
    noProfiler = await startUserServer(['--mimic', 'vllm-0.16', '--startup-seconds', '2', '--step-base-ms', '5', '--step-per-seq-ms', '0.05'], repoRoot);
    const { url, port, original } = noProfiler;
    await targetRow(TARGET).click();
    await wb.runCommand('Inference Bench: Add Target');
    await wb.answer(/^Add Target \(1\/4\)$/, TARGET);
    await wb.answer(/server URL \(2\/4\)$/, url);
    await wb.answer(/Python \(3\/4\)$/);
    await wb.answer(/name \(4\/4\)$/, NO_PROFILER);
    await wb.page.locator('.notification-toast', { hasText: `target "${NO_PROFILER}" added` }).waitFor({ timeout: 30_000 });
    await targetRow(NO_PROFILER).click({ button: 'right' });
    await wb.chooseMenuItem('Run All Phases');
    await wb.answer(new RegExp(`^Run Macro Phase on ${NO_PROFILER}$`), 'Single stream only');
    await wb.answer(/^Run All Phases: which profiler$/, 'Torch profiler');
    /** A modal's primary button, after a screenshot of the modal as the user reads it. */
    const agree = async (button: string, shot: string): Promise<string> => {
      const dialog = wb.page.locator('.monaco-dialog-box').filter({ has: wb.page.getByRole('button', { name: button }) });
      await dialog.waitFor({ timeout: 120_000 });
      const text = await dialog.innerText();
      await wb.screenshot(shot);
      await dialog.getByRole('button', { name: button }).click();
      return text;
    };
    // The plan: the probe found the profiler off, so the restart with it and the restore are in it, each with its expected time.
    const plan = await agree('Run the Plan', 'live-run-all-plan');
    assert.match(plan, /Restart.*profiler/i, plan);
    assert.match(plan, /original/i, plan);
    assert.match(plan, /Expected in all: /, plan);
    // The restart asks with the exact commands: the user's own server by its pid, and its command line with the profiler added.
    const restart = await agree('Restart the Server', 'live-run-all-restart-consent');
    assert.ok(restart.includes(String(original.pid)), `the restart does not name pid ${original.pid}: ${restart}`);
    assert.ok(restart.includes('vllm_sim.py'), restart);
    // The start-up log streams into the server's output channel as vLLM writes it.
    await wb.page
      .locator('.output-view, .panel')
      .getByText(/Application startup complete|ready/i)
      .first()
      .waitFor({ timeout: 120_000 });
    await wb.screenshot('live-run-all-server-startup');
    // Every phase ran, and the server that serves the port now is the user's command line again (a new process).
    await wb.page.locator('.notification-toast', { hasText: `all phases finished on ${NO_PROFILER}` }).waitFor({ timeout: 240_000 });
    const after = await poll(
      'the original server back',
      async () => ((await fetch(`${url}/health`).catch(() => undefined))?.status === 200 ? listening(port) : undefined),
      60_000,
    );
    assert.deepEqual(after.argv, original.argv, 'the server put back runs another command line');
    assert.notEqual(after.pid, original.pid, 'the server was never restarted');
    await wb.screenshot('live-run-all-restored');
    const view = await webviewFrame(wb.page, 'Inference Bench Results');
    await view
      .locator('#run-select option', { hasText: new RegExp(`^profile · ${NO_PROFILER} `) })
      .first()
      .waitFor({ state: 'attached', timeout: 30_000 });
    figures.runAllPlan = plan;
  });

  const BUSY = 'gpu-box-busy';

  it("runs all phases on GPUs a server holds: the plan's stop comes before micro, and micro is never refused for the GPUs the plan freed", async () => {
    // A user's vLLM 0.16 without the profiler, and GPUs held only while it runs: the stand-in nvidia-smi
    // (test/support/fake-nvidia-smi) answers 90% used while its port listens and 0% once it is stopped.
    busyServer = await startUserServer(['--mimic', 'vllm-0.16', '--startup-seconds', '1', '--step-base-ms', '5', '--step-per-seq-ms', '0.05'], repoRoot);
    const { url, port, original } = busyServer;
    const smi = join(repoRoot, 'test', 'support', 'fake-nvidia-smi');
    const settingsFile = join(workspace, '.vscode', 'settings.json');
    const settings = JSON.parse(readFileSync(settingsFile, 'utf8')) as { 'inferenceBench.targets': object[] };
    settings['inferenceBench.targets'].push({
      name: BUSY,
      host: TARGET,
      serverUrl: url,
      python: 'python3',
      commandPrefix: ['env', `PATH=${smi}:${process.env.PATH}`, `FAKE_GPU_HELD_BY_PORT=${port}`],
    });
    writeFileSync(settingsFile, JSON.stringify(settings, null, 2));
    await targetRow(BUSY).waitFor({ timeout: 30_000 });
    await targetRow(BUSY).click({ button: 'right' });
    await wb.chooseMenuItem('Run All Phases');
    await wb.answer(new RegExp(`^Run Macro Phase on ${BUSY}$`), 'Single stream only');
    await wb.answer(/^Run All Phases: which profiler$/, 'Torch profiler');
    const runsRoot = join(workspace, '.inference-bench', 'runs');
    const runsOf = (phase: string) =>
      (existsSync(runsRoot) ? readdirSync(runsRoot) : [])
        .filter((d) => existsSync(join(runsRoot, d, 'meta.json')))
        .map((d) => {
          const read = (f: string) => (existsSync(join(runsRoot, d, f)) ? JSON.parse(readFileSync(join(runsRoot, d, f), 'utf8')) : {});
          // meta.json says what the run is; status.json, once it ended, how and why.
          return { ...read('meta.json'), ...read('status.json') } as { target: string; phase: string; status: string; reason?: string };
        })
        .filter((m) => m.target === BUSY && m.phase === phase);
    const modal = async (button: string, shot: string): Promise<string> => {
      const dialog = wb.page.locator('.monaco-dialog-box').filter({ has: wb.page.getByRole('button', { name: button }) });
      await dialog.waitFor({ timeout: 120_000 });
      const text = await dialog.innerText();
      await wb.screenshot(shot);
      // From the keyboard: a consent whose commands carry a whole environment is taller than the window,
      // and its text covers the buttons from the pointer.
      await dialog.getByRole('button', { name: button }).focus();
      await wb.page.keyboard.press('Enter');
      return text;
    };
    // The plan: the probe saw the GPUs held, so the server is stopped for micro (and started with the profiler after it).
    const plan = await modal('Run the Plan', 'live-run-all-busy-plan');
    assert.match(plan, /stop the server \(2 of 2 GPUs hold over 50%/i, plan);
    assert.ok(plan.search(/stop the server/i) < plan.search(/micro: GEMMs/), `the plan does not stop before micro: ${plan}`);
    // The stop is asked before micro runs at all: no micro run of this target exists yet, let alone one refused for busy GPUs.
    const stop = await modal('Stop the Server', 'live-run-all-busy-stop-consent');
    assert.ok(stop.includes(String(original.pid)), `the stop does not name pid ${original.pid}: ${stop}`);
    assert.deepEqual(runsOf('micro'), [], 'micro ran before the planned stop');
    await wb.page
      .locator('.notification-toast', { hasText: new RegExp(`all phases finished on ${BUSY}|Run All Phases stopped after`) })
      .waitFor({ timeout: 240_000 });
    await wb.screenshot('live-run-all-busy-finished');
    // One micro run, on the freed GPUs: whatever it found (this host has no PyTorch for python3), never "GPUs are busy".
    const micro = runsOf('micro');
    assert.equal(micro.length, 1, JSON.stringify(micro));
    assert.doesNotMatch(micro[0].reason ?? '', /GPUs are busy|gpus_busy/);
    assert.equal(await wb.page.getByRole('treeitem', { name: /GPUs are busy/ }).count(), 0, 'the sidebar keeps a micro run refused for busy GPUs');
    // The original is back.
    const after = await poll(
      'the original server back',
      async () => ((await fetch(`${url}/health`).catch(() => undefined))?.status === 200 ? listening(port) : undefined),
      60_000,
    );
    assert.deepEqual(after.argv, original.argv);
  });

  it("compares two server configurations from a target's context menu: one yes naming the flag, the table above the user's Notes, each run named, none left running", async () => {
    // A note of the user's at the end of the findings document (its Notes section), typed and saved in its editor.
    const file = join(workspace, findingsName());
    await wb.page
      .getByRole('tab', { name: new RegExp(`^${escapeRegExp(findingsName())}`) })
      .first()
      .click();
    await wb.page.locator('.editor-group-container').first().locator('.monaco-editor textarea').first().focus();
    await wb.page.keyboard.press('Control+End');
    await wb.page.keyboard.type('\nOur own note: try TP 4 next.\n');
    await wb.page.keyboard.press('Control+S');
    await poll('the notes saved', async () => (readFileSync(file, 'utf8').includes('Our own note: try TP 4 next.') ? true : undefined));
    // The server the Run All step put back, as its user started it: compared as it runs and with a slower step.
    const { port, original } = noProfiler!;
    // The process serving now is the one the Run All step put back (a new pid, the user's command line).
    const serving = listening(port)!;
    await targetRow(NO_PROFILER).click({ button: 'right' });
    await wb.chooseMenuItem('Compare Server Configurations...');
    await wb.answer(/configuration 1$/, 'as-running:');
    await wb.answer(/configuration 2$/, 'slower: --step-base-ms 15');
    await wb.answer(/configuration 3$/, '');
    await wb.answer(new RegExp(`^Run Macro Phase on ${NO_PROFILER}$`), 'Single stream only');
    const dialog = wb.page.locator('.monaco-dialog-box').filter({ hasText: /configurations/i });
    await dialog.waitFor({ timeout: 120_000 });
    const consent = await dialog.innerText();
    await wb.screenshot('live-configs-consent');
    // One yes for every start, the user's server named by its pid and the flag the other configuration sets named.
    assert.ok(consent.includes(`pid ${serving.pid}`), `the consent does not name pid ${serving.pid}: ${consent}`);
    assert.match(consent, /slower sets --step-base-ms 15 \(was 5\)/, consent);
    await dialog.getByRole('button', { name: 'Restart the Server' }).focus();
    await wb.page.keyboard.press('Enter');
    await wb.page.locator('.notification-toast', { hasText: new RegExp(`2 of 2 configurations measured on ${NO_PROFILER}`) }).waitFor({ timeout: 240_000 });
    await wb.screenshot('live-configs-finished');
    // The original command line serves the port again.
    const after = await poll('the original server back', async () => listening(port), 60_000);
    assert.deepEqual(after.argv, original.argv);
    // The table sits in the serving section, above the user's Notes, which end the document as they did.
    const text = await poll('the comparison in the findings document', async () => {
      const t = readFileSync(file, 'utf8');
      return /Server configurations compared/.test(t) ? t : undefined;
    });
    assert.ok(text.indexOf('Server configurations compared') < text.indexOf('## Notes'), "the table was written under the user's Notes");
    assert.match(text, /\nOur own note: try TP 4 next\.\n*$/, 'the note no longer ends the document');
    // Each configuration's run is named in the results view, and no row of the sidebar is left "running".
    const view = await webviewFrame(wb.page, 'Inference Bench Results');
    for (const name of ['as-running', 'slower'])
      await view
        .locator('#run-select option', { hasText: new RegExp(`^macro · ${NO_PROFILER} .*${name}`) })
        .first()
        .waitFor({ state: 'attached', timeout: 30_000 });
    await targetRow(NO_PROFILER).click();
    await wb.page.keyboard.press('ArrowRight');
    await wb.page
      .getByRole('treeitem', { name: /^Macro/ })
      .first()
      .waitFor();
    await new Promise((r) => setTimeout(r, 2_000));
    assert.equal(await wb.page.getByRole('treeitem', { name: /· running/ }).count(), 0, 'a run of the comparison is still "running" in the sidebar');
  });
});
