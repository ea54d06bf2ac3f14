#!/usr/bin/env node
// The CLI is bundled into dist/cli.js by `npm run build`.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { main } = require('../dist/cli.js');
main(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
