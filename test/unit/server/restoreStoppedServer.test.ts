import * as assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { ServerChange, ServerChangeRecord } from '../../../src/core/server/serverChange';
import { Transport } from '../../../src/remote/transport';

const URL = 'http://127.0.0.1:8000';
const original = {
  url: URL,
  argv: ['python3', '-m', 'vllm.entrypoints.openai.api_server', '--port', '8000'],
  cwd: '/srv',
  env: {},
  user: null,
  manager: 'process',
  kind: 'vllm',
  version: '0.16.0',
  identity: { pid: 736, start_ticks: 1 },
};

// The agent's `server` command as agent/infbench_agent/server/command.py answers it on a host where the tool
// stopped the server: `status` finds nothing on the port (and says so as a warning), `start` starts it.
// Replayed rather than run: what is tested is which of its words reach the user's log.
function hostWithServerStopped(): Transport {
  const events = (argv: readonly string[]) =>
    argv.includes('status')
      ? [
          { type: 'log', level: 'warn', message: `No recipe adopted for ${URL}: no process here listens on its port.` },
          { type: 'result', result: { action: 'status', recipe: null, running: false } },
          { type: 'done', ok: true },
        ]
      : [
          { type: 'server.state', stage: 'ready', message: 'ready after 7.6 s (pid 737)', elapsed_s: 7.6 },
          { type: 'result', result: { action: 'start', recipe: { ...original, identity: { pid: 737, start_ticks: 2 } }, running: true } },
          { type: 'done', ok: true },
        ];
  return {
    label: 'gpubox',
    exec(argv) {
      const stdout = new PassThrough();
      const stderr = new PassThrough();
      const done = new Promise<{ code: number; signal: null }>((resolve) => stdout.on('end', () => resolve({ code: 0, signal: null })));
      stdout.end(
        events(argv)
          .map((e) => JSON.stringify({ v: 1, t: 1, ...e }))
          .join('\n') + '\n',
      );
      stderr.end();
      return { stdin: new PassThrough(), stdout, stderr, done, cancel: async () => undefined };
    },
    upload: async () => undefined,
    download: async () => undefined,
    close: async () => undefined,
  };
}

describe('restoring a server the tool stopped itself', () => {
  it('starts the original without warning that no process listens on its port', async () => {
    const workspace = mkdtempSync(join(tmpdir(), 'ib-restore-'));
    const dir = join(workspace, '.inference-bench', 'server', '2026-12-03_10-00-00-gpubox');
    mkdirSync(dir, { recursive: true });
    const record = { target: 'gpubox', url: URL, purpose: 'micro', state: 'stopped', original, history: [] } as unknown as ServerChangeRecord;
    writeFileSync(join(dir, 'change.json'), JSON.stringify(record));
    const said: string[] = [];
    const log = {
      trace: () => undefined,
      debug: () => undefined,
      info: (m: string) => said.push(`info ${m}`),
      warn: (m: string) => said.push(`warn ${m}`),
      error: (m: string) => said.push(`error ${m}`),
    };
    const ctx = {
      target: { name: 'gpubox', kind: 'ssh' as const, host: 'gpubox', serverUrl: URL, python: 'python3' },
      transport: hostWithServerStopped(),
      agent: { python: 'python3', path: 'agent.pyz', hash: 'x' },
      workspace,
      log,
    };
    const change = ServerChange.open(ctx, dir);
    await change.restore();
    assert.equal(change.record.state, 'restored');
    assert.deepEqual(
      said.filter((s) => s.startsWith('warn') || s.startsWith('error')),
      [],
      'no warning about the server the tool stopped',
    );
  });
});
