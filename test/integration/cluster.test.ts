import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { PhaseContext } from '../../src/core/campaign/phaseContext';
import { startSimulator } from '../../src/core/macro/simulator';
import { clusterNodes, parseTarget, Target } from '../../src/core/config/target';
import { silentLogger } from '../../src/core/log';
import { MicroPoint } from '../../src/core/micro/tables';
import { NodeConnection } from '../../src/core/phases/collectives';
import { MicroPhaseOutcome, runMicroPhase } from '../../src/core/phases/micro';
import { RunFolder } from '../../src/core/runs/runFolder';
import { bundledAgentPath, deployAgent } from '../../src/remote/agentDeploy';
import { openTransport } from '../../src/remote/openTransport';
import { Transport } from '../../src/remote/transport';
import { makeKey, sshdSessionTree, startSshd, Sshd, writeClientConfig } from '../support/sshd';
import { waitFor } from '../support/waitFor';

// A cluster of two "hosts": two OpenSSH servers on loopback, each with its own host key, known_hosts
// entry and agent cache, reached by their own aliases. The collectives run through torch.distributed's
// env:// rendezvous with gloo on the CPU (Debian's python3-torch, as scripts/setup-test-env.sh installs),
// two ranks per host. Both hosts are this machine, so `ps` here sees every rank of both.
const TORCH_PYTHON = process.env.INFBENCH_TORCH_PYTHON ?? '/usr/bin/python3';
const HAS_TORCH = spawnSync(TORCH_PYTHON, ['-c', 'import torch'], { encoding: 'utf8' }).status === 0;
const USER = spawnSync('id', ['-un'], { encoding: 'utf8' }).stdout.trim();
// qwen3-30b-a3b (the agent's preset, from its published config.json): hidden 2048, top-8 of 128 experts, 48 layers, all MoE.
const HIDDEN = 2048;
const TOP_K = 8;
const LAYERS = 48;

/** Whether process `pid` was started in this test's SSH sessions: both sshds set XDG_CACHE_HOME under `dir`. */
function startedHere(pid: number, dir: string): boolean {
  try {
    return readFileSync(`/proc/${pid}/environ`, 'utf8')
      .split('\0')
      .some((v) => v.startsWith(`XDG_CACHE_HOME=${dir}/`));
  } catch {
    return false; // gone meanwhile
  }
}

/** This test's collective processes (both hosts), as ps lists them; another run's on the same machine are not ours to count. */
function ranksLeft(dir: string): string[] {
  const r = spawnSync('pgrep', ['-af', 'infbench_agent collective|\\.pyz collective'], { encoding: 'utf8' });
  return r.stdout
    .trim()
    .split('\n')
    .filter((l) => l && !l.includes('pgrep') && startedHere(Number(l.split(' ')[0]), dir));
}

/** The PID of the worker with global rank `rank`, from its environment (torchrun's RANK). */
function rankPid(rank: number, dir: string): number | undefined {
  const pids = spawnSync('pgrep', ['-f', 'collective --worker'], { encoding: 'utf8' }).stdout.trim().split('\n').filter(Boolean).map(Number);
  for (const pid of pids) {
    try {
      const env = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
      if (env.includes(`RANK=${rank}`) && startedHere(pid, dir)) return pid;
    } catch {
      // gone meanwhile
    }
  }
  return undefined;
}

(HAS_TORCH ? describe : describe.skip)('a cluster of two hosts over SSH', function () {
  this.timeout(180_000);
  const dir = mkdtempSync(join(tmpdir(), 'ib-cluster-'));
  const sshds: Sshd[] = [];
  let configFile = '';

  before(async () => {
    const key = makeKey(dir, 'client_ed25519');
    for (const name of ['alpha', 'beta']) {
      const cache = join(dir, `cache-${name}`);
      mkdirSync(cache, { mode: 0o700 });
      sshds.push(await startSshd({ authorizedKeys: [key.publicLine], extraConfig: [`SetEnv XDG_CACHE_HOME=${cache}`] }));
    }
    const host = (s: Sshd) => ['HostName 127.0.0.1', `Port ${s.port}`, `User ${USER}`, `IdentityFile ${key.privateFile}`, 'IdentityAgent none'];
    configFile = writeClientConfig(
      join(dir, 'client'),
      { alpha: host(sshds[0]), beta: host(sshds[1]) },
      sshds.map((s) => s.knownHostsLine),
    ).configFile;
  });
  after(async () => {
    for (const s of sshds) await s.stop();
  });
  afterEach(async () => {
    // Whatever a test did, no rank may outlive it on either host.
    await waitFor(`no collective process left (${ranksLeft(dir).join('; ')})`, () => ranksLeft(dir).length === 0, 5000);
  });

  /** Connects every node of the cluster target and deploys the agent on each. */
  async function connect(target: Target): Promise<{ nodes: NodeConnection[]; close: () => Promise<void> }> {
    const transports: Transport[] = [];
    const nodes: NodeConnection[] = [];
    for (const node of clusterNodes(target)) {
      const transport = await openTransport({ ...node, configFile, home: dir });
      transports.push(transport);
      nodes.push({ target: node, transport, agent: await deployAgent(transport, bundledAgentPath(), node.python) });
    }
    return { nodes, close: async () => void (await Promise.all(transports.map((t) => t.close()))) };
  }

  function context(target: Target, nodes: NodeConnection[], workspace: string, signal: AbortSignal, onRun: (points: MicroPoint[]) => void): PhaseContext {
    return {
      target,
      transport: nodes[0].transport,
      agent: nodes[0].agent,
      nodes,
      workspace,
      log: silentLogger,
      signal,
      sink: { runChanged: (run) => onRun((run.micro?.points ?? []) as MicroPoint[]), findings: () => undefined },
    };
  }

  /**
   * Micro's collectives on both hosts over a sweep long enough (40 sizes, 5 repeats) to be cut part-way;
   * `onPoints` sees the points as they arrive (where the fault tests below cut it).
   */
  async function longSweep(folder: string, onPoints: (points: MicroPoint[]) => void, signal = new AbortController().signal): Promise<MicroPhaseOutcome> {
    const target = parseTarget({ name: 'pair', nodes: ['alpha', 'beta'], python: TORCH_PYTHON });
    const { nodes, close } = await connect(target);
    const workspace = join(dir, folder);
    mkdirSync(workspace);
    try {
      return await runMicroPhase(context(target, nodes, workspace, signal, onPoints), {
        model: 'qwen3-30b-a3b',
        device: 'cpu',
        skip: ['peak', 'gemm', 'launch'],
        m: Array.from({ length: 40 }, (_, i) => i + 1),
        arWorldSize: 2,
        repeats: 5,
      });
    } finally {
      await close();
    }
  }

  it('infbench micro --target alpha,beta: all-reduce and all-to-all across both hosts at the decode sizes of the model, and the EP budget', () => {
    assert.ok(existsSync('dist/cli.js') && existsSync('dist/agent.pyz'), 'dist/ is missing: run `npm run build` first');
    const workspace = join(dir, 'cli');
    mkdirSync(workspace);
    const m = [1, 4, 16];
    const r = spawnSync(
      process.execPath,
      [
        resolve('dist/cli.js'),
        'micro',
        '--target',
        'alpha,beta',
        '--ssh-config',
        configFile,
        '--python',
        TORCH_PYTHON,
        '--workspace',
        workspace,
        '--model',
        'qwen3-30b-a3b',
        '--device',
        'cpu',
        '--skip',
        'peak,gemm,launch',
        '--m',
        m.join(','),
        '--ar-world-size',
        '2',
        '--repeats',
        '2',
      ],
      { encoding: 'utf8', env: { ...process.env, HOME: dir } },
    );
    assert.equal(r.status, 0, r.stderr);
    const [id] = readdirSync(join(workspace, '.inference-bench', 'runs'));
    const run = RunFolder.open(join(workspace, '.inference-bench', 'runs', id));
    assert.equal(run.info.status, 'completed', run.info.reason);
    const result = run.readResult<{ points: MicroPoint[]; cluster: { nodes: { where: string; rankOffset: number; ranks: number }[] } }>()!;
    assert.deepEqual(
      result.cluster.nodes.map((n) => [n.rankOffset, n.ranks]),
      [
        [0, 2],
        [2, 2],
      ],
    );
    // Each host's own event log, beside the run's.
    assert.deepEqual(readdirSync(join(run.dir, 'nodes')).sort(), ['0-alpha', '1-beta']);
    for (const host of ['0-alpha', '1-beta']) assert.ok(readFileSync(join(run.dir, 'nodes', host, 'events.jsonl'), 'utf8').includes('"type":"done","t":'));

    const world = 4;
    for (const [kind, scope, n] of [
      ['allreduce', 'inter-node', world],
      ['allreduce', 'intra-node', 2],
      ['alltoall', 'inter-node', world],
      ['alltoall', 'intra-node', 2],
    ] as const) {
      const points = result.points.filter((p) => p.kind === kind && p.scope === scope);
      // The sizes a decode step moves: M x hidden x 2 for all-reduce; ceil(M / W) tokens x top-k x hidden x 2 per rank for all-to-all.
      const want = [...new Set(m.map((x) => (kind === 'allreduce' ? x * HIDDEN * 2 : Math.ceil((Math.ceil(x / world) * TOP_K * HIDDEN) / world) * world * 2)))];
      assert.deepEqual(
        points.map((p) => p.bytes),
        want,
        `${kind} ${scope} sizes`,
      );
      for (const p of points) {
        assert.equal(p.world_size, n);
        assert.equal(p.backend, 'gloo');
        const algbw = Number(p.bytes) / Number(p.us) / 1e3;
        assert.ok(Math.abs(Number(p.algbw_gbps) - algbw) < 1e-9 * algbw + 1e-12);
        // nccl-tests: all-reduce busbw = algbw x 2(n-1)/n, all-to-all busbw = algbw x (n-1)/n.
        const factor = kind === 'allreduce' ? (2 * (n - 1)) / n : (n - 1) / n;
        assert.ok(Math.abs(Number(p.busbw_gbps) - algbw * factor) < 1e-9 * algbw + 1e-12, `${kind} busbw`);
      }
    }
    // The terminal's tables: both collectives across the hosts, and the budget per decode step.
    assert.match(r.stdout, /All-reduce across 2 hosts \(gloo, 4 processes, fp16\)/);
    assert.match(r.stdout, /All-to-all across 2 hosts \(gloo, 4 processes, fp16\)/);
    assert.match(r.stdout, /tensor-parallel all-reduce vs expert-parallel all-to-all \(4 ranks, across hosts\)/);
    const arAt1 = result.points.find((p) => p.kind === 'allreduce' && p.scope === 'inter-node' && p.m === 1)!;
    const tpMs = (2 * LAYERS * Number(arAt1.us)) / 1000;
    const row = r.stdout.split('\n').find((l) => /^\s*1\s/.test(l) && l.includes(tpMs.toFixed(3)));
    assert.ok(row, `the budget row for M=1 with TP ${tpMs.toFixed(3)} ms:\n${r.stdout}`);
  });

  it('infbench probe --target alpha,beta probes every host over its own connection, each in its own run, with its network', () => {
    const workspace = join(dir, 'probe');
    mkdirSync(workspace);
    const r = spawnSync(
      process.execPath,
      [resolve('dist/cli.js'), 'probe', '--target', 'alpha,beta', '--ssh-config', configFile, '--workspace', workspace, '--url', 'http://127.0.0.1:9'],
      { encoding: 'utf8', env: { ...process.env, HOME: dir } },
    );
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^Target alpha,beta \(ssh alpha\)$/m);
    assert.match(r.stdout, /^Target alpha,beta\/beta \(ssh beta\)$/m);
    // Each host says which links NCCL would take between hosts (here: no RDMA device, sockets over the interfaces that are up).
    assert.equal((r.stdout.match(/^Network: (RDMA|no RDMA device \(NCCL uses sockets between hosts\)).*; interfaces up: /gm) ?? []).length, 2);
    const runs = readdirSync(join(workspace, '.inference-bench', 'runs')).map((id) => RunFolder.open(join(workspace, '.inference-bench', 'runs', id)).info);
    assert.deepEqual(runs.map((m) => [m.phase, m.target, m.status]).sort(), [
      ['probe', 'alpha,beta', 'completed'],
      ['probe', 'alpha,beta/beta', 'completed'],
    ]);
  });

  it("infbench profile --target alpha,beta collects each host's traces over its own connection, each rank once", async () => {
    // The simulated server writes both ranks' traces in one folder, which both hosts see (one machine):
    // a trace folder shared by the hosts, as an NFS mount is. Beta finds the same files and each is fetched once.
    const traceDir = join(dir, 'traces');
    const sim = await startSimulator({ port: 0, profilerDir: traceDir, worldSize: 2 });
    const workspace = join(dir, 'profile');
    mkdirSync(workspace);
    try {
      const r = spawnSync(
        process.execPath,
        [
          resolve('dist/cli.js'),
          'profile',
          '--target',
          'alpha,beta',
          '--ssh-config',
          configFile,
          '--workspace',
          workspace,
          '--url',
          sim.url,
          '--concurrency',
          '2',
          '--output-len',
          '16',
        ],
        { encoding: 'utf8', env: { ...process.env, HOME: dir } },
      );
      assert.equal(r.status, 0, r.stderr);
      const [id] = readdirSync(join(workspace, '.inference-bench', 'runs'));
      const run = join(workspace, '.inference-bench', 'runs', id);
      // Beta looked in the same folder on its side and reported the files the head had.
      const beta = readFileSync(join(run, 'nodes', '1-beta', 'events.jsonl'), 'utf8');
      assert.equal((beta.match(/"type":"profile.trace"/g) ?? []).length, 2);
      assert.match(r.stderr, /is the file the head reported \(a shared folder\); fetched once/);
      const traces = readdirSync(join(run, 'traces')).sort();
      assert.equal(traces.length, 2, traces.join(', '));
      const result = JSON.parse(readFileSync(join(run, 'result.json'), 'utf8')) as { ranks: { rank: number }[] };
      assert.deepEqual(result.ranks.map((x) => x.rank).sort(), [0, 1]);
    } finally {
      await sim.stop();
    }
  });

  it("a micro run with the server's API key finds the model through the keyed server and measures across both hosts", async () => {
    // vLLM 0.16 started with --api-key refuses /v1/models without it; its model is served under the path of a config.json here.
    const key = 'sk-cluster-key-0123456789';
    const sim = await startSimulator({ extraArgs: ['--mimic', 'vllm-0.16', '--api-key', key, '--served-model-name', resolve('test/fixtures/micro/tiny-moe')] });
    const target = parseTarget({ name: 'pair', nodes: ['alpha', 'beta'], python: TORCH_PYTHON, serverUrl: sim.url });
    const { nodes, close } = await connect(target);
    const workspace = join(dir, 'api-key');
    mkdirSync(workspace);
    try {
      const outcome = await runMicroPhase(
        { ...context(target, nodes, workspace, new AbortController().signal, () => undefined), apiKey: key },
        { device: 'cpu', skip: ['peak', 'gemm', 'launch'], m: [1, 4], arWorldSize: 2, repeats: 1 },
      );
      assert.equal(outcome.summary.status, 'completed', outcome.summary.reason);
      const result = outcome.run.readResult<{ points: MicroPoint[]; cluster: { plan: { model: string; hidden: number; top_k: number } } }>()!;
      // tiny-moe's config.json: hidden 256, top-4 experts.
      assert.deepEqual([result.cluster.plan.hidden, result.cluster.plan.top_k], [256, 4]);
      assert.ok(result.points.some((p) => p.kind === 'alltoall' && p.scope === 'inter-node'));
      for (const file of ['events.jsonl', 'nodes/0-alpha/events.jsonl', 'result.json'])
        assert.ok(!readFileSync(join(outcome.run.dir, file), 'utf8').includes(key), `the key is not in ${file}`);
    } finally {
      await close();
      await sim.stop();
    }
  });

  it('a rank killed mid-run stops every rank on both hosts, and the run names the host and the rank', async () => {
    let killed = false;
    const outcome = await longSweep('killed', (points) => {
      // Once the collectives are under way, rank 3 (beta's second) dies as an out-of-memory kill would end it.
      if (!killed && points.length >= 1) {
        const pid = rankPid(3, dir);
        if (pid) {
          process.kill(pid, 'SIGKILL');
          killed = true;
        }
      }
    });
    assert.ok(killed, 'rank 3 was found and killed');
    assert.equal(outcome.summary.status, 'failed');
    assert.match(outcome.summary.reason ?? '', /^ssh beta.* failed: Rank 3 \(local rank 1 on .*\) was killed by signal 9/);
    assert.match(outcome.summary.reason ?? '', /The ranks on ssh alpha.* were stopped with it/);
    const kept = outcome.run.readResult<{ points: MicroPoint[]; cluster: { status: string } }>()!;
    assert.ok(kept.points.length >= 1, 'the points measured before the kill are kept');
    assert.equal(kept.cluster.status, 'failed');
    assert.equal(RunFolder.open(outcome.run.dir).info.status, 'failed');
  });

  it('a dropped connection to one host stops every rank on both hosts, and the run says which connection dropped', async () => {
    let dropped = false;
    const outcome = await longSweep('dropped', (points) => {
      // Beta's sshd sessions die (a host rebooted, a link reset): its connection goes, the host keeps running.
      if (!dropped && points.length >= 1) {
        dropped = true;
        for (const pid of sshdSessionTree(sshds[1])) process.kill(pid, 'SIGKILL');
      }
    });
    assert.ok(dropped);
    assert.equal(outcome.summary.status, 'interrupted', outcome.summary.reason);
    assert.match(outcome.summary.reason ?? '', /^ssh beta.* failed: The connection to ssh beta.* dropped mid-run/);
    assert.ok(outcome.run.readResult<{ points: MicroPoint[] }>()!.points.length >= 1, 'the points measured before the drop are kept');
  });

  it('Cancel mid-sweep stops the ranks on both hosts and keeps the points measured so far', async () => {
    const abort = new AbortController();
    const outcome = await longSweep(
      'cancelled',
      (points) => {
        if (points.length >= 2) abort.abort();
      },
      abort.signal,
    );
    assert.equal(outcome.summary.status, 'cancelled', outcome.summary.reason);
    const kept = outcome.run.readResult<{ points: MicroPoint[] }>()!;
    assert.ok(kept.points.length >= 2 && kept.points.length < 80, `${kept.points.length} points kept`);
    assert.equal(RunFolder.open(outcome.run.dir).info.status, 'cancelled');
  });
});
