import * as assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runAgentCommand } from '../../src/core/phases/agentRun';
import { RunFolder } from '../../src/core/runs/runFolder';
import { AGENT_VERSION } from '../../src/remote/agentProtocol';
import { openTransport } from '../../src/remote/openTransport';
import { SshHooks } from '../../src/remote/ssh/connection';
import { SshError } from '../../src/remote/ssh/errors';
import { fingerprint, removeKnownHost } from '../../src/remote/ssh/knownHosts';
import { execText, Transport, TransportState } from '../../src/remote/transport';
import { connectionsTo, freePort, KeyPair, makeKey, sshdSessionTree, startSshd, Sshd, writeClientConfig } from '../support/sshd';
import { waitFor } from '../support/waitFor';

const USER = execFileSync('id', ['-un'], { encoding: 'utf8' }).trim();

function pgrep(pattern: string): number[] {
  const r = spawnSync('pgrep', ['-f', pattern], { encoding: 'utf8' });
  return r.stdout
    .trim()
    .split('\n')
    .filter(Boolean)
    .map(Number)
    .filter((pid) => pid !== process.pid);
}

function blobOf(key: KeyPair): Buffer {
  return Buffer.from(key.publicLine.split(' ')[1], 'base64');
}

async function expectSshError(p: Promise<unknown>, kind: SshError['kind']): Promise<SshError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof SshError, `expected an SshError, got ${String(err)}`);
    assert.equal(err.kind, kind, err.message);
    return err;
  }
  assert.fail(`expected the connection to fail with ${kind}`);
}

describe('SSH transport against a real OpenSSH sshd', function () {
  this.timeout(30_000);
  const dir = mkdtempSync(join(tmpdir(), 'ib-ssh-'));
  let clientKey: KeyPair;
  let sshd: Sshd;
  let jump: Sshd;
  const open: Transport[] = [];

  /** A client setup whose config names `alias` for the test sshd, with extra lines. */
  function client(name: string, lines: string[], knownHosts = [sshd.knownHostsLine]) {
    return writeClientConfig(
      join(dir, name),
      {
        target: ['HostName 127.0.0.1', `Port ${sshd.port}`, `User ${USER}`, ...lines],
      },
      knownHosts,
    );
  }

  async function connect(configFile: string, hooks: SshHooks = {}, commandPrefix?: string[]): Promise<Transport> {
    const t = await openTransport({ kind: 'ssh', host: 'target', configFile, home: dir, commandPrefix, connectTimeoutMs: 5000 }, hooks);
    open.push(t);
    return t;
  }

  before(async () => {
    clientKey = makeKey(dir, 'client_ed25519');
    sshd = await startSshd({ authorizedKeys: [clientKey.publicLine] });
    jump = await startSshd({ authorizedKeys: [clientKey.publicLine] });
  });

  afterEach(async () => {
    await Promise.all(open.splice(0).map((t) => t.close()));
  });

  after(async () => {
    await sshd?.stop();
    await jump?.stop();
  });

  it('logs in with an identity file and streams stdout, stderr, exit code and signal', async () => {
    const c = client('key', [`IdentityFile ${clientKey.privateFile}`, 'IdentityAgent none']);
    const t = await connect(c.configFile);
    const r = await execText(t, ['sh', '-c', 'echo out; echo err >&2; exit 3']);
    assert.deepEqual([r.stdout, r.stderr, r.result.code], ['out\n', 'err\n', 3]);
    const killed = await execText(t, ['sh', '-c', 'kill -TERM $$']);
    assert.equal(killed.result.signal, 'SIGTERM');
  });

  it("runs more commands at once than sshd's MaxSessions (10) on one connection: the rest wait for a channel, none is refused", async () => {
    // Every target on one host shares the connection: health checks, runs and transfers together pass 10.
    const c = client('sessions', [`IdentityFile ${clientKey.privateFile}`, 'IdentityAgent none']);
    const t = await connect(c.configFile);
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => execText(t, ['sh', '-c', `sleep 0.1; echo ${i}`])));
    assert.deepEqual(
      results.map((r) => [r.stdout, r.result.code, r.result.error?.message]),
      Array.from({ length: 12 }, (_, i) => [`${i}\n`, 0, undefined]),
    );
  });

  it('logs in with a key held by ssh-agent (IdentityAgent)', async () => {
    const sock = join(dir, 'agent.sock');
    const out = execFileSync('ssh-agent', ['-s', '-a', sock], { encoding: 'utf8' });
    const agentPid = Number(/SSH_AGENT_PID=(\d+)/.exec(out)?.[1]);
    try {
      execFileSync('ssh-add', [clientKey.privateFile], { env: { ...process.env, SSH_AUTH_SOCK: sock }, stdio: 'ignore' });
      const c = client('agent', [`IdentityAgent ${sock}`, `IdentityFile ${join(dir, 'no-such-key')}`]);
      const t = await connect(c.configFile);
      assert.equal((await execText(t, ['echo', 'via agent'])).stdout, 'via agent\n');
    } finally {
      process.kill(agentPid, 'SIGTERM');
    }
  });

  it('unlocks an encrypted key with the passphrase hook, asking again after a wrong one', async () => {
    const locked = makeKey(dir, 'locked_ed25519', 'correct horse');
    const server = await startSshd({ authorizedKeys: [locked.publicLine] });
    try {
      const c = writeClientConfig(
        join(dir, 'locked'),
        { target: ['HostName 127.0.0.1', `Port ${server.port}`, `User ${USER}`, `IdentityFile ${locked.privateFile}`, 'IdentityAgent none'] },
        [server.knownHostsLine],
      );
      const asked: boolean[] = [];
      const results: boolean[] = [];
      const t = await connect(c.configFile, {
        askPassphrase: async (file, previousWasWrong) => {
          assert.equal(file, locked.privateFile);
          asked.push(previousWasWrong);
          return previousWasWrong ? 'correct horse' : 'wrong';
        },
        onPassphraseResult: (_file, ok) => results.push(ok),
      });
      assert.equal((await execText(t, ['true'])).result.code, 0);
      assert.deepEqual(asked, [false, true]);
      assert.deepEqual(results, [false, true]);
    } finally {
      await server.stop();
    }
  });

  it('refuses a key the server does not know, naming the host and the keys tried', async () => {
    const stranger = makeKey(dir, 'stranger_ed25519');
    const c = client('wrongkey', [`IdentityFile ${stranger.privateFile}`, 'IdentityAgent none']);
    const err = await expectSshError(connect(c.configFile), 'auth');
    assert.match(err.message, new RegExp(`127\\.0\\.0\\.1:${sshd.port}`));
    assert.ok(err.message.includes(stranger.privateFile), err.message);
    assert.match(err.message, /authorized_keys/);
  });

  it('refuses an unknown host key by default and trusts it only when told to', async () => {
    const c = client('unknown', [`IdentityFile ${clientKey.privateFile}`, 'IdentityAgent none'], []);
    const err = await expectSshError(connect(c.configFile), 'host-key-unknown');
    assert.ok(err.message.includes(fingerprint(blobOf(sshd.hostKey))), err.message);
    assert.equal(readFileSync(c.knownHosts, 'utf8'), '', 'nothing is written when refused');

    const prompts: string[] = [];
    const t = await connect(c.configFile, { onUnknownHostKey: async (p) => (prompts.push(p.fingerprint), true) });
    assert.deepEqual(prompts, [fingerprint(blobOf(sshd.hostKey))]);
    assert.equal((await execText(t, ['true'])).result.code, 0);
    await t.close();
    // Now on file: OpenSSH itself agrees, and the next connection asks nothing.
    assert.match(execFileSync('ssh-keygen', ['-F', `[127.0.0.1]:${sshd.port}`, '-f', c.knownHosts], { encoding: 'utf8' }), /found/);
    await connect(c.configFile, { onUnknownHostKey: async () => assert.fail('asked again for a known host') });
  });

  it('refuses a changed host key with both fingerprints and the ssh-keygen -R command', async () => {
    const other = makeKey(dir, 'other_host');
    const c = client(
      'changed',
      [`IdentityFile ${clientKey.privateFile}`, 'IdentityAgent none'],
      [`[127.0.0.1]:${sshd.port} ${other.publicLine.split(' ').slice(0, 2).join(' ')}`],
    );
    const err = await expectSshError(connect(c.configFile, { onUnknownHostKey: async () => true }), 'host-key-changed');
    assert.ok(err.message.includes(fingerprint(blobOf(sshd.hostKey))), 'the new fingerprint');
    assert.ok(err.message.includes(fingerprint(blobOf(other))), 'the fingerprint on file');
    assert.ok(err.message.includes(`ssh-keygen -R '[127.0.0.1]:${sshd.port}' -f '${c.knownHosts}'`), err.message);
    // What VS Code shows and acts on: both keys, and where the old one is.
    assert.deepEqual(err.hostKeyChange?.offered.fingerprint, fingerprint(blobOf(sshd.hostKey)));
    assert.deepEqual(
      err.hostKeyChange?.known.map((k) => [k.fingerprint, k.file, k.line]),
      [[fingerprint(blobOf(other)), c.knownHosts, 1]],
    );
    // Removing the old key (the user's yes) makes the host new again: the next connection asks to trust the key it offers.
    await removeKnownHost(c.knownHosts, '127.0.0.1', sshd.port);
    const prompts: string[] = [];
    const t = await connect(c.configFile, { onUnknownHostKey: async (p) => (prompts.push(p.fingerprint), true) });
    assert.deepEqual(prompts, [fingerprint(blobOf(sshd.hostKey))]);
    await t.close();
  });

  it('connects afresh, checking the host key again, while the last transport of a connection is still closing', async () => {
    const c = client('closing', [`IdentityFile ${clientKey.privateFile}`, 'IdentityAgent none']);
    const first = await connect(c.configFile);
    // A command still running when its transport closes (a health check as Disconnect is pressed):
    // close() cancels it over the connection, which stays up meanwhile.
    const running = first.exec(['sleep', '30']);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const closing = first.close();
    const other = makeKey(dir, 'closing_other_host');
    writeFileSync(c.knownHosts, `[127.0.0.1]:${sshd.port} ${other.publicLine.split(' ').slice(0, 2).join(' ')}\n`);
    // The next opener must not be handed the closing connection (it would skip the host key check).
    await expectSshError(connect(c.configFile), 'host-key-changed');
    await closing;
    await running.done;
  });

  it('says clearly when nothing listens and when the server never answers', async () => {
    const closedPort = await freePort();
    const c1 = writeClientConfig(join(dir, 'refused'), { target: ['HostName 127.0.0.1', `Port ${closedPort}`, 'IdentityAgent none'] }, []);
    const refused = await expectSshError(connect(c1.configFile), 'unreachable');
    assert.match(refused.message, new RegExp(`127\\.0\\.0\\.1:${closedPort}.*refused`));

    const silent: Server = createServer(() => undefined);
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()));
    try {
      const port = (silent.address() as { port: number }).port;
      const c2 = writeClientConfig(join(dir, 'silent'), { target: ['HostName 127.0.0.1', `Port ${port}`, 'IdentityAgent none'] }, []);
      const started = Date.now();
      const timeout = await expectSshError(
        openTransport({ kind: 'ssh', host: 'target', configFile: c2.configFile, home: dir, connectTimeoutMs: 700 }),
        'timeout',
      );
      assert.ok(Date.now() - started < 3000);
      assert.match(timeout.message, /No SSH answer from .*target/);
    } finally {
      silent.close();
    }
  });

  it('says that a ProxyCommand is not run, instead of connecting around it', async () => {
    const c = client('proxycommand', ['ProxyCommand nc %h %p', `IdentityFile ${clientKey.privateFile}`]);
    const err = await expectSshError(connect(c.configFile), 'config');
    assert.match(err.message, /ProxyCommand .*ProxyJump/);
  });

  it('goes through a ProxyJump host', async () => {
    const c = writeClientConfig(
      join(dir, 'jump'),
      {
        bastion: ['HostName 127.0.0.1', `Port ${jump.port}`, `User ${USER}`, `IdentityFile ${clientKey.privateFile}`, 'IdentityAgent none'],
        target: ['HostName 127.0.0.1', `Port ${sshd.port}`, `User ${USER}`, `IdentityFile ${clientKey.privateFile}`, 'IdentityAgent none', 'ProxyJump bastion'],
      },
      [sshd.knownHostsLine, jump.knownHostsLine],
    );
    const before = jump.sessionPids().length;
    const t = await connect(c.configFile);
    assert.equal((await execText(t, ['echo', 'through the jump'])).stdout, 'through the jump\n');
    assert.equal(jump.sessionPids().length, before + 1, 'the jump host carries a session');
  });

  it('runs every command inside the prefix, with hostile arguments arriving intact', async () => {
    const c = client('prefix', [`IdentityFile ${clientKey.privateFile}`, 'IdentityAgent none']);
    const canary = join(dir, 'injected');
    // `env NAME=value` stands in for `docker exec -i <container>`: it is a prefix that must stay a prefix.
    const t = await connect(c.configFile, {}, ['env', 'IB_IN_CONTAINER=yes it is']);
    const hostile = [
      `$(touch ${canary})`,
      `\`touch ${canary}\``,
      `'; touch ${canary}; '`,
      '"; exit 7; "',
      'a b\tc',
      'line\nbreak',
      '*',
      '~',
      '',
      '-n',
      '\\',
      '$HOME',
      "it's",
      '--',
      '&&',
      '|',
      ';',
      '#',
      '%s',
      'ünïcödé',
    ];
    const script = 'import json, os, sys; print(json.dumps([sys.argv[1:], os.environ.get("IB_IN_CONTAINER"), os.environ.get("IB_HOSTILE")]))';
    const r = await execText(t, ['python3', '-c', script, ...hostile], { env: { IB_HOSTILE: `$(touch ${canary}) ' "` } });
    assert.equal(r.result.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), [hostile, 'yes it is', `$(touch ${canary}) ' "`]);
    assert.equal(existsSync(canary), false, 'no argument was run as a command');

    // Files travel through the prefix too (stdin/stdout, since SFTP cannot enter a container).
    const local = join(dir, "prefix upload 'q'.bin");
    writeFileSync(local, randomBytes(300_000));
    const remote = join(dir, 'remote dir $x', "it's.bin");
    await t.upload(local, remote);
    await t.download(remote, `${local}.back`);
    assert.equal(sha256(`${local}.back`), sha256(local));
  });

  it('uploads and downloads a few MB over SFTP with matching checksums', async () => {
    const c = client('sftp', [`IdentityFile ${clientKey.privateFile}`, 'IdentityAgent none']);
    const t = await connect(c.configFile);
    const local = join(dir, 'payload.bin');
    writeFileSync(local, randomBytes(5 * 1024 * 1024 + 123));
    const remote = join(dir, 'remote', 'nested', 'payload.bin');
    await t.upload(local, remote);
    const remoteSum = (await execText(t, ['sha256sum', remote])).stdout.split(' ')[0];
    assert.equal(remoteSum, sha256(local));
    await t.download(remote, join(dir, 'back', 'payload.bin'));
    assert.equal(sha256(join(dir, 'back', 'payload.bin')), sha256(local));
    await assert.rejects(t.download(join(dir, 'missing.bin'), join(dir, 'x')), /missing\.bin/);
  });

  it('cancel leaves no process of the command on the host', async () => {
    const c = client('cancel', [`IdentityFile ${clientKey.privateFile}`, 'IdentityAgent none']);
    for (const prefix of [undefined, ['env', 'IN_PREFIX=1']]) {
      const t = await connect(c.configFile, {}, prefix);
      const marker = `ib-ssh-cancel-${Date.now()}-${prefix ? 'prefix' : 'plain'}`;
      const handle = t.exec(['sh', '-c', `sleep 300 & sh -c 'sleep 301; : ${marker}-child' & echo started; wait # ${marker}`]);
      await new Promise<void>((resolve) => handle.stdout.once('data', () => resolve()));
      assert.ok(pgrep(marker).length >= 2, 'the command and its child run');
      await handle.cancel();
      const result = await handle.done;
      assert.ok(result.signal === 'SIGTERM' || result.code !== 0, JSON.stringify(result));
      // ps on the host (this machine: the sshd is on loopback) and through the transport agree.
      assert.deepEqual(pgrep(marker), []);
      const remotePs = await execText(t, ['ps', '-eo', 'args']);
      assert.ok(!remotePs.stdout.includes(marker), 'ps on the host still lists the command');
      await t.close();
    }
  });

  it('keeps the events received before the connection was cut and marks the run interrupted', async () => {
    const states: TransportState[] = [];
    const c = client('cut', [`IdentityFile ${clientKey.privateFile}`, 'IdentityAgent none']);
    const t = await connect(c.configFile, { onStateChange: (s) => states.push(s) });
    const marker = `ib-cut-${Date.now()}`;
    // A stand-in agent that speaks the real event schema and then works for a long time.
    const fakeAgent = join(dir, 'slow_agent.py');
    writeFileSync(
      fakeAgent,
      [
        'import json, sys, time',
        'def emit(kind, **kw):',
        '    print(json.dumps({"v": 1, "type": kind, "t": time.time(), **kw}), flush=True)',
        // The hello the host checks: this build's agent version, the command asked for, a Python it supports.
        `emit("hello", agent_version="${AGENT_VERSION}", command="probe", pid=0, python="3.11.0", executable=sys.executable)`,
        'for i in range(3):',
        '    emit("progress", done=i + 1, total=10)',
        'time.sleep(60)',
        'emit("done", ok=True)',
      ].join('\n'),
    );
    const run = RunFolder.create(mkdtempSync(join(tmpdir(), 'ib-ws-')), 'probe', 'target', {});
    let seen = 0;
    let cut = false;
    const outcome = await runAgentCommand(t, { python: 'python3', path: fakeAgent, hash: 'test' }, 'probe', [marker], run, {
      onEvent: () => {
        seen++;
        if (seen === 4 && !cut) {
          cut = true;
          // Kill only the sshd processes serving this connection, as a network drop would.
          for (const pid of sshdSessionTree(sshd)) process.kill(pid, 'SIGKILL');
        }
      },
    });
    assert.equal(outcome.status, 'interrupted');
    assert.match(outcome.reason ?? '', /dropped/);
    assert.equal(run.readEvents().length, 4, 'all four events are in events.jsonl');
    assert.equal(RunFolder.open(run.dir).info.status, 'interrupted');
    assert.ok(pgrep(marker).length > 0, 'the agent outlives the connection on the host');
    // The shared connection comes back by itself, and the cut-off agent is killed then.
    const deadline = Date.now() + 10_000;
    while ((!states.includes('connected', states.indexOf('reconnecting')) || pgrep(marker).length) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(states.slice(0, 3), ['connecting', 'connected', 'reconnecting']);
    assert.equal(states[states.lastIndexOf('reconnecting') + 1], 'connected');
    assert.deepEqual(pgrep(marker), [], 'the cut-off agent was killed after the reconnect');
    assert.equal((await execText(t, ['echo', 'back'])).stdout, 'back\n');
  });

  it('close() while the connection is coming back leaves no session on the host, even when that attempt then succeeds', async () => {
    const states: TransportState[] = [];
    const c = client('close-reconnecting', [`IdentityFile ${clientKey.privateFile}`, 'IdentityAgent none']);
    const t = await connect(c.configFile, { onStateChange: (s) => states.push(s) });
    assert.equal((await execText(t, ['echo', 'up'])).stdout, 'up\n');
    const listener = sshd.process.pid!;
    // A stopped listener leaves new connections in the kernel's backlog: the reconnect's dial is then
    // under way (its TCP connection established) but cannot finish until the listener goes on.
    process.kill(listener, 'SIGSTOP');
    let closedAt = -1;
    try {
      for (const pid of sshdSessionTree(sshd)) process.kill(pid, 'SIGKILL');
      await waitFor(
        "the reconnect under way (reconnecting, its TCP connection in the stopped listener's backlog)",
        () => states.includes('reconnecting') && connectionsTo(sshd.port) === 1,
        10_000,
      );
      closedAt = states.length;
      await t.close();
    } finally {
      process.kill(listener, 'SIGCONT');
    }
    // The attempt now logs in; what it opened must be ended, not kept as the connection.
    await waitFor(
      'no connection to the host and no sshd session left after close()',
      () => connectionsTo(sshd.port) === 0 && sshdSessionTree(sshd).length === 0,
      10_000,
    );
    assert.deepEqual(states.slice(closedAt), ['disconnected'], 'states after close()');
  });
});

describe('SSH keepalive', function () {
  this.timeout(30_000);

  it('notices a connection that went silent (no FIN, no RST) through ServerAliveInterval', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ib-ssh-silent-'));
    const key = makeKey(dir, 'client');
    const server = await startSshd({ authorizedKeys: [key.publicLine] });
    const c = writeClientConfig(
      join(dir, 'c'),
      {
        target: [
          'HostName 127.0.0.1',
          `Port ${server.port}`,
          `User ${USER}`,
          `IdentityFile ${key.privateFile}`,
          'IdentityAgent none',
          'ServerAliveInterval 1',
          'ServerAliveCountMax 2',
        ],
      },
      [server.knownHostsLine],
    );
    const t = await openTransport({ kind: 'ssh', host: 'target', configFile: c.configFile, home: dir });
    const marker = `ib-silent-${Date.now()}`;
    const frozen: number[] = [];
    try {
      const handle = t.exec(['sh', '-c', `echo started; sleep 30 # ${marker}`]);
      await new Promise<void>((resolve) => handle.stdout.once('data', () => resolve()));
      // Freeze the server side of this connection: the socket stays open but nothing answers,
      // as when a network path dies without telling either end.
      for (const pid of sshdSessionTree(server)) {
        process.kill(pid, 'SIGSTOP');
        frozen.push(pid);
      }
      const started = Date.now();
      const result = await handle.done;
      assert.equal(result.lostConnection, true);
      assert.ok(Date.now() - started < 8000, `noticed after ${Date.now() - started} ms`);
    } finally {
      for (const pid of frozen) process.kill(pid, 'SIGKILL');
      for (const pid of pgrep(marker)) process.kill(pid, 'SIGKILL');
      await t.close();
      await server.stop();
    }
  });
});

function sha256(file: string): string {
  return createHash('sha256').update(readFileSync(file)).digest('hex');
}
