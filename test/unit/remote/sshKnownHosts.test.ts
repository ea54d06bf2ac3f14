import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { addKnownHost, checkHostKey, fingerprint, HostKey, keyTypeOf, removeKnownHost } from '../../../src/remote/ssh/knownHosts';

// Real keys from ssh-keygen, and hashed entries made by `ssh-keygen -H`, so the formats are OpenSSH's own.
const dir = mkdtempSync(join(tmpdir(), 'ib-kh-'));
function makeKey(name: string, type = 'ed25519'): { key: HostKey; line: string; keyFile: string } {
  const keyFile = join(dir, name);
  execFileSync('ssh-keygen', ['-q', '-t', type, '-N', '', '-f', keyFile]);
  const line = readFileSync(`${keyFile}.pub`, 'utf8').trim();
  const blob = Buffer.from(line.split(' ')[1], 'base64');
  return { key: { type: keyTypeOf(blob), blob }, line: line.split(' ').slice(0, 2).join(' '), keyFile };
}

describe('known_hosts checking', () => {
  const a = makeKey('a');
  const b = makeKey('b');
  const rsa = makeKey('r', 'rsa');

  it('prints fingerprints exactly as ssh-keygen -l does', () => {
    const ref = execFileSync('ssh-keygen', ['-l', '-f', `${a.keyFile}.pub`], { encoding: 'utf8' }).split(' ')[1];
    assert.equal(fingerprint(a.key.blob), ref);
  });

  it('accepts a plain entry, a [host]:port entry and a wildcard, and nothing else', () => {
    const file = join(dir, 'kh-plain');
    writeFileSync(file, `# comment\ngpu1,10.0.0.1 ${a.line}\n[gpu2]:2222 ${a.line}\n*.lab ${b.line}\n`);
    assert.equal(checkHostKey([file], 'gpu1', 22, a.key).status, 'known');
    assert.equal(checkHostKey([file], '10.0.0.1', 22, a.key).status, 'known');
    assert.equal(checkHostKey([file], 'gpu2', 2222, a.key).status, 'known');
    assert.equal(checkHostKey([file], 'gpu2', 22, a.key).status, 'unknown');
    assert.equal(checkHostKey([file], 'x.lab', 22, b.key).status, 'known');
    assert.equal(checkHostKey([file], 'elsewhere', 22, a.key).status, 'unknown');
  });

  it('matches hashed |1| entries written by ssh-keygen -H', () => {
    const file = join(dir, 'kh-hashed');
    writeFileSync(file, `gpu3 ${a.line}\n[gpu4]:2200 ${b.line}\n`);
    execFileSync('ssh-keygen', ['-H', '-f', file], { stdio: 'ignore' });
    assert.match(readFileSync(file, 'utf8'), /^\|1\|/);
    assert.equal(checkHostKey([file], 'gpu3', 22, a.key).status, 'known');
    assert.equal(checkHostKey([file], 'gpu4', 2200, b.key).status, 'known');
    assert.equal(checkHostKey([file], 'gpu4', 2200, a.key).status, 'changed');
  });

  it('reports a changed key with both fingerprints and where the old one is', () => {
    const file = join(dir, 'kh-changed');
    writeFileSync(file, `\ngpu5 ${a.line}\n`);
    const check = checkHostKey([join(dir, 'missing'), file], 'gpu5', 22, b.key);
    assert.equal(check.status, 'changed');
    if (check.status !== 'changed') return;
    assert.equal(check.fingerprint, fingerprint(b.key.blob));
    assert.deepEqual(
      check.known.map((k) => [k.fingerprint, k.file, k.line]),
      [[fingerprint(a.key.blob), file, 2]],
    );
  });

  it("removes a changed host's old key, hashed or plain, keeping the other hosts' lines and a .old copy", async () => {
    const file = join(dir, 'kh-remove');
    writeFileSync(file, `gpu6 ${a.line}\n[gpu7]:2200 ${a.line}\nother ${b.line}\n`);
    execFileSync('ssh-keygen', ['-H', '-f', file], { stdio: 'ignore' });
    const before = readFileSync(file, 'utf8');
    assert.equal(checkHostKey([file], 'gpu7', 2200, b.key).status, 'changed');
    await removeKnownHost(file, 'gpu7', 2200);
    // The host is unknown now (so connecting asks to trust the new key); the others are untouched.
    assert.equal(checkHostKey([file], 'gpu7', 2200, b.key).status, 'unknown');
    assert.equal(checkHostKey([file], 'gpu6', 22, a.key).status, 'known');
    assert.equal(checkHostKey([file], 'other', 22, b.key).status, 'known');
    assert.equal(readFileSync(`${file}.old`, 'utf8'), before);
  });

  it('refuses a key marked @revoked', () => {
    const file = join(dir, 'kh-revoked');
    writeFileSync(file, `@revoked * ${rsa.line}\n`);
    assert.equal(checkHostKey([file], 'any', 22, rsa.key).status, 'revoked');
  });

  it('appends a new host in a form that ssh-keygen -F then finds', () => {
    const file = join(dir, 'sub', 'known_hosts');
    addKnownHost(file, '127.0.0.1', 2299, a.key);
    assert.equal(checkHostKey([file], '127.0.0.1', 2299, a.key).status, 'known');
    const found = execFileSync('ssh-keygen', ['-F', '[127.0.0.1]:2299', '-f', file], { encoding: 'utf8' });
    assert.match(found, /found: line 1/);
  });
});
