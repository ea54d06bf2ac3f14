#!/usr/bin/env node
// The CLI is bundled into dist/cli.js by `npm run build`.
const path = require('node:path');
const fs = require('node:fs');

const bundle = path.join(__dirname, '..', 'dist', 'cli.js');
if (!fs.existsSync(bundle)) {
  process.stderr.write('infbench: the CLI is not built yet. Run `npm install && npm run build` in the repository first.\n');
  process.exit(2);
}
const { main } = require(bundle);
main(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
