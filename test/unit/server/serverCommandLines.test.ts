import * as assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { HEARTBEAT_TIMEOUT_S } from '../../../src/core/phases/agentRun';
import { ServerChange } from '../../../src/core/server/serverChange';
import { ServerRecipe } from '../../../src/remote/agentProtocol';
import { ExecOptions, Transport } from '../../../src/remote/transport';

const URL = 'http://127.0.0.1:8000';
const KEY = 'sk-pinned-key';
const adopted: ServerRecipe = {
  url: URL,
  argv: ['python3', '-m', 'vllm.entrypoints.openai.api_server', '--port', '8000', '--api-key', 'REDACTED'],
  cwd: '/srv',
  env: { HOME: '/home/u' },
  user: null,
  manager: 'process',
  kind: 'vllm',
  version: '0.16.0',
  identity: { pid: 736, start_ticks: 41 },
} as unknown as ServerRecipe;
const withProfiler = { ...adopted, argv: [...adopted.argv, '--profiler-config', '{"profiler":"torch","torch_profiler_dir":"/traces"}'] } as ServerRecipe;

// A host whose agent answers `server` as agent/infbench_agent/server/command.py does; each command line and
// what went on its stdin is kept, since those are what is pinned here.
function recordingHost(calls: { argv: readonly string[]; stdin?: string }[]): Transport {
  const answer = (argv: readonly string[]) => {
    const action = argv[argv.indexOf('server') + 1];
    if (action === 'status') return { action, recipe: adopted, profiler_recipe: withProfiler, running: true };
    if (action === 'stop') return { action, recipe: null, running: false };
    return { action, recipe: { ...withProfiler, identity: { pid: 800, start_ticks: 99 } }, running: true };
  };
  return {
    label: 'gpubox',
    exec(argv: readonly string[], options?: ExecOptions) {
      calls.push({ argv: [...argv], stdin: options?.stdin?.toString() });
      const stdout = new PassThrough();
      const stderr = new PassThrough();
      const done = new Promise<{ code: number; signal: null }>((resolve) => stdout.on('end', () => resolve({ code: 0, signal: null })));
      const events = [
        { type: 'result', result: answer(argv) },
        { type: 'done', ok: true },
      ];
      stdout.end(events.map((e) => JSON.stringify({ v: 1, t: 1, ...e })).join('\n') + '\n');
      stderr.end();
      return { stdin: new PassThrough(), stdout, stderr, done, cancel: async () => undefined };
    },
    upload: async () => undefined,
    download: async () => undefined,
    close: async () => undefined,
  };
}

describe("a server change's command lines", () => {
  it('are exactly what the agent received before its options came from the table: status, stop and start, the key on stdin', async () => {
    const calls: { argv: readonly string[]; stdin?: string }[] = [];
    const quiet = () => undefined;
    const ctx = {
      target: { name: 'gpubox', kind: 'ssh' as const, host: 'gpubox', serverUrl: URL, python: 'python3' },
      transport: recordingHost(calls),
      agent: { python: 'python3', path: '/cache/agent-x.pyz', hash: 'x' },
      workspace: mkdtempSync(join(tmpdir(), 'ib-server-argv-')),
      log: { trace: quiet, debug: quiet, info: quiet, warn: quiet, error: quiet },
      apiKey: KEY,
    };
    // A delay of 0 is the profiler's own default: left out, as it always was.
    const { change } = await ServerChange.adopt(ctx, 'profile', { profilerDir: '/traces', delayIterations: 0, maxIterations: 8 });
    await change.stop();
    await change.start(withProfiler);

    const agent = ['python3', '-u', '/cache/agent-x.pyz', '--heartbeat-timeout', String(HEARTBEAT_TIMEOUT_S), 'server'];
    assert.deepEqual(
      calls.map((c) => c.argv),
      [
        [...agent, 'status', '--url', URL, '--profiler-dir', '/traces', '--profile-max-iterations', '8', '--api-key-stdin'],
        [
          ...agent,
          'stop',
          '--url',
          URL,
          '--pid',
          '736',
          '--start-ticks',
          '41',
          '--argv-json',
          JSON.stringify(adopted.argv),
          '--stop-timeout',
          '60',
          '--api-key-stdin',
        ],
        [...agent, 'start', '--url', URL, '--recipe-stdin', '--api-key-stdin'],
      ],
    );
    // The key is the first line of stdin, the recipe of a start the second; neither is ever an argument.
    assert.deepEqual(
      calls.map((c) => c.stdin),
      [`${KEY}\n`, `${KEY}\n`, `${KEY}\n${JSON.stringify(withProfiler)}\n`],
    );
    assert.ok(calls.every((c) => !c.argv.some((a) => a.includes(KEY))));
  });

  it('pass every option the adoption was given, the Nsight Systems one included, and no key flag without a key', async () => {
    const calls: { argv: readonly string[]; stdin?: string }[] = [];
    const quiet = () => undefined;
    const ctx = {
      target: { name: 'gpubox', kind: 'ssh' as const, host: 'gpubox', serverUrl: URL, python: 'python3' },
      transport: recordingHost(calls),
      agent: { python: 'python3', path: 'agent.pyz', hash: 'x' },
      workspace: mkdtempSync(join(tmpdir(), 'ib-server-argv-')),
      log: { trace: quiet, debug: quiet, info: quiet, warn: quiet, error: quiet },
    };
    await ServerChange.adopt(ctx, 'profile', { profilerDir: 'auto', delayIterations: 16, maxIterations: 32, nsys: 'auto' });
    assert.deepEqual(calls[0].argv.slice(calls[0].argv.indexOf('server')), [
      'server',
      'status',
      '--url',
      URL,
      '--profiler-dir',
      'auto',
      '--profile-delay-iterations',
      '16',
      '--profile-max-iterations',
      '32',
      '--nsys',
      'auto',
    ]);
    assert.equal(calls[0].stdin, undefined);
  });
});
