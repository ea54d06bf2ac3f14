// `npm test`: every test layer, in order, then one line `N passed, N failed` totalled over all of them.
// Layers: static checks (lint, types, format; the Python side's flake8, mypy and black, Debian's, as
// configured in setup.cfg and pyproject.toml), unit (mocha, plain Node), agent (Python unittest),
// fuzz (seeded hostile sweeps, each printing its counts), integration (mocha: a real sshd, the simulator,
// the CLI), extension (mocha inside code-server), ui (playwright-core + Chromium driving code-server).
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

const only = process.argv.slice(2);
// flake8 and mypy come from Debian (python3-flake8, python3-mypy), so they run under Debian's Python.
const DEBIAN_PYTHON = '/usr/bin/python3';
const out = 'test-output';
mkdirSync(out, { recursive: true });

const run = (cmd, args, env = {}) => spawnSync(cmd, args, { stdio: 'inherit', env: { ...process.env, ...env } }).status ?? 1;

if (!process.env.INFBENCH_SKIP_SETUP && run('bash', ['scripts/setup-test-env.sh']) !== 0) {
  console.error('test setup failed: see the messages above');
  process.exit(1);
}
if (run('node', ['esbuild.mjs']) !== 0) process.exit(1);

const layers = [
  { name: 'lint', check: ['npx', ['eslint', '.']] },
  { name: 'typecheck', check: ['npm', ['run', '-s', 'typecheck']] },
  // One layout for the whole repository: prettier for TypeScript, JavaScript and CSS, black (Debian's) for Python.
  { name: 'format', check: ['npx', ['prettier', '--check', '--log-level', 'warn', '.']] },
  { name: 'agent-format', check: [DEBIAN_PYTHON, ['-m', 'black', '--check', '-q', 'agent', 'simulator', 'scripts', 'test/python', 'bench']] },
  { name: 'agent-lint', check: [DEBIAN_PYTHON, ['-m', 'flake8', 'agent', 'simulator', 'scripts', 'test/python', 'bench']] },
  { name: 'agent-typecheck', check: [DEBIAN_PYTHON, ['-m', 'mypy']] },
  { name: 'unit', mocha: ['npx', ['mocha', '--config', 'test/unit/.mocharc.json']] },
  { name: 'agent', mocha: ['python3', ['test/python/run.py']] },
  // Seeded sweeps a hostile tester ran by hand: mutated traces, hostile servers, editors racing the tool.
  { name: 'fuzz', mocha: ['npx', ['mocha', '--config', 'test/fuzz/.mocharc.json']] },
  { name: 'integration', mocha: ['npx', ['mocha', '--config', 'test/integration/.mocharc.json']] },
  { name: 'extension', mocha: ['node', ['test/extension/runTests.js']] },
  { name: 'ui', mocha: ['node', ['test/ui/run.js']] },
];

const totals = { passed: 0, failed: 0 };
const lines = [];
for (const layer of layers) {
  if (only.length && !only.includes(layer.name)) continue;
  console.log(`\n=== ${layer.name} ===`);
  if (layer.check) {
    const ok = run(...layer.check) === 0;
    totals[ok ? 'passed' : 'failed'] += 1;
    lines.push(`${layer.name}: ${ok ? 'passed' : 'FAILED'}`);
    continue;
  }
  const summaryFile = join(out, `${layer.name}-summary.json`);
  rmSync(summaryFile, { force: true });
  const status = run(...layer.mocha, { INFBENCH_SUMMARY_FILE: join(process.cwd(), summaryFile) });
  let s = { passed: 0, failed: 0 };
  try {
    s = JSON.parse(readFileSync(summaryFile, 'utf8'));
  } catch {
    // The layer died before its runner could report: count it as one failure.
    s = { passed: 0, failed: 1 };
  }
  if (status !== 0 && s.failed === 0) s.failed = 1;
  totals.passed += s.passed;
  totals.failed += s.failed;
  lines.push(`${layer.name}: ${s.passed} passed, ${s.failed} failed`);
}
console.log('\n=== summary ===');
for (const l of lines) console.log(l);
console.log(`${totals.passed} passed, ${totals.failed} failed`);
process.exit(totals.failed ? 1 : 0);
