#!/usr/bin/env node
// Stands in for the VS Code executable that @vscode/test-electron's runTests launches, on machines
// where desktop VS Code cannot be downloaded: it takes the same arguments, starts code-server, opens
// the folder in headless Chromium with the extension-development/extension-tests payload, and exits
// with the code the test runner passes to `codeAutomationExit`.
require('tsx/cjs');
const { closeSync, createWriteStream, existsSync, mkdirSync, openSync, readSync } = require('node:fs');
const { join, resolve } = require('node:path');
const { launchChromium, makeCodeServerDirs, removeDirs, repoRoot, startCodeServer } = require('../support/codeServer.ts');

/** Options as VS Code's CLI spells them (`--name=value` or `--name value`), plus the folder to open. */
function parseArgs(argv) {
  const opts = { developmentPaths: [], folder: undefined };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith('--')) {
      opts.folder = resolve(a);
      continue;
    }
    const eq = a.indexOf('=');
    const name = eq > 0 ? a.slice(2, eq) : a.slice(2);
    const takesValue = ['extensionTestsPath', 'extensionDevelopmentPath', 'user-data-dir', 'extensions-dir'].includes(name);
    const value = eq > 0 ? a.slice(eq + 1) : takesValue ? argv[++i] : undefined;
    if (name === 'extensionTestsPath') opts.testsPath = resolve(value);
    else if (name === 'extensionDevelopmentPath') opts.developmentPaths.push(resolve(value));
    else if (name === 'user-data-dir') opts.userDataDir = resolve(value);
    else if (name === 'extensions-dir') opts.extensionsDir = resolve(value);
    // The rest (--no-sandbox, --disable-updates, ...) are desktop-only and mean nothing here.
  }
  return opts;
}

/** Copies what the test index appends to its log onto our stdout while the tests run. */
function tailFile(file) {
  let offset = 0;
  const pump = () => {
    if (!file || !existsSync(file)) return;
    const fd = openSync(file, 'r');
    try {
      const buf = Buffer.alloc(64 * 1024);
      for (let n; (n = readSync(fd, buf, 0, buf.length, offset)) > 0; offset += n) process.stdout.write(buf.subarray(0, n));
    } finally {
      closeSync(fd);
    }
  };
  const timer = setInterval(pump, 200);
  return { stop: () => (clearInterval(timer), pump()) };
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  if (!opts.testsPath || !opts.developmentPaths.length) {
    console.error('codeServerShim: expected --extensionTestsPath and --extensionDevelopmentPath, as runTests passes them.');
    return 2;
  }
  const timeoutMs = Number(process.env.INFBENCH_EXTENSION_TESTS_TIMEOUT_MS ?? 300_000);
  const dirs = makeCodeServerDirs('infbench-ext-tests-', { userDataDir: opts.userDataDir, extensionsDir: opts.extensionsDir });
  const folder = opts.folder ?? join(dirs.root, 'workspace');
  mkdirSync(folder, { recursive: true });
  const logDir = process.env.INFBENCH_EXTENSION_LOG_DIR ?? join(repoRoot, 'test-output', 'extension');
  mkdirSync(logDir, { recursive: true });

  let server;
  let browser;
  const cleanup = async () => {
    await browser?.close();
    await server?.stop();
    removeDirs(dirs);
  };
  const onSignal = () => cleanup().finally(() => process.exit(130));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  try {
    server = await startCodeServer({ folder, dirs, logFile: join(logDir, 'code-server.log') });
    browser = await launchChromium();
    const page = await browser.context.newPage();
    let finish;
    const exitCode = new Promise((ok) => (finish = ok));
    // VS Code's test runner calls this with the tests' exit code.
    await page.exposeFunction('codeAutomationExit', (code) => finish(Number(code)));
    page.once('crash', () => {
      console.error('codeServerShim: the browser tab running VS Code crashed before the tests finished.');
      finish(1);
    });
    // The workbench's console (with its %s placeholders unfilled) is kept in a file for diagnosis;
    // it is noisy (offline gallery lookups, 404s for optional files) and the verdict is the exit code.
    const consoleLog = createWriteStream(join(logDir, 'workbench-console.log'));
    page.on('console', (m) => consoleLog.write(`[${m.type()}] ${m.text()}\n`));
    page.on('pageerror', (e) => consoleLog.write(`[pageerror] ${e.stack ?? e.message}\n`));
    const payload = [
      ...opts.developmentPaths.map((p) => ['extensionDevelopmentPath', server.remoteUri(p)]),
      ['extensionTestsPath', server.remoteUri(opts.testsPath)],
    ];
    await page.goto(server.folderUrl(folder, payload));
    let timer;
    const timedOut = new Promise((ok) => {
      timer = setTimeout(() => {
        console.error(
          `codeServerShim: the extension tests did not finish within ${timeoutMs / 1000} s; see code-server.log and workbench-console.log in ${logDir}.`,
        );
        ok(1);
      }, timeoutMs);
    });
    const tail = tailFile(process.env.INFBENCH_EXTENSION_TEST_LOG);
    const code = await Promise.race([exitCode, timedOut]);
    clearTimeout(timer);
    tail.stop();
    return code;
  } catch (err) {
    console.error(`codeServerShim: ${err instanceof Error ? err.message : String(err)}`);
    return 1;
  } finally {
    await cleanup();
  }
}

if (!existsSync(join(repoRoot, 'node_modules', 'playwright-core'))) {
  console.error('codeServerShim: playwright-core is missing; run `npm ci` (with PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1).');
  process.exit(1);
}
main().then((code) => process.exit(code));
