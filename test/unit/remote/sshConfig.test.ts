import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { listSshHosts, parseProxyJump, resolveSshConfig } from '../../../src/remote/ssh/config';

// OpenSSH's own resolution (`ssh -G`) is the reference: each alias below is resolved by both and
// the options we use must agree.
function sshG(configFile: string, alias: string): Map<string, string> {
  const out = execFileSync('ssh', ['-G', '-F', configFile, alias], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  const m = new Map<string, string>();
  for (const line of out.split('\n')) {
    const sp = line.indexOf(' ');
    if (sp < 0) continue;
    const key = line.slice(0, sp);
    const value = line.slice(sp + 1);
    // Repeated keys (identityfile) are joined in order.
    m.set(key, m.has(key) ? `${m.get(key)} ${value}` : value);
  }
  return m;
}

describe('ssh config resolution', () => {
  const home = userInfo().homedir; // ssh takes ~ from the password database, not $HOME
  const dir = mkdtempSync(join(tmpdir(), 'ib-sshcfg-'));
  mkdirSync(join(dir, 'conf.d'));
  writeFileSync(join(dir, 'conf.d', '10-lab.conf'), ['Host lab-*', '  User labuser', '  Port 2200', '  IdentityFile ~/.ssh/lab_key', ''].join('\n'));
  writeFileSync(join(dir, 'conf.d', '20-gpu.conf'), ['Host gpu-included', '  HostName 10.1.2.3', '  ProxyJump bastion', ''].join('\n'));
  const config = join(dir, 'config');
  writeFileSync(
    config,
    [
      `Include ${join(dir, 'conf.d', '*.conf')}`,
      '',
      'Host box',
      '  HostName 10.0.0.5',
      '  User alice',
      '  Port 2222',
      `  IdentityFile ${join(dir, 'id_box')}`,
      `  IdentityFile ${join(dir, 'id_second')}`,
      '  ProxyJump jump1,bob@jump2:2200',
      '  ServerAliveInterval 15',
      '  ServerAliveCountMax 4',
      `  UserKnownHostsFile ${join(dir, 'kh1')} ${join(dir, 'kh2')}`,
      `  IdentityAgent ${join(dir, 'agent.sock')}`,
      '',
      'Host *.prod !db.prod',
      '  User produser',
      '',
      'Host lab-* *.prod',
      '  ServerAliveInterval 30',
      '  User ignored-because-first-wins',
      '',
      'Host *',
      '  ConnectTimeout 7',
      '',
    ].join('\n'),
  );

  const env = { SSH_AUTH_SOCK: '/agent/from/env' };
  for (const alias of ['box', 'lab-3', 'web.prod', 'db.prod', 'gpu-included', 'plain-host']) {
    it(`resolves "${alias}" as ssh -G does`, () => {
      const ours = resolveSshConfig(alias, { configFile: config, home, env });
      const ref = sshG(config, alias);
      assert.equal(ours.hostName, ref.get('hostname'), 'hostname');
      assert.equal(String(ours.port), ref.get('port'), 'port');
      assert.equal(ours.user, ref.get('user'), 'user');
      const refIdentities = (ref.get('identityfile') ?? '').split(' ').map((f) => f.replace(/^~\//, `${home}/`));
      assert.deepEqual(
        ours.identityFiles.filter((f) => !f.endsWith('id_dsa')),
        refIdentities.filter((f) => !f.endsWith('id_dsa')),
        'identityfile',
      );
      assert.equal(
        ours.proxyJump.map((j) => `${j.user ? `${j.user}@` : ''}${j.host}${j.port ? `:${j.port}` : ''}`).join(','),
        ref.get('proxyjump') ?? '',
        'proxyjump',
      );
      assert.equal(String(ours.serverAliveInterval), ref.get('serveraliveinterval'), 'serveraliveinterval');
      assert.equal(String(ours.serverAliveCountMax), ref.get('serveralivecountmax'), 'serveralivecountmax');
      assert.equal(ours.userKnownHostsFiles.join(' '), ref.get('userknownhostsfile'), 'userknownhostsfile');
      assert.equal(ours.globalKnownHostsFiles.join(' '), ref.get('globalknownhostsfile'), 'globalknownhostsfile');
      assert.equal(ours.connectTimeout === undefined ? 'none' : String(ours.connectTimeout), ref.get('connecttimeout'), 'connecttimeout');
      if (ref.has('identityagent')) assert.equal(ours.identityAgent, ref.get('identityagent'), 'identityagent');
      else assert.equal(ours.identityAgent, env.SSH_AUTH_SOCK, 'identityagent falls back to SSH_AUTH_SOCK');
    });
  }

  it('lists the Host aliases a user can pick, Included files first where the Include stands, without patterns', () => {
    assert.deepEqual(listSshHosts({ configFile: config, home }), ['gpu-included', 'box']);
  });

  it('lists no hosts when there is no config file', () => {
    assert.deepEqual(listSshHosts({ configFile: join(dir, 'absent'), home }), []);
  });

  it('expands %h, %r and ~ in IdentityFile like ssh does when it loads the key', () => {
    const file = join(dir, 'tokens');
    writeFileSync(file, 'Host t\n  HostName real.example\n  User u1\n  IdentityFile ~/.ssh/key_%h_%r_%%\n');
    const r = resolveSshConfig('t', { configFile: file, home: '/home/x', env: {} });
    assert.deepEqual(r.identityFiles, ['/home/x/.ssh/key_real.example_u1_%']);
    assert.equal(r.identityFilesExplicit, true);
  });

  it('lets the target override user and port, as ssh -l and -p do', () => {
    const r = resolveSshConfig('box', { configFile: config, home, env, user: 'carol', port: 2022 });
    assert.equal(r.user, 'carol');
    assert.equal(r.port, 2022);
  });

  it('treats a missing config file as empty', () => {
    const r = resolveSshConfig('somewhere', { configFile: join(dir, 'nope'), home: '/h', env: {} });
    assert.equal(r.hostName, 'somewhere');
    assert.equal(r.port, 22);
    assert.ok(r.identityFiles.includes('/h/.ssh/id_ed25519'));
  });

  it('parses ProxyJump hops with users, ports and IPv6 brackets', () => {
    assert.deepEqual(parseProxyJump('a, u@b:2200,[::1]:2022'), [
      { host: 'a', user: undefined, port: undefined },
      { host: 'b', user: 'u', port: 2200 },
      { host: '::1', user: undefined, port: 2022 },
    ]);
  });
});
