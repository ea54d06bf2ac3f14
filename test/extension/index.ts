// Runs inside the extension host (VS Code's `extensionTestsPath` module): mocha over every
// suite/**/*.test.ts, bundled by runTests.js into out/extension-tests-<pid>/. Adding a file is enough.
import { appendFileSync, existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { format } from 'node:util';
import Mocha from 'mocha';

/** Written by runTests.js: the extension host may not inherit the runner's environment. */
interface RunnerEnv {
  INFBENCH_SUMMARY_FILE?: string;
  INFBENCH_EXTENSION_TEST_LOG?: string;
  INFBENCH_FIXTURE_WORKSPACE?: string;
  INFBENCH_EXTENSION_GREP?: string;
}

// The activation suite must see the extension before anything else touches it.
const FIRST = 'activation.test.js';

export function run(): Promise<void> {
  const envFile = join(__dirname, 'env.json');
  if (existsSync(envFile)) {
    const env = JSON.parse(readFileSync(envFile, 'utf8')) as RunnerEnv;
    for (const [k, v] of Object.entries(env)) if (v && !process.env[k]) process.env[k] = v;
  }
  // The extension host's console reaches the runner only as unformatted browser console lines:
  // mocha's report goes to a file that the runner prints as it grows.
  const logFile = process.env.INFBENCH_EXTENSION_TEST_LOG;
  if (logFile) Mocha.reporters.Base.consoleLog = (...args: unknown[]) => appendFileSync(logFile, `${format(...args)}\n`);

  const repoRoot = resolve(__dirname, '..', '..');
  const grep = process.env.INFBENCH_EXTENSION_GREP;
  const mocha = new Mocha({
    ui: 'bdd',
    color: false,
    timeout: 30_000,
    reporter: join(repoRoot, 'test', 'support', 'summaryReporter.js'),
    ...(grep ? { grep } : {}),
  });
  const suiteDir = join(__dirname, 'suite');
  const files = (readdirSync(suiteDir, { recursive: true }) as string[])
    .filter((f) => f.endsWith('.test.js'))
    .sort((a, b) => Number(b === FIRST) - Number(a === FIRST) || a.localeCompare(b));
  for (const f of files) mocha.addFile(join(suiteDir, f));

  return new Promise((ok, fail) => {
    mocha.run((failures) => (failures ? fail(new Error(`${failures} extension test(s) failed`)) : ok()));
  });
}
