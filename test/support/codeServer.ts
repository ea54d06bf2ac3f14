// A real VS Code for tests: code-server 4.100.3 (VS Code 1.100) started on 127.0.0.1 with scratch
// HOME / user-data / extensions folders, and Debian's Chromium driven through playwright-core.
// Desktop VS Code cannot be downloaded on every machine; code-server runs the same extension host.
// Every process started here is stopped by its process group, never by name.
import { ChildProcess, execFile, spawn } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import type { BrowserContext } from 'playwright-core';

export const repoRoot = resolve(__dirname, '..', '..');

/** code-server as scripts/setup-test-env.sh installs it, or the one named by INFBENCH_CODE_SERVER. */
export function codeServerBinary(): string {
  const bin = process.env.INFBENCH_CODE_SERVER ?? join(repoRoot, '.cache', 'code-server', 'node_modules', '.bin', 'code-server');
  if (!existsSync(bin)) {
    throw new Error(
      `code-server not found at ${bin}: run \`bash scripts/setup-test-env.sh\` (it installs code-server 4.100.3 into .cache/code-server), or set INFBENCH_CODE_SERVER to a code-server 4.100.x executable.`,
    );
  }
  return bin;
}

export function chromiumBinary(): string {
  const bin = process.env.INFBENCH_CHROMIUM ?? '/usr/bin/chromium';
  if (!existsSync(bin))
    throw new Error(`Chromium not found at ${bin}: run \`bash scripts/setup-test-env.sh\` (it installs Debian's chromium), or set INFBENCH_CHROMIUM.`);
  return bin;
}

/** Scratch folders for one code-server: HOME (it writes a config with a password there), user data, extensions. */
export interface CodeServerDirs {
  root: string;
  home: string;
  userDataDir: string;
  extensionsDir: string;
}

export function makeCodeServerDirs(prefix = 'infbench-code-server-', given: Partial<CodeServerDirs> = {}): CodeServerDirs {
  const root = given.root ?? mkdtempSync(join(tmpdir(), prefix));
  const dirs: CodeServerDirs = {
    root,
    home: given.home ?? join(root, 'home'),
    userDataDir: given.userDataDir ?? join(root, 'user-data'),
    extensionsDir: given.extensionsDir ?? join(root, 'extensions'),
  };
  for (const d of [dirs.home, dirs.userDataDir, dirs.extensionsDir]) mkdirSync(d, { recursive: true });
  return dirs;
}

/** User settings that make code-server start quiet and quick: no welcome page, no gallery lookups. */
export const quietSettings: Record<string, unknown> = {
  'workbench.startupEditor': 'none',
  'workbench.tips.enabled': false,
  'workbench.enableExperiments': false,
  'extensions.autoCheckUpdates': false,
  'extensions.autoUpdate': false,
  'extensions.ignoreRecommendations': true,
  'telemetry.telemetryLevel': 'off',
  'update.mode': 'none',
  'security.workspace.trust.enabled': false,
  'git.enabled': false,
  'chat.commandCenter.enabled': false,
  'window.commandCenter': false,
};

function scratchEnv(dirs: CodeServerDirs, extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    HOME: dirs.home,
    XDG_CONFIG_HOME: join(dirs.home, '.config'),
    XDG_DATA_HOME: join(dirs.home, '.local', 'share'),
    XDG_CACHE_HOME: join(dirs.home, '.cache'),
    XDG_RUNTIME_DIR: undefined,
    // code-server would otherwise reuse a password from the caller's environment
    PASSWORD: undefined,
    HASHED_PASSWORD: undefined,
    ...extra,
  };
}

/** `code-server --install-extension <vsix>` into the given folders; rejects with its output when it fails. */
export async function installExtension(vsix: string, dirs: CodeServerDirs): Promise<string> {
  const { stdout, stderr } = await promisify(execFile)(
    codeServerBinary(),
    ['--user-data-dir', dirs.userDataDir, '--extensions-dir', dirs.extensionsDir, '--install-extension', vsix],
    { env: scratchEnv(dirs), timeout: 120_000 },
  ).catch((err: { stdout?: string; stderr?: string; message: string }) => {
    throw new Error(`code-server --install-extension ${vsix} failed: ${err.message}\n${err.stdout ?? ''}${err.stderr ?? ''}`);
  });
  const out = `${stdout}${stderr}`;
  if (!/successfully installed/i.test(out)) throw new Error(`code-server did not confirm installing ${vsix}:\n${out}`);
  return out;
}

export interface CodeServerOptions {
  /** The folder to open; tests pass it in the URL too. */
  folder?: string;
  dirs?: CodeServerDirs;
  /** Merged over quietSettings into the user settings.json. */
  settings?: Record<string, unknown>;
  /** Extra environment for the server and so for its extension host. */
  env?: Record<string, string | undefined>;
  /** code-server's own output goes here (it is long and rarely needed). */
  logFile?: string;
}

export interface CodeServer {
  url: string;
  port: number;
  pid: number;
  dirs: CodeServerDirs;
  /** The URL that opens a folder, with an optional `payload` (extension development/test paths). */
  folderUrl(folder: string, payload?: [string, string][]): string;
  /** A `vscode-remote://` URI for a path on this server, the form `payload` entries take. */
  remoteUri(path: string): string;
  stop(): Promise<void>;
}

export async function startCodeServer(options: CodeServerOptions = {}): Promise<CodeServer> {
  const dirs = options.dirs ?? makeCodeServerDirs();
  mkdirSync(join(dirs.userDataDir, 'User'), { recursive: true });
  writeFileSync(join(dirs.userDataDir, 'User', 'settings.json'), JSON.stringify({ ...quietSettings, ...options.settings }, null, 2));
  const args = [
    '--bind-addr',
    '127.0.0.1:0',
    '--auth',
    'none',
    '--disable-telemetry',
    '--disable-update-check',
    '--disable-workspace-trust',
    '--disable-getting-started-override',
    '--user-data-dir',
    dirs.userDataDir,
    '--extensions-dir',
    dirs.extensionsDir,
  ];
  if (options.folder) args.push(options.folder);
  // detached: its own process group, so stop() ends the server and every child it started.
  const child = spawn(codeServerBinary(), args, { env: scratchEnv(dirs, options.env), detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const log = createWriteStream(options.logFile ?? join(dirs.root, 'code-server.log'));
  child.stdout!.pipe(log);
  child.stderr!.pipe(log);

  const port = await new Promise<number>((ok, fail) => {
    let seen = '';
    const timer = setTimeout(() => fail(new Error(`code-server did not start listening within 60 s; its output:\n${seen}`)), 60_000);
    const onData = (chunk: Buffer) => {
      seen += chunk.toString();
      const m = /HTTP server listening on https?:\/\/[^:]+:(\d+)/.exec(seen);
      if (m) {
        clearTimeout(timer);
        ok(Number(m[1]));
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      fail(new Error(`code-server exited before it listened (code ${code ?? signal}); its output:\n${seen}`));
    });
  }).catch(async (err) => {
    await stopProcessGroup(child);
    throw err;
  });

  const url = `http://127.0.0.1:${port}`;
  await waitForHealth(url);
  const host = `127.0.0.1:${port}`;
  const remoteUri = (path: string) => `vscode-remote://${host}${path.split('/').map(encodeURIComponent).join('/')}`;
  return {
    url,
    port,
    pid: child.pid!,
    dirs,
    remoteUri,
    folderUrl: (folder, payload) => {
      const q = new URLSearchParams({ folder });
      if (payload) q.set('payload', JSON.stringify(payload));
      return `${url}/?${q.toString()}`;
    },
    stop: async () => {
      await stopProcessGroup(child);
      log.end();
    },
  };
}

async function waitForHealth(url: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  let last = '';
  while (Date.now() < deadline) {
    try {
      const res = await fetch(`${url}/healthz`);
      if (res.ok) return;
      last = `HTTP ${res.status}`;
    } catch (err) {
      last = String(err);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`code-server at ${url} did not answer /healthz within 30 s (${last})`);
}

/** SIGTERM to the child's process group, SIGKILL after 5 s; resolves once the child has exited. */
export async function stopProcessGroup(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || !child.pid) return;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const signal = (s: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, s);
    } catch {
      // the group is already gone
    }
  };
  signal('SIGTERM');
  const timer = setTimeout(() => signal('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
  // Whatever the server left in its group (the extension host, file watchers) goes too.
  signal('SIGKILL');
}

/** Chromium flags that work headless as root in a container, without network chatter. */
export const chromiumArgs = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Headless Chromium with a scratch profile; close it with closeBrowser(). */
export async function launchChromium(profileDir?: string): Promise<{ context: BrowserContext; close: () => Promise<void> }> {
  // Loaded lazily so that a missing playwright-core shows up as a test failure with this message.
  const { chromium } = await import('playwright-core');
  const dir = profileDir ?? mkdtempSync(join(tmpdir(), 'infbench-chromium-'));
  const context = await chromium.launchPersistentContext(dir, {
    executablePath: chromiumBinary(),
    args: chromiumArgs,
    viewport: { width: 1440, height: 900 },
    // chromium is started by playwright in its own process group and killed on close
    handleSIGINT: true,
    handleSIGTERM: true,
  });
  return {
    context,
    close: async () => {
      await context.close().catch(() => undefined);
      if (!profileDir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

export function removeDirs(dirs: CodeServerDirs): void {
  rmSync(dirs.root, { recursive: true, force: true, maxRetries: 3 });
}
