import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalTransport } from '../../src/remote/localTransport';
import { openTransport } from '../../src/remote/openTransport';
import { execText, Transport } from '../../src/remote/transport';
import { makeKey, startSshd, Sshd, writeClientConfig } from '../support/sshd';

// A command prefix stands for `docker exec -i <container>`: there is no Docker here, so the prefix is
// `setsid -w env IB_IN_CONTAINER=...`, which, like docker exec, waits for a command that is not
// a child of the caller's group (setsid). What must hold is the same: arguments arrive intact, cancel
// reaches every process behind the prefix, and files land where the command runs.
const PREFIX = ['setsid', '-w', 'env', 'IB_IN_CONTAINER=yes it is'];
const USER = spawnSync('id', ['-un'], { encoding: 'utf8' }).stdout.trim();

function pgrep(pattern: string): number[] {
  const r = spawnSync('pgrep', ['-f', pattern], { encoding: 'utf8' });
  return r.stdout.trim().split('\n').filter(Boolean).map(Number);
}

const sha256 = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');

describe('command prefix (a container on the host), on both transports', function () {
  this.timeout(30_000);
  const dir = mkdtempSync(join(tmpdir(), 'ib-prefix-'));
  let sshd: Sshd;
  let configFile: string;

  before(async () => {
    const key = makeKey(dir, 'client');
    sshd = await startSshd({ authorizedKeys: [key.publicLine] });
    configFile = writeClientConfig(
      join(dir, 'client-config'),
      {
        box: ['HostName 127.0.0.1', `Port ${sshd.port}`, `User ${USER}`, `IdentityFile ${key.privateFile}`, 'IdentityAgent none'],
      },
      [sshd.knownHostsLine],
    ).configFile;
  });

  after(async () => {
    await sshd?.stop();
  });

  const transports: Record<string, () => Promise<Transport>> = {
    local: async () => new LocalTransport(PREFIX),
    ssh: () => openTransport({ kind: 'ssh', host: 'box', configFile, home: dir, commandPrefix: PREFIX }),
  };

  for (const [kind, open] of Object.entries(transports)) {
    describe(kind, () => {
      it('passes hostile arguments and environment values through the prefix unchanged', async () => {
        const t = await open();
        try {
          const canary = join(dir, `injected-${kind}`);
          const hostile = [
            `$(touch ${canary})`,
            `\`touch ${canary}\``,
            `'; touch ${canary}; '`,
            '"',
            'a b',
            'tab\there',
            'new\nline',
            '*',
            '',
            '-e',
            '\\',
            "it's",
            '$PATH',
            '!',
            '&',
          ];
          const script = 'import json, os, sys; print(json.dumps([sys.argv[1:], os.environ.get("IB_IN_CONTAINER"), os.environ.get("IB_VALUE")]))';
          const r = await execText(t, ['python3', '-c', script, ...hostile], { env: { IB_VALUE: `; touch ${canary} '$x'` } });
          assert.equal(r.result.code, 0, r.stderr);
          assert.deepEqual(JSON.parse(r.stdout), [hostile, 'yes it is', `; touch ${canary} '$x'`]);
          assert.equal(existsSync(canary), false);
        } finally {
          await t.close();
        }
      });

      it('cancel kills every process behind the prefix', async () => {
        const t = await open();
        try {
          const marker = `ib-prefix-cancel-${kind}-${Date.now()}`;
          const handle = t.exec(['sh', '-c', `sleep 300 & sh -c 'sleep 301; : ${marker}-child' & echo started; wait # ${marker}`]);
          await new Promise<void>((resolve) => handle.stdout.once('data', () => resolve()));
          assert.ok(pgrep(marker).length >= 2);
          await handle.cancel();
          await handle.done;
          assert.deepEqual(
            pgrep(marker),
            [],
            `left behind: ${spawnSync('ps', ['-o', 'pid,pgid,args', '-p', pgrep(marker).join(',') || '1'], { encoding: 'utf8' }).stdout}`,
          );
        } finally {
          await t.close();
        }
      });

      it('copies files to and from where the command runs, byte for byte', async () => {
        const t = await open();
        try {
          const local = join(dir, `up-${kind}.bin`);
          writeFileSync(local, randomBytes(1_500_000));
          const remote = join(dir, `inside ${kind}`, "file 'q'.bin");
          await t.upload(local, remote);
          const r = await execText(t, ['sha256sum', remote]);
          assert.equal(r.stdout.split(' ')[0], sha256(local));
          await t.download(remote, `${local}.back`);
          assert.equal(sha256(`${local}.back`), sha256(local));
          await assert.rejects(t.download(join(dir, 'nope.bin'), join(dir, 'x.bin')), /nope\.bin/);
        } finally {
          await t.close();
        }
      });
    });
  }
});
