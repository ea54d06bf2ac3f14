/* global window */
// The results webview's page without VS Code, for the webview benchmarks: the page's own bundle
// (dist/webview.js) and stylesheet in headless Chromium, with a stub acquireVsCodeApi that keeps what
// the view posts (window.__posted). `send` posts a host message to the view.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium } from 'playwright-core';

const repo = resolve(import.meta.dirname, '..');

export async function openResultsPage() {
  const scratch = mkdtempSync(join(tmpdir(), 'infbench-bench-'));
  writeFileSync(
    join(scratch, 'index.html'),
    `<!DOCTYPE html><html><head>
<link rel="stylesheet" href="${join(repo, 'media', 'webview.css')}">
<script>window.__posted = []; window.acquireVsCodeApi = () => ({ postMessage: (m) => window.__posted.push(m), getState: () => undefined, setState: () => {} });</script>
</head><body class="vscode-dark" data-view="results"><div id="app"></div>
<script src="${join(repo, 'dist', 'webview.js')}"></script></body></html>`,
  );
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', args: ['--headless', '--no-sandbox', '--disable-gpu'] });
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  await page.goto(`file://${join(scratch, 'index.html')}`);
  return {
    page,
    send: (message) => page.evaluate((m) => window.postMessage(m, '*'), message),
    /** Says what the view reported as errors, then closes the browser and removes the page. */
    async close() {
      try {
        const errors = await page.evaluate(() => window.__posted.filter((m) => m.type === 'error'));
        if (errors.length) console.error(`the view reported errors: ${JSON.stringify(errors)}`);
      } finally {
        await browser.close();
        rmSync(scratch, { recursive: true, force: true });
      }
    },
  };
}
