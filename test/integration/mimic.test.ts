import * as assert from 'node:assert/strict';
import { ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { waitFor } from '../support/waitFor';

// probe, macro and profile through the `infbench` CLI against the simulator's --mimic profiles: each
// behaves as one vLLM or SGLang version where versions differ (profiler flags and variables,
// --api-key, endpoints, trace file names, step names; simulator/README.md cites the upstream file
// for each). Every server here is started as its users start it: an API key, a relative or `~`
// trace folder resolved in the server's own working directory, its own parallel flags.

const SECRET = 'sk-planted-secret-7f3a9c2e';
const HF_SECRET = 'hf_plantedHuggingFaceToken12345';

interface Sim {
  url: string;
  proc: ChildProcess;
  cwd: string;
  home: string;
}

async function startMimic(mimic: string, flags: string[], env: Record<string, string> = {}): Promise<Sim> {
  const cwd = mkdtempSync(join(tmpdir(), `ib-mimic-${mimic}-`));
  const home = join(cwd, 'home');
  mkdirSync(home);
  const proc = spawn(
    'python3',
    [
      '-u',
      join(process.cwd(), 'simulator/vllm_sim.py'),
      '--port',
      '0',
      '--step-base-ms',
      '4',
      '--step-per-seq-ms',
      '0.1',
      '--prefill-per-token-ms',
      '0.001',
      '--layers',
      '2',
      '--mimic',
      mimic,
      ...flags,
    ],
    {
      cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, HOME: home, ...env },
    },
  );
  let stderr = '';
  proc.stderr!.on('data', (b: Buffer) => (stderr += b.toString()));
  const rl = createInterface({ input: proc.stdout! });
  const url = await new Promise<string>((resolve, reject) => {
    rl.once('line', (line) => resolve((JSON.parse(line) as { url: string }).url));
    proc.once('exit', (code) => reject(new Error(`the simulator exited (${code}) before it was ready: ${stderr}`)));
  });
  return { url, proc, cwd, home };
}

interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

function cli(
  args: string[],
  options: { env?: Record<string, string>; onStderr?: (text: string, child: ChildProcess) => void } = {},
): { child: ChildProcess; done: Promise<CliRun> } {
  const child = spawn(process.execPath, ['bin/infbench.js', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, INFBENCH_API_KEY: '', OPENAI_API_KEY: '', XDG_CACHE_HOME: cache, ...options.env },
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (b: Buffer) => (stdout += b.toString()));
  child.stderr!.on('data', (b: Buffer) => {
    stderr += b.toString();
    options.onStderr?.(stderr, child);
  });
  const done = new Promise<CliRun>((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
  return { child, done };
}

/** The simulator's own record of its profiler (not a server endpoint): is a profile left running? */
async function profilerState(sim: Sim): Promise<{ profiling: boolean; profile_starts: number; profile_stops: number }> {
  return (await (await fetch(`${sim.url}/inference-bench-simulator/state`)).json()) as { profiling: boolean; profile_starts: number; profile_stops: number };
}

function newestRun(workspace: string, phase: string): string {
  const root = join(workspace, '.inference-bench', 'runs');
  const runs = readdirSync(root)
    .filter((d) => d.endsWith(`-${phase}`))
    .sort();
  return join(root, runs[runs.length - 1]);
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? filesUnder(p) : [p];
  });
}

const cache = mkdtempSync(join(tmpdir(), 'ib-mimic-cache-'));

// Each version as its users start it, with the torch profiler writing to a relative or `~` folder.
const VERSIONS: { mimic: string; kind: string; version: string; flags: string[]; env?: Record<string, string>; ranks: number; folder: (s: Sim) => string }[] = [
  {
    mimic: 'vllm-0.10',
    kind: 'vllm',
    version: '0.10.2',
    flags: ['-tp', '2'],
    env: { VLLM_TORCH_PROFILER_DIR: './vllm_profile' },
    ranks: 2,
    folder: (s) => join(s.cwd, 'vllm_profile'),
  },
  {
    mimic: 'vllm-0.11',
    kind: 'vllm',
    version: '0.11.2',
    flags: ['-tp', '2'],
    env: { VLLM_TORCH_PROFILER_DIR: '~/traces' },
    ranks: 2,
    folder: (s) => join(s.home, 'traces'),
  },
  {
    mimic: 'vllm-0.13',
    kind: 'vllm',
    version: '0.13.0',
    flags: ['--tensor-parallel-size', '2', '--profiler-config.profiler', 'torch', '--profiler-config.torch_profiler_dir', 'prof'],
    ranks: 2,
    folder: (s) => join(s.cwd, 'prof'),
  },
  {
    mimic: 'vllm-0.16',
    kind: 'vllm',
    version: '0.16.0',
    flags: ['-tp', '2', '-dp', '2', '--profiler-config', '{"profiler":"torch","torch_profiler_dir":"./vllm_profile"}'],
    ranks: 4,
    folder: (s) => join(s.cwd, 'vllm_profile'),
  },
  {
    mimic: 'vllm-0.26',
    kind: 'vllm',
    version: '0.26.0',
    flags: ['-tp', '2', '--profiler-config', '{"profiler":"torch","torch_profiler_dir":"~/p"}'],
    ranks: 2,
    folder: (s) => join(s.home, 'p'),
  },
  {
    mimic: 'sglang-0.4',
    kind: 'sglang',
    version: '0.4.6.post1',
    flags: ['--tp', '2', '--enable-metrics'],
    env: { SGLANG_TORCH_PROFILER_DIR: './sgl' },
    ranks: 2,
    folder: (s) => join(s.cwd, 'sgl'),
  },
  {
    mimic: 'sglang-0.5',
    kind: 'sglang',
    version: '0.5.3',
    flags: ['--tp-size', '2', '--dp-size', '2', '--enable-dp-attention'],
    env: { SGLANG_TORCH_PROFILER_DIR: 'sgl' },
    ranks: 2,
    folder: (s) => join(s.cwd, 'sgl'),
  },
];

describe('probe, macro and profile against each server version the simulator mimics', function () {
  this.timeout(240_000);
  const sims: Sim[] = [];
  after(() => sims.forEach((s) => s.proc.kill('SIGTERM')));

  for (const v of VERSIONS) {
    it(`${v.mimic}: probe, macro and profile with its API key and its own trace folder (${v.ranks} ranks)`, async () => {
      const sim = await startMimic(v.mimic, [...v.flags, '--api-key', SECRET], v.env);
      sims.push(sim);
      const workspace = mkdtempSync(join(tmpdir(), 'ib-mimic-ws-'));
      const common = ['--target', 'local', '--url', sim.url, '--workspace', workspace, '--api-key', SECRET];

      const probe = await cli(['probe', ...common, '--json']).done;
      assert.equal(probe.code, 0, probe.stderr);
      const server = (JSON.parse(probe.stdout) as { server: Record<string, unknown> }).server;
      assert.equal(server.kind, v.kind);
      assert.equal(server.version, v.version);
      assert.equal(server.simulated, true);
      assert.ok((server.models as unknown[]).length === 1, 'the model is listed with the key');
      assert.equal((server.profiler as { enabled: boolean }).enabled, true);
      assert.equal((server.parallel as { ranks: number } | null)?.ranks, v.ranks);

      const macro = await cli([
        'macro',
        ...common,
        '--concurrency',
        '1',
        '--requests',
        '3',
        '--warmup',
        '0',
        '--input-len',
        '16',
        '--output-len',
        '6',
        '--json',
      ]).done;
      assert.equal(macro.code, 0, macro.stderr);
      const level = (JSON.parse(macro.stdout) as { levels: Record<string, unknown>[] }).levels[0];
      assert.equal(level.completed, 3);
      const metrics = level.server_metrics as { available: boolean; note?: string };
      if (v.mimic === 'sglang-0.5') assert.match(metrics.note ?? '', /--enable-metrics/, 'SGLang without --enable-metrics has no /metrics');
      else assert.equal(metrics.available, true, metrics.note);

      const profile = await cli(['profile', ...common, '--concurrency', '2', '--output-len', '8', '--input-len', '16', '--json']).done;
      assert.equal(profile.code, 0, profile.stderr);
      const breakdown = JSON.parse(profile.stdout) as { ranks: { rank: number }[] };
      assert.equal(breakdown.ranks.length, v.ranks);
      const events = readFileSync(join(newestRun(workspace, 'profile'), 'events.jsonl'), 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      const traces = events.filter((e) => e.type === 'profile.trace' && !e.frontend);
      assert.equal(traces.length, v.ranks);
      for (const t of traces) assert.ok(String(t.path).startsWith(v.folder(sim)), `${String(t.path)} is not in ${v.folder(sim)}`);
      assert.equal((await profilerState(sim)).profiling, false, 'the profile was stopped');
    });
  }

  it("vllm-0.16: VLLM_TORCH_PROFILER_DIR alone means nothing there, and the advice is the version's own flag", async () => {
    const sim = await startMimic('vllm-0.16', ['-tp', '2'], { VLLM_TORCH_PROFILER_DIR: '/tmp/never' });
    sims.push(sim);
    const workspace = mkdtempSync(join(tmpdir(), 'ib-mimic-ws-'));
    const common = ['--target', 'local', '--url', sim.url, '--workspace', workspace];
    const probe = await cli(['probe', ...common, '--json']).done;
    const profiler = (JSON.parse(probe.stdout) as { server: { profiler: { enabled: boolean; evidence: string } } }).server.profiler;
    assert.equal(profiler.enabled, false);
    assert.match(profiler.evidence, /ignores it \(removed in 0\.16/);
    const profile = await cli(['profile', ...common]).done;
    assert.equal(profile.code, 1);
    assert.match(profile.stderr, /--profiler-config '\{"profiler":"torch","torch_profiler_dir":/);
    assert.doesNotMatch(profile.stderr, /set VLLM_TORCH_PROFILER_DIR/);
  });

  it('vllm-0.13: the CUDA profiler is named at once, with nsys as the tool, and no profile is started', async () => {
    const sim = await startMimic('vllm-0.13', ['--profiler-config', '{"profiler":"cuda"}']);
    sims.push(sim);
    const workspace = mkdtempSync(join(tmpdir(), 'ib-mimic-ws-'));
    const probe = await cli(['probe', '--target', 'local', '--url', sim.url, '--workspace', workspace]).done;
    assert.match(probe.stdout, /profiler: CUDA profiler \(no torch traces\)/);
    const profile = await cli(['profile', '--target', 'local', '--url', sim.url, '--workspace', workspace]).done;
    assert.equal(profile.code, 1);
    assert.match(profile.stderr, /CUDA profiler .*writes no torch trace/);
    assert.match(profile.stderr, /nsys profile/);
    assert.equal((await profilerState(sim)).profile_starts, 0);
  });

  it('a server with --api-key: probe and profile say it wants a key, and how to give it', async () => {
    const sim = await startMimic('vllm-0.16', ['--profiler-config', '{"profiler":"torch","torch_profiler_dir":"./t"}', '--api-key', SECRET]);
    sims.push(sim);
    const workspace = mkdtempSync(join(tmpdir(), 'ib-mimic-ws-'));
    const common = ['--target', 'local', '--url', sim.url, '--workspace', workspace];
    const probe = await cli(['probe', ...common]).done;
    assert.match(probe.stdout, /API key: .*answered HTTP 401: this server wants an API key.*--api-key KEY.*OPENAI_API_KEY/);
    const profile = await cli(['profile', ...common, '--model', 'm']).done;
    assert.equal(profile.code, 1);
    assert.match(profile.stderr, /401: this server wants an API key/);
    assert.equal((await profilerState(sim)).profile_starts, 0);
  });

  it('keeps the planted secrets out of the terminal, the run folders and the findings document', async () => {
    // No profiler: the profile's advice rebuilds the server's command line, --api-key and --hf-token included.
    const sim = await startMimic('vllm-0.16', ['--api-key', SECRET, '--hf-token', HF_SECRET, '-tp', '2'], { HF_TOKEN: HF_SECRET });
    sims.push(sim);
    const workspace = mkdtempSync(join(tmpdir(), 'ib-mimic-ws-'));
    writeFileSync(join(workspace, 'doc.md'), '# Campaign\n');
    const common = ['--target', 'local', '--url', sim.url, '--workspace', workspace, '--findings', 'doc.md'];
    const runs = [
      await cli(['probe', ...common], { env: { OPENAI_API_KEY: SECRET } }).done,
      await cli(['probe', ...common, '--json'], { env: { INFBENCH_API_KEY: SECRET } }).done,
      await cli(['macro', ...common, '--concurrency', '1', '--requests', '2', '--warmup', '0', '--output-len', '4', '--api-key', SECRET]).done,
      await cli(['profile', ...common, '--api-key', SECRET]).done,
    ];
    assert.equal(runs[2].code, 0, runs[2].stderr);
    assert.match(runs[3].stderr, /For this server \(secrets in it are shown as REDACTED: put yours back\): .*--api-key REDACTED --hf-token REDACTED/);
    assert.match(runs[0].stdout, /--api-key REDACTED/, 'the probe shows the command line, redacted');
    const outputs = [...runs.flatMap((r) => [r.stdout, r.stderr]), ...filesUnder(workspace).map((f) => readFileSync(f, 'utf8'))];
    assert.ok(filesUnder(workspace).some((f) => f.endsWith('meta.json')) && filesUnder(workspace).some((f) => f.endsWith('events.jsonl')));
    for (const secret of [SECRET, HF_SECRET]) {
      const leaks = outputs.filter((o) => o.includes(secret));
      assert.equal(
        leaks.length,
        0,
        `${secret} leaked: ${leaks.map((l) => l.slice(Math.max(0, l.indexOf(secret) - 200), l.indexOf(secret) + 50)).join('\n---\n')}`,
      );
    }
  });
});

describe("cancelling profile stops the server's profiler", function () {
  this.timeout(120_000);
  let sim: Sim | undefined;
  afterEach(() => sim?.proc.kill('SIGTERM'));

  async function profilingServer(): Promise<Sim> {
    // 4 ms steps and 3000 tokens (below): the workload runs for about 12 s, time to cut it off.
    const s = await startMimic('vllm-0.16', ['--profiler-config', '{"profiler":"torch","torch_profiler_dir":"./t"}']);
    return s;
  }

  const slow = ['--concurrency', '1', '--output-len', '3000', '--input-len', '8'];

  it('Ctrl-C of infbench profile calls /stop_profile', async () => {
    sim = await profilingServer();
    const workspace = mkdtempSync(join(tmpdir(), 'ib-mimic-ws-'));
    const run = cli(['profile', '--target', 'local', '--url', sim.url, '--workspace', workspace, ...slow]);
    const s = sim;
    await waitFor('the profile to start', async () => (await profilerState(s)).profiling, 20_000);
    run.child.kill('SIGINT');
    const result = await run.done;
    assert.equal(result.code, 130, result.stderr);
    await waitFor('the profiler to be stopped', async () => !(await profilerState(s)).profiling, 5000);
    assert.equal((await profilerState(s)).profile_stops, 1);
    const events = readFileSync(join(newestRun(workspace, 'profile'), 'events.jsonl'), 'utf8');
    assert.match(events, /cancelled: stopped the server's profiler/);
  });

  for (const how of ['SIGTERM', 'SIGHUP', 'a dropped connection'] as const) {
    it(`the agent stops the profiler on ${how}`, async () => {
      sim = await profilingServer();
      const s = sim;
      const agent = spawn('python3', ['dist/agent.pyz', 'profile', '--url', s.url, ...slow], { stdio: ['ignore', 'pipe', 'pipe'] });
      const lines = createInterface({ input: agent.stdout! });
      await new Promise<void>((resolve) =>
        lines.on('line', (l) => {
          if (l.includes('"stage":"workload"')) resolve();
        }),
      );
      await waitFor('the profile to start', async () => (await profilerState(s)).profiling, 20_000);
      const exited = new Promise<number | null>((resolve) => agent.on('exit', (code) => resolve(code)));
      if (how === 'a dropped connection') {
        // The controller's end of the pipe goes away while the agent runs on: its next line fails.
        lines.close();
        agent.stdout!.destroy();
      } else agent.kill(how);
      await waitFor('the profiler to be stopped', async () => !(await profilerState(s)).profiling, 10_000);
      assert.equal((await profilerState(s)).profile_stops, 1);
      await exited;
    });
  }
});
