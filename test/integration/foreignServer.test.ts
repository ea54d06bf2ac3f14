import * as assert from 'node:assert/strict';
import { ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { FindingsUpdate, PhaseContext } from '../../src/core/campaign/phaseContext';
import { Logger } from '../../src/core/log';
import { runMacroPhase } from '../../src/core/phases/macro';
import { deployAgent, DeployedAgent } from '../../src/remote/agentDeploy';
import { LocalTransport } from '../../src/remote/localTransport';
import { MacroLevelSummary } from '../../src/shared/results';

// The product against an OpenAI-compatible server that is not ours: test/fixtures/foreign-server
// (Node, no /health, /version, /tokenize, /metrics or /start_profile; exact pacing: first token T0 ms
// after the request arrives, then one every D ms per stream, no batching). The known answers:
// TTFT = T0, TPOT = ITL = D at every concurrency, output tokens = --output-len.
//
// Tolerances, and why:
// - TTFT (median): T0 - 1 ms .. T0 + 5% + 5 ms + the server's own lateness. The server's clock starts
//   after the client stamped the send, so TTFT is never short of T0 except by Node's timers, which
//   compare against the event loop's cached time and may fire up to ~1 ms early. Above: the server's
//   first tokens leave late when its timers fire late (a loaded host: it reports by how much, GET
//   /lateness), which is what it served, so that counts on top; then a few wake-ups (client select,
//   process scheduling) each up to ~1 ms late on a 2-core host busy with other test layers.
// - TPOT (median): 3% + 0.2 ms. Token deadlines are absolute (start + T0 + i x D), so lateness never
//   accumulates; TPOT = (E2EL - TTFT)/(n - 1) moves only by the lateness difference of its two ends
//   over 31 gaps (5 ms of lateness reads as 0.16 ms).
// - Output throughput: 5%. Exactly c x n / (T0 + (n - 1) D) per second, less the client's turnaround
//   between requests (~1 ms against 770 ms per request).
const T0_MS = 150;
const D_MS = 20;
const INPUT = 64;
const OUTPUT = 32;
const REQUESTS = 8;
const MODEL = 'acme/foreign-7b';

const pexec = promisify(execFile);

interface ForeignServer {
  url: string;
  proc: ChildProcess;
  stop(): Promise<void>;
}

async function startForeignServer(mode: 'openai' | 'strict' | 'no-usage'): Promise<ForeignServer> {
  const proc = spawn(
    process.execPath,
    ['test/fixtures/foreign-server/server.mjs', '--port', '0', '--mode', mode, '--ttft-ms', String(T0_MS), '--token-ms', String(D_MS), '--model', MODEL],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: proc.stdout! }).once('line', resolve);
    proc.once('exit', (code) => reject(new Error(`the foreign server exited (${code}) before it listened`)));
  });
  const url = (JSON.parse(line) as { url: string }).url;
  return {
    url,
    proc,
    stop: () =>
      new Promise<void>((resolve) => {
        if (proc.exitCode !== null) return resolve();
        proc.once('exit', () => resolve());
        proc.kill('SIGTERM');
      }),
  };
}

function within(measured: unknown, expected: number, relative: number, absolute: number, what: string): void {
  assert.equal(typeof measured, 'number', `${what} was not measured`);
  const m = measured as number;
  const allowed = expected * relative + absolute;
  if (process.env.INFBENCH_VERBOSE) console.log(`      ${what}: measured ${m.toFixed(3)}, expected ${expected.toFixed(3)}, allowed ±${allowed.toFixed(3)}`);
  assert.ok(Math.abs(m - expected) <= allowed, `${what}: measured ${m.toFixed(3)}, expected ${expected.toFixed(3)} (allowed ±${allowed.toFixed(3)})`);
}

/** How late the server's first tokens left since it was last asked (its timers on a loaded host), the largest, in ms. */
async function serverLateness(url: string): Promise<number> {
  const r = (await (await fetch(`${url}/lateness`)).json()) as { first_token_late_ms: number[] };
  return Math.max(0, ...r.first_token_late_ms);
}

function assertTtft(measured: unknown, what: string, serverLateMs: number): void {
  assert.equal(typeof measured, 'number', `${what} was not measured`);
  const m = measured as number;
  if (process.env.INFBENCH_VERBOSE) console.log(`      ${what}: measured ${m.toFixed(3)}, expected ${T0_MS} (server up to ${serverLateMs.toFixed(3)} late)`);
  assert.ok(m >= T0_MS - 1, `${what}: ${m.toFixed(3)} ms is shorter than the server's fixed ${T0_MS} ms: the client stamps too early`);
  // The server's own lateness (its timers fire late on a loaded host) is what it really served, not the client's error.
  assert.ok(
    m <= T0_MS * 1.05 + 5 + serverLateMs,
    `${what}: ${m.toFixed(3)} ms, the server waits ${T0_MS} ms and was at most ${serverLateMs.toFixed(3)} ms late (+5% +5 ms allowed)`,
  );
}

/** What a user checks in one level: nothing failed, the known pacing, the token counts. */
function assertLevel(level: MacroLevelSummary, concurrency: number, serverLateMs: number): void {
  const name = `c=${concurrency}`;
  assert.equal(level.max_concurrency, concurrency);
  assert.equal(level.completed, REQUESTS, `${name}: completed`);
  assert.equal(level.failed, 0, `${name}: failed (${JSON.stringify(level.errors)})`);
  assertTtft(level.median_ttft_ms, `${name} median TTFT (ms)`, serverLateMs);
  within(level.median_tpot_ms, D_MS, 0.03, 0.2, `${name} median TPOT (ms)`);
  within(level.mean_itl_ms, D_MS, 0.03, 0.2, `${name} mean ITL (ms)`);
  within(level.output_throughput, (concurrency * OUTPUT) / ((T0_MS + (OUTPUT - 1) * D_MS) / 1000), 0.05, 0, `${name} output tok/s`);
  assert.equal(level.total_output_tokens, REQUESTS * OUTPUT, `${name}: output tokens`);
  assert.equal(level.simulated, false, 'a foreign server is not labelled as the simulator');
}

class CapturingLogger implements Logger {
  lines: string[] = [];
  trace() {}
  debug() {}
  info = (m: string) => this.lines.push(`info ${m}`);
  warn = (m: string) => this.lines.push(`warn ${m}`);
  error = (m: string) => this.lines.push(`error ${m}`);
}

describe('against a foreign OpenAI-compatible server (not vLLM, not the simulator)', function () {
  this.timeout(60_000);
  const workspace = mkdtempSync(join(tmpdir(), 'ib-foreign-'));
  const cache = mkdtempSync(join(tmpdir(), 'ib-foreign-cache-'));
  const servers: ForeignServer[] = [];
  let openai: ForeignServer;

  before(async () => {
    assert.ok(existsSync('dist/cli.js') && existsSync('dist/agent.pyz'), 'dist/ is missing: run `npm run build` first');
    openai = await startForeignServer('openai');
    servers.push(openai);
  });
  after(async () => {
    await Promise.all(servers.map((s) => s.stop()));
  });

  async function foreign(mode: 'strict' | 'no-usage'): Promise<ForeignServer> {
    const s = await startForeignServer(mode);
    servers.push(s);
    return s;
  }

  function cli(args: string[]) {
    return pexec(process.execPath, ['bin/infbench.js', ...args, '--workspace', workspace], {
      env: { ...process.env, XDG_CACHE_HOME: cache },
      maxBuffer: 16 << 20,
    }).then(
      (r) => ({ code: 0, ...r }),
      (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
    );
  }

  async function phase(url: string, log: Logger, findings: FindingsUpdate[]): Promise<PhaseContext> {
    const transport = new LocalTransport();
    const local = Object.create(transport) as LocalTransport;
    local.exec = (argv, options = {}) => transport.exec(argv, { ...options, env: { XDG_CACHE_HOME: cache, ...options.env } });
    const agent: DeployedAgent = await deployAgent(local, 'dist/agent.pyz', 'python3');
    return {
      target: { name: 'foreign', kind: 'local', serverUrl: url, python: 'python3' },
      transport: local,
      agent,
      workspace,
      log,
      sink: { runChanged: () => {}, findings: (f) => findings.push(f) },
    };
  }

  it('infbench macro: TTFT = T0 and TPOT = D at c=1 and c=4, exact token counts from usage, a vLLM-shaped result file', async function () {
    const out = join(workspace, `macro-${Date.now()}.json`);
    const r = await cli([
      'macro',
      '--target',
      'local',
      '--url',
      openai.url,
      '--concurrency',
      '1,4',
      '--requests',
      String(REQUESTS),
      '--input-len',
      String(INPUT),
      '--output-len',
      String(OUTPUT),
      '--warmup',
      '1',
      '--seed',
      '7',
      '--out',
      out,
    ]);
    assert.equal(r.code, 0, `infbench macro failed:\n${r.stderr}`);
    assert.match(r.stdout, /^c=1\s+8\s+0\s/m, 'the table shows 8 ok, 0 failed at c=1');
    assert.doesNotMatch(r.stdout + r.stderr, /SIMULATOR/);
    const result = JSON.parse(readFileSync(out, 'utf8')) as { levels: MacroLevelSummary[]; server: { model: string; simulated: boolean } };
    assert.equal(result.server.model, MODEL, 'the model comes from /v1/models');
    assert.equal(result.server.simulated, false);
    assert.equal(result.levels.length, 2);
    const late = await serverLateness(openai.url);
    result.levels.forEach((level, i) => {
      assertLevel(level, [1, 4][i], late);
      // The server counts one token per prompt word and says so in usage.prompt_tokens.
      assert.equal(level.total_input_tokens, REQUESTS * INPUT, 'input tokens from usage');
      const tokens = level.token_count as { source: string; usage_missing: number };
      assert.equal(tokens.source, 'usage');
      assert.equal(tokens.usage_missing, 0);
      assert.equal((level.server_metrics as { available: boolean }).available, false, 'no /metrics here, and the result says so');
      for (const key of [
        'completed',
        'failed',
        'duration',
        'request_throughput',
        'output_throughput',
        'total_token_throughput',
        'total_input_tokens',
        'total_output_tokens',
        'mean_ttft_ms',
        'median_ttft_ms',
        'p99_ttft_ms',
        'mean_tpot_ms',
        'median_tpot_ms',
        'p99_tpot_ms',
        'mean_itl_ms',
        'median_itl_ms',
        'p99_itl_ms',
        'mean_e2el_ms',
        'std_e2el_ms',
        'max_concurrency',
        'request_rate',
      ]) {
        assert.ok(key in level, `the result file lacks vLLM's field ${key}`);
      }
    });
  });

  it('macro phase, chat API, a server that never sends usage: the client counts the tokens itself and records it', async function () {
    // The chat stream opens with a role-only chunk at once: a client that stamped it would read TTFT ~0 ms.
    const server = await foreign('no-usage');
    const findings: FindingsUpdate[] = [];
    const outcome = await runMacroPhase(await phase(server.url, new CapturingLogger(), findings), {
      api: 'chat',
      concurrency: [4],
      requests: REQUESTS,
      inputLen: INPUT,
      outputLen: OUTPUT,
      warmup: 1,
    });
    assert.equal(outcome.agent.status, 'completed', outcome.agent.reason);
    const [level] = outcome.levels;
    assertLevel(level, 4, await serverLateness(server.url));
    assert.deepEqual(
      level.token_count,
      { source: 'client', usage_missing: REQUESTS, usage_rejected: 0, usage_problem: null, client_vs_usage_abs_diff: 0, input_source: 'estimate' },
      'every request fell back to the client-side count',
    );
    const stored = outcome.run.readResult<{ levels: MacroLevelSummary[] }>()!;
    assert.deepEqual(stored.levels[0].token_count, level.token_count, 'the run folder keeps the fallback');
    assert.ok(findings.length > 0, 'the findings document got the level');
  });

  it('macro phase, no usage: input tokens are estimated from the prompts, not reported as 0', async function () {
    const server = await foreign('no-usage');
    const outcome = await runMacroPhase(await phase(server.url, new CapturingLogger(), []), {
      concurrency: [4],
      requests: REQUESTS,
      inputLen: INPUT,
      outputLen: OUTPUT,
      warmup: 1,
    });
    within(outcome.levels[0].total_input_tokens, REQUESTS * INPUT, 0.5, 0, 'estimated input tokens');
  });

  it("macro phase, no usage: the user is told the token counts are the client's own", async function () {
    const server = await foreign('no-usage');
    const log = new CapturingLogger();
    const findings: FindingsUpdate[] = [];
    await runMacroPhase(await phase(server.url, log, findings), { concurrency: [4], requests: REQUESTS, inputLen: INPUT, outputLen: OUTPUT, warmup: 1 });
    const said = [...log.lines, ...findings.flatMap((f) => f.lines)].join('\n');
    assert.match(said, /usage/i);
  });

  it("macro phase, a strict server that refuses ignore_eos with HTTP 400: retried without vLLM's fields, warned, measured right", async function () {
    const server = await foreign('strict');
    const log = new CapturingLogger();
    const outcome = await runMacroPhase(await phase(server.url, log, []), {
      concurrency: [4],
      requests: REQUESTS,
      inputLen: INPUT,
      outputLen: OUTPUT,
      warmup: 1,
    });
    assert.equal(outcome.agent.status, 'completed', outcome.agent.reason);
    assertLevel(outcome.levels[0], 4, await serverLateness(server.url));
    assert.ok(
      log.lines.some((l) => /^warn .*refused stream_options and ignore_eos .*HTTP 400.*ignore_eos/.test(l)),
      `the user is warned that the server refused vLLM's fields:\n${log.lines.join('\n')}`,
    );
    const stored = outcome.run.readResult<{ prompts: { dropped_fields: string[] }; levels: MacroLevelSummary[] }>()!;
    assert.deepEqual(stored.prompts.dropped_fields, ['stream_options', 'ignore_eos']);
    assert.equal((stored.levels[0].token_count as { source: string }).source, 'client');
  });

  it('infbench probe: an unknown server with its model, and no profiler', async () => {
    const r = await cli(['probe', '--target', 'local', '--url', openai.url]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`Server: unknown server at ${openai.url.replace(/[.]/g, '\\.')}`));
    assert.match(r.stdout, new RegExp(`model ${MODEL}`));
    assert.match(r.stdout, /profiler: NOT enabled \(\/start_profile answers 404/);
    assert.doesNotMatch(r.stdout, /SIMULATOR|vLLM \d|SGLang \d/);
    const json = await cli(['probe', '--target', 'local', '--url', openai.url, '--json']);
    const server = (JSON.parse(json.stdout) as { server: { kind: string; simulated: boolean; reachable: boolean; profiler: { enabled: boolean | null } } })
      .server;
    assert.equal(server.reachable, true);
    assert.equal(server.kind, 'unknown');
    assert.equal(server.simulated, false);
    assert.equal(server.profiler.enabled, false);
  });

  it('infbench probe: a server without /health is not called unhealthy', async () => {
    const r = await cli(['probe', '--target', 'local', '--url', openai.url]);
    assert.doesNotMatch(r.stdout, /health check failed/);
  });

  it('infbench profile: refused with a clear message that names the server and why, no crash', async () => {
    const r = await cli(['profile', '--target', 'local', '--url', openai.url, '--output-len', '8']);
    assert.equal(r.code, 1, `exit code ${r.code}:\n${r.stdout}\n${r.stderr}`);
    assert.match(r.stderr, new RegExp(`${openai.url.replace(/[.]/g, '\\.')} is neither vLLM nor SGLang`));
    assert.match(r.stderr, /\/start_profile/);
    // Its remedies in the CLI's words.
    assert.match(r.stderr, /point --url at the vLLM\/SGLang server behind it; .*break it down with `infbench analyze TRACE\.\.\.`/);
    assert.doesNotMatch(r.stderr, /\n\s+at .+:\d+:\d+/, 'no stack trace');
    assert.doesNotMatch(r.stderr, /Traceback/);
  });
});
