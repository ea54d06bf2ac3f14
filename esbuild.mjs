// One entry per bundle: the extension host, the CLI, the trace-analysis worker (Node) and the webview app (browser).
import * as esbuild from 'esbuild';

const watch = process.argv.includes('--watch');
const production = process.argv.includes('--production');
// --outdir=DIR builds elsewhere than dist/ (the UI tests pack a production VSIX without touching dist/).
const outdir = process.argv.find((a) => a.startsWith('--outdir='))?.slice('--outdir='.length) ?? 'dist';

const node = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  sourcemap: !production,
  minify: production,
  // ssh2 tries to load optional native bindings; leaving them out makes it fall back to pure JS.
  external: ['vscode', 'cpu-features', './crypto/build/Release/sshcrypto.node'],
  logLevel: 'warning',
};

const bundles = [
  { ...node, entryPoints: { extension: 'src/vscode/extension.ts' }, outdir },
  { ...node, entryPoints: { cli: 'src/cli/main.ts' }, outdir },
  // Trace analysis runs in a worker thread, bundled on its own.
  { ...node, entryPoints: { traceWorker: 'src/core/trace/worker.ts' }, outdir },
  {
    bundle: true,
    platform: 'browser',
    target: 'es2022',
    format: 'iife',
    sourcemap: !production,
    minify: production,
    entryPoints: { webview: 'webview-ui/src/main.ts' },
    outdir,
    logLevel: 'warning',
  },
];

if (watch) {
  for (const b of bundles) await (await esbuild.context(b)).watch();
} else {
  await Promise.all(bundles.map((b) => esbuild.build(b)));
}

// The remote agent travels as one zipapp, named on the host by its content hash.
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
mkdirSync(outdir, { recursive: true });
execFileSync(
  'python3',
  [
    '-c',
    [
      'import zipapp, sys',
      "zipapp.create_archive('agent', sys.argv[1], filter=lambda p: not any(part == '__pycache__' or part.startswith('.') for part in p.parts) and p.suffix != '.pyc')",
    ].join('\n'),
    `${outdir}/agent.pyz`,
  ],
  { stdio: 'inherit' },
);

// The codicon font travels with the extension so that the webview loads it through asWebviewUri.
import { cpSync } from 'node:fs';
mkdirSync('media/codicons', { recursive: true });
for (const f of ['codicon.css', 'codicon.ttf']) cpSync(`node_modules/@vscode/codicons/dist/${f}`, `media/codicons/${f}`);
