// SFTP upload and download of one file over loopback through the SSH transport (ssh2, 16 requests
// of 255 KiB in flight), against OpenSSH scp to the same private sshd in the same run, as a ratio.
// Also ssh2's own defaults, to show what the tuning buys. Prints one line per figure.
//   npx tsx bench/sftp.ts [megabytes=200] [rounds=3]
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, openSync, readFileSync, rmSync, writeSync, closeSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { SFTPWrapper } from 'ssh2';
import { openTransport } from '../src/remote/openTransport';
import { SshTransport } from '../src/remote/ssh/sshTransport';
import { makeKey, startSshd, writeClientConfig } from '../test/support/sshd';

const megabytes = Number(process.argv[2] ?? 200);
const rounds = Number(process.argv[3] ?? 3);
const dir = mkdtempSync(join(tmpdir(), 'ib-bench-sftp-'));

function makeFile(path: string, bytes: number): void {
  const fd = openSync(path, 'w');
  const block = randomBytes(1 << 20);
  for (let done = 0; done < bytes; done += block.length) writeSync(fd, block, 0, Math.min(block.length, bytes - done));
  closeSync(fd);
}

const sha = (p: string) => createHash('sha256').update(readFileSync(p)).digest('hex');

async function timed(fn: () => Promise<void> | void): Promise<number> {
  const t = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - t) / 1e9;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main(): Promise<void> {
  const key = makeKey(dir, 'client');
  const sshd = await startSshd({ authorizedKeys: [key.publicLine] });
  const client = writeClientConfig(
    join(dir, 'client-config'),
    {
      bench: ['HostName 127.0.0.1', `Port ${sshd.port}`, `User ${userInfo().username}`, `IdentityFile ${key.privateFile}`, 'IdentityAgent none'],
    },
    [sshd.knownHostsLine],
  );
  const bytes = megabytes * 1024 * 1024;
  const local = join(dir, 'payload.bin');
  makeFile(local, bytes);
  const sum = sha(local);
  const transport = (await openTransport({ kind: 'ssh', host: 'bench', configFile: client.configFile, home: dir })) as SshTransport;
  const sftp: SFTPWrapper = await transport.connection.sftp();
  const scp = (from: string, to: string): void => {
    execFileSync('scp', ['-q', '-F', client.configFile, from, to], { stdio: 'inherit' });
  };
  const defaultsPut = (from: string, to: string) => new Promise<void>((res, rej) => sftp.fastPut(from, to, (e) => (e ? rej(e) : res())));
  const defaultsGet = (from: string, to: string) => new Promise<void>((res, rej) => sftp.fastGet(from, to, (e) => (e ? rej(e) : res())));

  const ways: Record<string, { up: (r: string) => Promise<void> | void; down: (r: string, l: string) => Promise<void> | void }> = {
    'infbench (16 x 255 KiB)': { up: (r) => transport.upload(local, r), down: (r, l) => transport.download(r, l) },
    'ssh2 defaults': { up: (r) => defaultsPut(local, r), down: (r, l) => defaultsGet(r, l) },
    'OpenSSH scp': { up: (r) => scp(local, `bench:${r}`), down: (r, l) => scp(`bench:${r}`, l) },
  };
  const rates: Record<string, { up: number[]; down: number[]; cpuUp: number[]; cpuDown: number[] }> = {};
  for (let round = 0; round < rounds; round++) {
    // Interleaved, so that a slow moment of the machine hits every way alike.
    for (const [name, way] of Object.entries(ways)) {
      const remote = join(dir, `remote-${round}.bin`);
      const back = join(dir, `back-${round}.bin`);
      const cpu0 = process.cpuUsage();
      const up = await timed(() => way.up(remote));
      const cpu1 = process.cpuUsage();
      const down = await timed(() => way.down(remote, back));
      const cpu2 = process.cpuUsage();
      const cpuMs = (a: NodeJS.CpuUsage, b: NodeJS.CpuUsage) => (b.user - a.user + b.system - a.system) / 1000;
      if (sha(back) !== sum) throw new Error(`${name}: the file came back different`);
      rmSync(remote);
      rmSync(back);
      (rates[name] ??= { up: [], down: [], cpuUp: [], cpuDown: [] }).up.push(megabytes / up);
      rates[name].down.push(megabytes / down);
      // This process's CPU per MiB: what a busy machine's throughput depends on (scp's is its own process).
      rates[name].cpuUp.push(cpuMs(cpu0, cpu1) / megabytes);
      rates[name].cpuDown.push(cpuMs(cpu1, cpu2) / megabytes);
    }
  }
  console.log(`SFTP over loopback, ${megabytes} MiB file, median of ${rounds} rounds (MiB/s):`);
  for (const [name, r] of Object.entries(rates)) {
    const cpu = name.includes('scp') ? '' : `   client CPU ms/MiB: up ${median(r.cpuUp).toFixed(1)}, down ${median(r.cpuDown).toFixed(1)}`;
    console.log(`  ${name.padEnd(24)} upload ${median(r.up).toFixed(0).padStart(5)}   download ${median(r.down).toFixed(0).padStart(5)}${cpu}`);
  }
  const ours = rates['infbench (16 x 255 KiB)'];
  const scpRates = rates['OpenSSH scp'];
  console.log(
    `ratio infbench / scp: upload ${(median(ours.up) / median(scpRates.up)).toFixed(2)}x, download ${(median(ours.down) / median(scpRates.down)).toFixed(2)}x`,
  );
  console.log(`scp: ${spawnSync('ssh', ['-V'], { encoding: 'utf8' }).stderr.trim()} (scp speaks SFTP since OpenSSH 9.0)`);
  await transport.close();
  await sshd.stop();
  rmSync(dir, { recursive: true, force: true });
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
