import * as assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { nullSink } from '../../../src/core/campaign/phaseContext';
import { silentLogger } from '../../../src/core/log';
import { runMacroPhase } from '../../../src/core/phases/macro';
import { RunFolder } from '../../../src/core/runs/runFolder';
import { ExecOptions, Transport } from '../../../src/remote/transport';

// A transport that records what would reach the host instead of running it: the point here is what
// a command line and environment expose to other users of that host, which no real peer reports.
function recordingTransport() {
  const seen: { argv: readonly string[]; options: ExecOptions }[] = [];
  const transport: Transport = {
    label: 'recording',
    exec(argv, options = {}) {
      seen.push({ argv, options });
      const stdout = new PassThrough();
      const stderr = new PassThrough();
      stdout.end('{"v":1,"type":"done","t":1,"ok":true}\n');
      stderr.end();
      return {
        stdin: new PassThrough(),
        stdout,
        stderr,
        done: new Promise((resolve) => stdout.on('end', () => resolve({ code: 0, signal: null }))),
        cancel: async () => undefined,
      };
    },
    upload: async () => undefined,
    download: async () => undefined,
    close: async () => undefined,
  };
  return { transport, seen };
}

describe('macro phase with an API key', () => {
  it('hands the key to the agent on stdin, never on its command line, in its environment or in the run folder', async () => {
    const workspace = mkdtempSync(join(tmpdir(), 'ib-key-'));
    const { transport, seen } = recordingTransport();
    const secret = 'sk-very-secret-123';
    await runMacroPhase(
      {
        target: { name: 't', kind: 'local', serverUrl: 'http://127.0.0.1:9', python: 'python3' },
        transport,
        agent: { python: 'python3', path: 'agent.pyz', hash: 'x' },
        workspace,
        sink: nullSink,
        log: silentLogger,
      },
      { concurrency: [1], apiKey: secret },
    );
    // The server's recipe is looked at first (the run records its configuration), then the load runs: both take the key on stdin.
    assert.deepEqual(
      seen.map((s) => s.argv.find((a) => a === 'server' || a === 'macro')),
      ['server', 'macro'],
    );
    for (const call of seen) {
      assert.ok(!call.argv.join(' ').includes(secret));
      assert.ok(!JSON.stringify(call.options.env ?? {}).includes(secret));
      assert.ok(call.argv.includes('--api-key-stdin'));
      assert.equal(call.options.stdin, `${secret}\n`);
    }
    const run = RunFolder.list(workspace)[0];
    assert.ok(!JSON.stringify(run.info).includes(secret));
  });
});
