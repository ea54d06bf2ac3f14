import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nullSink, PhaseContext, ResultSink } from '../../src/core/campaign/phaseContext';
import { Target } from '../../src/core/config/target';
import { silentLogger } from '../../src/core/log';
import { RunningSimulator, startSimulator } from '../../src/core/macro/simulator';
import { runProbePhase } from '../../src/core/phases/probe';
import { probeSummaryLines } from '../../src/core/probe/tables';
import { RunFolder } from '../../src/core/runs/runFolder';
import { readStoredRun } from '../../src/core/runs/storedRuns';
import { RunSummary } from '../../src/shared/results';
import { bundledAgentPath, deployAgent } from '../../src/remote/agentDeploy';
import { LocalTransport } from '../../src/remote/localTransport';
import { openTransport } from '../../src/remote/openTransport';
import { Transport } from '../../src/remote/transport';
import { makeKey, startSshd, Sshd, writeClientConfig } from '../support/sshd';

const USER = spawnSync('id', ['-un'], { encoding: 'utf8' }).stdout.trim();

async function probeOver(transport: Transport, target: Target, sink: ResultSink = nullSink, workspace = mkdtempSync(join(tmpdir(), 'ib-ws-'))) {
  const agent = await deployAgent(transport, bundledAgentPath(), target.python);
  const ctx: PhaseContext = { target, transport, agent, workspace, sink, log: silentLogger };
  return runProbePhase(ctx);
}

describe('probe', function () {
  this.timeout(60_000);
  let sim: RunningSimulator;
  let sshd: Sshd;
  const dir = mkdtempSync(join(tmpdir(), 'ib-probe-'));
  let sshConfig: string;

  before(async () => {
    sim = await startSimulator({ profilerDir: join(dir, 'traces') });
    const key = makeKey(dir, 'client');
    sshd = await startSshd({ authorizedKeys: [key.publicLine] });
    sshConfig = writeClientConfig(
      join(dir, 'client-config'),
      {
        gpubox: ['HostName 127.0.0.1', `Port ${sshd.port}`, `User ${USER}`, `IdentityFile ${key.privateFile}`, 'IdentityAgent none'],
      },
      [sshd.knownHostsLine],
    ).configFile;
  });

  after(async () => {
    await sim?.stop();
    await sshd?.stop();
  });

  it('over the local transport: finds the server, its model and its profiler, and keeps the run', async () => {
    const target: Target = { name: 'here', kind: 'local', serverUrl: sim.url, python: 'python3' };
    const changes: string[] = [];
    const updates: { sectionId: string; lines: string[] }[] = [];
    const transport = new LocalTransport();
    const outcome = await probeOver(transport, target, { runChanged: (r) => changes.push(r.status), findings: (f) => updates.push(f) });
    await transport.close();
    assert.equal(outcome.agent.status, 'completed');
    const server = outcome.result!.server;
    assert.equal(server.reachable, true);
    assert.equal(server.simulated, true);
    assert.equal(server.models[0].id, sim.model);
    assert.equal(server.profiler.enabled, true);
    assert.equal(server.pid, sim.process.pid);
    assert.deepEqual(changes, ['running', 'completed']);
    // The document's header from the probe, then the probe's own Environment block.
    assert.deepEqual(
      updates.map((u) => u.sectionId),
      ['campaign', 'probe-here'],
    );
    assert.ok(
      updates[0].lines.some((l) => l.includes(sim.model)),
      'the header names the served model',
    );
    const onDisk = RunFolder.open(outcome.run.dir);
    assert.equal(onDisk.info.status, 'completed');
    assert.equal(onDisk.info.simulated, true);
    assert.deepEqual(onDisk.readResult(), outcome.result);
    assert.deepEqual(
      onDisk.readEvents().map((e) => (e as { type: string }).type),
      ['hello', 'probe', 'result', 'done'],
    );
    assert.ok(probeSummaryLines(outcome.result!).some((l) => l.includes('profiler: enabled')));
    // The results view draws what the probe found, live and from the run folder alike (a CLI run has no saved view).
    const facts = (view: RunSummary['probe']) => Object.fromEntries((view?.tables[0].rows ?? []).map((r) => [r.what, String(r.value)]));
    for (const view of [outcome.summary.probe, (await readStoredRun(outcome.run.dir))?.probe]) {
      const found = facts(view);
      assert.match(found.Python ?? '', new RegExp(outcome.result!.python.version.replace(/\./g, '\\.')));
      assert.match(found['Command line'] ?? '', new RegExp(`pid ${sim.process.pid}`));
      assert.match(found.Profiler ?? '', /^enabled/);
      assert.ok(found.Models?.startsWith(sim.model), found.Models);
    }
  });

  it('describes every target the campaign probed in the findings header, not only the last one', async () => {
    const workspace = mkdtempSync(join(tmpdir(), 'ib-ws-'));
    const transport = new LocalTransport();
    const headers: string[] = [];
    const sink: ResultSink = { runChanged: () => undefined, findings: (f) => (f.sectionId === 'campaign' ? headers.push(f.lines.join('\n')) : undefined) };
    await probeOver(transport, { name: 'box-vllm', kind: 'local', serverUrl: sim.url, python: 'python3' }, sink, workspace);
    // A second server on the same machine, probed later: it is not answering (nothing on that port).
    await probeOver(transport, { name: 'box-sglang', kind: 'local', serverUrl: 'http://127.0.0.1:9', python: 'python3' }, sink, workspace);
    await transport.close();
    assert.doesNotMatch(headers[0], /Targets:/, 'one target: the header as before');
    const [, sglang, vllm] = headers[1].split('\n');
    assert.match(headers[1], /^- \*\*Targets:\*\* 2$/m);
    assert.match(sglang, /^ {2}- \*\*box-sglang \(this machine\):\*\* .*not answering at http:\/\/127\.0\.0\.1:9/);
    assert.match(vllm, new RegExp(`^ {2}- \\*\\*box-vllm \\(host [^)]+\\):\\*\\* .*${sim.model.replace(/[.()]/g, '\\$&')}`));
  });

  it('over SSH: the agent is copied through the connection and probes the host', async () => {
    const target: Target = { name: 'gpubox', kind: 'ssh', host: 'gpubox', serverUrl: sim.url, python: 'python3' };
    const transport = await openTransport({ ...target, configFile: sshConfig, home: dir });
    try {
      const outcome = await probeOver(transport, target);
      assert.equal(outcome.agent.status, 'completed', outcome.agent.reason);
      assert.equal(outcome.result!.server.models[0].id, sim.model);
      assert.equal(outcome.result!.server.profiler.enabled, true);
    } finally {
      await transport.close();
    }
  });

  it('infbench probe over SSH refuses an unknown host key unless --accept-new-host-key', () => {
    const c = writeClientConfig(
      join(dir, 'cli-config'),
      {
        gpubox: ['HostName 127.0.0.1', `Port ${sshd.port}`, `User ${USER}`, `IdentityFile ${join(dir, 'client')}`, 'IdentityAgent none'],
      },
      [],
    );
    const args = ['dist/cli.js', 'probe', '--target', 'gpubox', '--ssh-config', c.configFile, '--url', sim.url, '--workspace', dir];
    const refused = spawnSync('node', args, { encoding: 'utf8' });
    assert.equal(refused.status, 1);
    assert.match(refused.stderr, /host key of \[127\.0\.0\.1\]:\d+ is not in .*SHA256:/);
    assert.match(refused.stderr, /--accept-new-host-key/);

    const accepted = spawnSync('node', [...args, '--accept-new-host-key'], { encoding: 'utf8' });
    assert.equal(accepted.status, 0, accepted.stderr);
    assert.match(accepted.stdout, /SIMULATOR \(vLLM API\) at http/);
    assert.match(accepted.stdout, new RegExp(`model ${sim.model.replace(/[()]/g, '\\$&')}`));
    assert.match(readFileSync(c.knownHosts, 'utf8'), new RegExp(`^\\[127\\.0\\.0\\.1\\]:${sshd.port} ssh-ed25519 `));
  });
});
