// `npm run demo`: installs what is missing, builds, and runs the demo campaign against the bundled
// simulator over the local transport. Leaves the findings document and the run folders in demo-campaign/.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const run = (cmd, args, env = {}) => {
  const status = spawnSync(cmd, args, { stdio: 'inherit', env: { ...process.env, ...env } }).status ?? 1;
  if (status !== 0) process.exit(status);
};

if (!existsSync('node_modules/.package-lock.json')) run('npm', ['ci', '--no-audit', '--no-fund'], { PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD: '1' });
run('node', ['esbuild.mjs']);
run('node', ['bin/infbench.js', 'demo', '--workspace', 'demo-campaign', ...process.argv.slice(2)]);
