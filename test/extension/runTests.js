// Extension tests: mocha inside a real VS Code extension host, started through
// @vscode/test-electron's runTests. Where desktop VS Code can be downloaded, set
// INFBENCH_DESKTOP_VSCODE=1 and runTests fetches it; otherwise (the default) its executable is
// codeServerShim.js, which runs the same tests in code-server driven by headless Chromium.
const { spawnSync } = require('node:child_process');
const { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join, relative, resolve } = require('node:path');

const repoRoot = resolve(__dirname, '..', '..');
// One folder per run: others may run these tests from the same working tree at the same time.
const outDir = join(repoRoot, 'out', `extension-tests-${process.pid}`);
// Logs of this run (mocha's report, code-server, the workbench console); kept only when it fails.
const logDir = join(repoRoot, 'test-output', 'extension', `run-${process.pid}`);

async function main() {
  if (!existsSync(join(repoRoot, 'dist', 'extension.js'))) {
    const built = spawnSync(process.execPath, ['esbuild.mjs'], { cwd: repoRoot, stdio: 'inherit' });
    if (built.status !== 0) throw new Error('`node esbuild.mjs` failed: the extension must be built before its tests run');
  }
  await bundleTests();

  mkdirSync(logDir, { recursive: true });
  const testLog = join(logDir, 'mocha.log');
  rmSync(testLog, { force: true });
  const env = {
    INFBENCH_SUMMARY_FILE: process.env.INFBENCH_SUMMARY_FILE ? resolve(process.env.INFBENCH_SUMMARY_FILE) : join(logDir, 'summary.json'),
    INFBENCH_EXTENSION_TEST_LOG: testLog,
    INFBENCH_EXTENSION_LOG_DIR: logDir,
    // Only the tests whose full title matches (mocha's --grep), for working on one suite.
    ...(process.env.INFBENCH_EXTENSION_GREP ? { INFBENCH_EXTENSION_GREP: process.env.INFBENCH_EXTENSION_GREP } : {}),
  };
  // The extension host may not inherit our environment (desktop VS Code strips some, code-server
  // starts it from its server process): the test index reads the same values from this file.
  writeFileSync(join(outDir, 'env.json'), JSON.stringify(env, null, 2));

  // A scratch copy of the fixture workspace: the tests write settings and a findings document into it.
  const workspace = mkdtempSync(join(tmpdir(), 'infbench-ext-workspace-'));
  cpSync(join(repoRoot, 'test', 'fixtures', 'runs', 'workspace'), workspace, { recursive: true });

  const { runTests } = require('@vscode/test-electron');
  const desktop = process.env.INFBENCH_DESKTOP_VSCODE === '1';
  try {
    await runTests({
      vscodeExecutablePath: desktop ? undefined : join(__dirname, 'codeServerShim.js'),
      extensionDevelopmentPath: repoRoot,
      extensionTestsPath: join(outDir, 'index.js'),
      launchArgs: [workspace, '--disable-extensions'],
      extensionTestsEnv: env,
      // The shim makes its own scratch profile; desktop VS Code gets runTests' default one.
      reuseMachineInstall: !desktop,
    });
    rmSync(logDir, { recursive: true, force: true });
    return 0;
  } catch (err) {
    console.error(`extension tests: ${err instanceof Error ? err.message : String(err)}`);
    if (!existsSync(env.INFBENCH_SUMMARY_FILE)) console.error('no test counts were written: the tests did not start or did not finish.');
    console.error(`logs of this run (mocha, code-server, the workbench console): ${relative(repoRoot, logDir)}`);
    return 1;
  } finally {
    rmSync(workspace, { recursive: true, force: true });
    rmSync(outDir, { recursive: true, force: true });
  }
}

/** Bundles the mocha index and every suite/**\/*.test.ts, so that adding a suite file is enough. */
async function bundleTests() {
  const esbuild = require('esbuild');
  const suiteDir = join(__dirname, 'suite');
  const suites = readdirSync(suiteDir, { recursive: true }).filter((f) => f.endsWith('.test.ts'));
  const entryPoints = { index: join(__dirname, 'index.ts') };
  for (const f of suites) entryPoints[join('suite', f.replace(/\.ts$/, ''))] = join(suiteDir, f);
  await esbuild.build({
    entryPoints,
    outdir: outDir,
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    sourcemap: 'inline',
    // vscode comes from the extension host; mocha stays one shared instance for the index and the reporter.
    // ssh2's optional native bindings are left out as in esbuild.mjs: it falls back to pure JS.
    external: ['vscode', 'mocha', 'cpu-features', './crypto/build/Release/sshcrypto.node'],
    logLevel: 'warning',
  });
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(`extension tests could not start: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
