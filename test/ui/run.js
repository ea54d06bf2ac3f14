// UI tests: mocha (in plain Node) drives headless Chromium through playwright-core against
// code-server with the packaged extension installed. Counts go to INFBENCH_SUMMARY_FILE.
require('tsx/cjs');
const Mocha = require('mocha');
const { readdirSync } = require('node:fs');
const { join } = require('node:path');

const mocha = new Mocha({ ui: 'bdd', timeout: 60_000, reporter: join(__dirname, '..', 'support', 'summaryReporter.js') });
for (const f of readdirSync(__dirname, { recursive: true })
  .filter((f) => f.endsWith('.test.ts'))
  .sort())
  mocha.addFile(join(__dirname, f));
mocha.run((failures) => process.exit(failures ? 1 : 0));
