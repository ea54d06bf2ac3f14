// The packaged extension: VSIX size and what it holds, and the extension's activation time in a
// real VS Code (code-server 4.100.3), read from the "activated in N ms" line it logs, plus the
// time from clicking its activity-bar icon to its welcome view showing.
// Run: npx tsx bench/extension-package.ts [--skip-build] [--runs N] [--idle-ms MS]
//   --skip-build packs the current dist/ instead of running `npm run package` (which rebuilds it minified);
//   --idle-ms waits that long after the workbench shows before the click, so that code-server's
//   extension host has started and the figure is the extension's own (activation and first render).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { installExtension, launchChromium, makeCodeServerDirs, removeDirs, repoRoot, startCodeServer } from '../test/support/codeServer';
import { packageVsix, zipEntries } from '../test/support/vsix';
import { Workbench } from '../test/ui/workbench';

const args = process.argv.slice(2);
const runs = Number(args[args.indexOf('--runs') + 1]) || 5;
const skipBuild = args.includes('--skip-build');
const idleMs = args.includes('--idle-ms') ? Number(args[args.indexOf('--idle-ms') + 1]) : 0;

async function main(): Promise<void> {
  let vsix = join(repoRoot, 'inference-bench.vsix');
  if (skipBuild) vsix = (await packageVsix(join(repoRoot, 'test-output', 'bench', 'inference-bench.vsix'))).path;
  else execFileSync('npm', ['run', '-s', 'package'], { cwd: repoRoot, stdio: ['ignore', 'ignore', 'inherit'] });
  const entries = zipEntries(vsix);
  console.log(`VSIX: ${(statSync(vsix).size / 1024).toFixed(0)} KiB, ${entries.length} entries (${skipBuild ? 'current dist/' : 'npm run package, minified'})`);
  for (const f of ['extension.js', 'webview.js', 'traceWorker.js', 'agent.pyz']) {
    const p = join(repoRoot, 'dist', f);
    if (existsSync(p)) console.log(`  dist/${f}: ${(statSync(p).size / 1024).toFixed(0)} KiB`);
  }

  const activation: number[] = [];
  const toWelcome: number[] = [];
  for (let i = 0; i < runs; i++) {
    const dirs = makeCodeServerDirs('infbench-bench-');
    const workspace = join(dirs.root, 'workspace');
    mkdirSync(workspace);
    await installExtension(vsix, dirs);
    const server = await startCodeServer({ folder: workspace, dirs });
    const browser = await launchChromium();
    try {
      const wb = new Workbench(await browser.context.newPage());
      await wb.open(server.folderUrl(workspace));
      if (idleMs) await wb.page.waitForTimeout(idleMs);
      const t0 = Date.now();
      await wb.activityBarItem('Inference Bench').click();
      await wb.page.getByText('No inference server configured yet.').waitFor();
      toWelcome.push(Date.now() - t0);
      activation.push(await activationMs(join(dirs.userDataDir, 'logs')));
    } finally {
      await browser.close();
      await server.stop();
      removeDirs(dirs);
    }
  }
  const stats = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    return `median ${s[Math.floor(s.length / 2)]} ms (min ${s[0]}, max ${s[s.length - 1]}, ${s.length} runs)`;
  };
  console.log(`activate() as the extension logs it: ${stats(activation)}`);
  console.log(
    `click on the activity-bar icon ${idleMs ? `${idleMs} ms after` : 'as soon as'} the workbench shows, to the welcome view shown: ${stats(toWelcome)}`,
  );
}

async function activationMs(logs: string): Promise<number> {
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    const file = (readdirSync(logs, { recursive: true }) as string[]).find((f) => f.endsWith('Inference Bench.log'));
    const m = file && /activated in (\d+) ms/.exec(readFileSync(join(logs, file), 'utf8'));
    if (m) return Number(m[1]);
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`no "activated in N ms" line in an "Inference Bench.log" under ${logs}`);
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
