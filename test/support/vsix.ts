// Packs the extension with @vscode/vsce and lists what a VSIX holds (a zip: read its central directory).
import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from './codeServer';

/**
 * The VSIX a user installs: what `npm run package` makes (a minified production build, packed by
 * vsce), staged beside `out` so that dist/ and the working tree stay as they are while others use them.
 */
export async function packageVsix(out: string): Promise<{ path: string; bytes: number }> {
  mkdirSync(dirname(out), { recursive: true });
  const stage = join(dirname(out), 'vsix-stage');
  rmSync(stage, { recursive: true, force: true });
  mkdirSync(stage, { recursive: true });
  const exec = promisify(execFile);
  await exec(process.execPath, ['esbuild.mjs', '--production', `--outdir=${join(stage, 'dist')}`], { cwd: repoRoot, timeout: 120_000 });
  // What .vscodeignore lets through besides dist/ (its allow-list, each pattern's folder before any
  // glob), and the file itself, so that vsce applies the same list to the stage.
  const allowed = readFileSync(join(repoRoot, '.vscodeignore'), 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('!') && !line.startsWith('!dist/'))
    .map((line) => line.slice(1).split('/*')[0]);
  for (const path of new Set(['.vscodeignore', ...allowed])) cpSync(join(repoRoot, path), join(stage, path), { recursive: true });
  const vsce = join(repoRoot, 'node_modules', '@vscode', 'vsce', 'vsce');
  await exec(process.execPath, [vsce, 'package', '--no-dependencies', '--no-rewrite-relative-links', '--out', out], {
    cwd: stage,
    timeout: 120_000,
  }).catch((err: { stdout?: string; stderr?: string; message: string }) => {
    throw new Error(`vsce package failed: ${err.message}\n${err.stdout ?? ''}${err.stderr ?? ''}\nRun \`npm run package\` to see the same error.`);
  });
  return { path: out, bytes: statSync(out).size };
}

/** The names of the entries in a zip file (a VSIX), from its central directory. */
export function zipEntries(file: string): string[] {
  const buf = readFileSync(file);
  // The end-of-central-directory record sits in the last 64 KiB + 22 bytes.
  let eocd = -1;
  for (let i = buf.length - 22; i >= Math.max(0, buf.length - 65_557); i--) {
    if (buf.readUInt32LE(i) === 0x06054b50) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) throw new Error(`${file} is not a zip file (no end-of-central-directory record)`);
  const count = buf.readUInt16LE(eocd + 10);
  let at = buf.readUInt32LE(eocd + 16);
  const names: string[] = [];
  for (let n = 0; n < count; n++) {
    if (buf.readUInt32LE(at) !== 0x02014b50) throw new Error(`${file}: central directory entry ${n} is damaged`);
    const nameLength = buf.readUInt16LE(at + 28);
    const extraLength = buf.readUInt16LE(at + 30);
    const commentLength = buf.readUInt16LE(at + 32);
    names.push(buf.toString('utf8', at + 46, at + 46 + nameLength));
    at += 46 + nameLength + extraLength + commentLength;
  }
  return names;
}
