import * as assert from 'node:assert/strict';
import { ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openTransport } from '../../src/remote/openTransport';
import { execText, Transport } from '../../src/remote/transport';
import { KeyPair, makeKey, startSshd, Sshd, writeClientConfig } from '../support/sshd';

// Cancel kills the process group named by a record file. These tests play a second user of the
// same host (a real unprivileged account) who tries to steer that kill at another process group of
// the victim's, which stands in for the vLLM server on a shared GPU box.
const OTHER = 'ib-other';
const USER = execFileSync('id', ['-un'], { encoding: 'utf8' }).trim();
const UID = process.getuid?.() ?? -1;

function alive(pid: number): boolean {
  return spawnSync('ps', ['-o', 'pid=', '-p', String(pid)], { encoding: 'utf8' }).stdout.trim() === String(pid);
}

function pgrep(pattern: string): number[] {
  const r = spawnSync('pgrep', ['-f', pattern], { encoding: 'utf8' });
  return r.stdout
    .trim()
    .split('\n')
    .filter(Boolean)
    .map(Number)
    .filter((pid) => pid !== process.pid);
}

/** Cleanup after a failed check: the whole group of every process that carries the marker. */
function killGroups(marker: string): void {
  for (const pid of pgrep(marker)) {
    const pgid = Number(spawnSync('ps', ['-o', 'pgid=', '-p', String(pid)], { encoding: 'utf8' }).stdout.trim());
    try {
      process.kill(pgid > 1 ? -pgid : pid, 'SIGKILL');
    } catch {
      // gone meanwhile
    }
  }
}

/** The unprivileged account, made on first use (CI runs as root on a throwaway machine). */
function otherUser(): { uid: number; gid: number } {
  if (spawnSync('id', ['-u', OTHER]).status !== 0) {
    execFileSync('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', OTHER]);
  }
  const id = (flag: string) => Number(execFileSync('id', [flag, OTHER], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}

describe('process-group records on a host shared with another user', function () {
  this.timeout(30_000);
  let other: { uid: number; gid: number };
  let dir: string;
  let shared: string;
  let cache: string;
  let key: KeyPair;
  let sshd: Sshd;
  let configFile: string;
  let server: ChildProcess;
  const open: Transport[] = [];

  /** Runs a shell script as the other user, as that user would at their own prompt. */
  function asOther(script: string): void {
    const r = spawnSync('sh', ['-c', script], { uid: other.uid, gid: other.gid, encoding: 'utf8', cwd: '/' });
    assert.equal(r.status, 0, `the other user's script failed: ${r.stderr}`);
  }

  async function connect(prefix?: string[]): Promise<Transport> {
    const t = await openTransport({ kind: 'ssh', host: 'target', configFile, home: dir, commandPrefix: prefix, connectTimeoutMs: 5000 });
    open.push(t);
    return t;
  }

  async function started(t: Transport, marker: string) {
    // Two processes, so that the marker stays on the shell whatever it execs.
    const handle = t.exec(['sh', '-c', `echo started; sleep 297 & wait # ${marker}`]);
    await new Promise<void>((resolve) => handle.stdout.once('data', () => resolve()));
    return handle;
  }

  before(async function () {
    // Switching to another account and creating one both need root.
    if (UID !== 0) this.skip();
    other = otherUser();
    dir = mkdtempSync(join(tmpdir(), 'ib-records-'));
    chmodSync(dir, 0o755);
    // A folder like /tmp that everyone may write, and the victim's own private cache.
    shared = join(dir, 'tmp');
    mkdirSync(shared);
    chmodSync(shared, 0o1777);
    cache = join(dir, 'cache');
    mkdirSync(cache, { mode: 0o700 });
    key = makeKey(dir, 'client_ed25519');
    // The victim's sessions see TMPDIR and XDG_CACHE_HOME as a login on that host would.
    sshd = await startSshd({ authorizedKeys: [key.publicLine], extraConfig: [`SetEnv TMPDIR=${shared} XDG_CACHE_HOME=${cache}`] });
    configFile = writeClientConfig(
      join(dir, 'ssh'),
      {
        target: ['HostName 127.0.0.1', `Port ${sshd.port}`, `User ${USER}`, `IdentityFile ${key.privateFile}`, 'IdentityAgent none'],
      },
      [sshd.knownHostsLine],
    ).configFile;
  });

  beforeEach(() => {
    // The victim's server: a process group of its own, same user as the runs.
    server = spawn('sleep', ['598'], { detached: true, stdio: 'ignore' });
  });

  afterEach(async () => {
    await Promise.all(open.splice(0).map((t) => t.close()));
    if (server?.pid && alive(server.pid)) process.kill(-server.pid, 'SIGKILL');
  });

  after(async () => {
    await sshd?.stop();
  });

  it('keeps records where the other user cannot rewrite them, so cancel kills only the run', async () => {
    // The other user prepares the shared folder a careless tool would use, and waits.
    const lure = join(shared, `infbench-runs-${UID}`);
    asOther(`mkdir -m 777 ${lure}`);
    const t = await connect();
    const marker = `ib-records-run-${Date.now()}`;
    const handle = await started(t, marker);
    // Every record they can reach now names the server's group.
    asOther(`for f in ${lure}/*.pg ${cache}/inference-bench/runs/*.pg; do [ -e "$f" ] || continue; rm -f "$f"; echo ${server.pid} > "$f"; done; true`);
    try {
      await handle.cancel();
      assert.ok(alive(server.pid!), "the server was killed by the victim's cancel");
      assert.deepEqual(pgrep(marker), [], 'the cancelled command still runs');
      assert.deepEqual(pgrep('sleep 297'), [], 'a child of the cancelled command still runs');
    } finally {
      killGroups(marker);
    }
    assert.deepEqual(readdirSync(lure), [], 'a record was written into the shared folder');
    assert.deepEqual(readdirSync(join(cache, 'inference-bench', 'runs')), [], "the run's record is left behind");
  });

  it('refuses a records folder made by the other user, and starts nothing', async () => {
    // XDG_CACHE_HOME pointing at a shared folder, where the other user made the records folder first.
    const sharedCache = join(shared, 'cache');
    asOther(`mkdir -p -m 777 ${sharedCache}/inference-bench/runs && chmod 777 ${sharedCache}/inference-bench`);
    const canary = join(dir, 'started');
    const t = await connect(['env', `XDG_CACHE_HOME=${sharedCache}`]);
    const r = await execText(t, ['touch', canary]);
    assert.equal(r.result.code, 125);
    assert.match(r.stderr, /inference-bench\/runs is not a folder of your own \(.*another owner.*\).*XDG_CACHE_HOME/);
    assert.equal(existsSync(canary), false, "the command ran with its records in the other user's folder");
  });

  it("never signals a group whose processes are not the run's, whatever its record says", async () => {
    const t = await connect();
    const marker = `ib-records-verify-${Date.now()}`;
    const handle = await started(t, marker);
    // A record that names another group of the same user: as after a PID was reused, or a file altered.
    const records = join(cache, 'inference-bench', 'runs');
    for (const name of readdirSync(records)) writeFileSync(join(records, name), `${server.pid}\n`);
    try {
      await handle.cancel();
      assert.ok(alive(server.pid!), 'the server was killed through a record that named its group');
    } finally {
      killGroups(marker);
    }
  });
});
