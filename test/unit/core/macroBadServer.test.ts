import * as assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { FindingsUpdate } from '../../../src/core/campaign/phaseContext';
import { Logger } from '../../../src/core/log';
import { runMacroPhase } from '../../../src/core/phases/macro';
import { Transport } from '../../../src/remote/transport';

// The agent's events for a level against a server that answered badly, as the agent's hostile-server test
// (test/python/test_macro_hostile_server.py) sees them come from a real loopback server; here the point is
// only how the phase shows them, so a transport replays them instead of running the agent.
const summary = {
  max_concurrency: 4,
  request_rate: null,
  completed: 5,
  failed: 3,
  duration: 3,
  total_input_tokens: 25,
  total_output_tokens: 20,
  request_throughput: 5 / 3,
  output_throughput: 20 / 3,
  total_token_throughput: 45 / 3,
  mean_tpot_ms: 10,
  num_prompts: 8,
  failures: { bad_response: 2, stalled: 1 },
  errors: ["a stream message's `choices` is a str, not a list: 'abc' (after 1 tokens)", 'x', 'the stream sent nothing for 60 s after its first token'],
  failure_examples: {
    bad_response: "a stream message's `choices` is a str, not a list: 'abc' (after 1 tokens)",
    stalled: 'the stream sent nothing for 60 s after its first token (2 tokens received); --stall-timeout sets this bound (60 s)',
  },
  token_count: {
    source: 'mixed',
    usage_missing: 0,
    usage_rejected: 2,
    usage_problem: 'usage.completion_tokens is 40, more than the 4 the request allowed (max_tokens)',
  },
};
const events = [
  { type: 'progress', done: 0, total: 8, message: 'c=4: starting (1 load-generator process)' },
  { type: 'progress', done: 0, total: 8, message: 'c=4: 0 of 8 requests done after 1 s' },
  { type: 'macro.level', level: 0, partial: false, summary },
  { type: 'result', result: { levels: [summary], server: { model: 'm' }, cancelled: false } },
  { type: 'done', ok: true },
];

function replayingTransport(): Transport {
  return {
    label: 'replay',
    exec() {
      const stdout = new PassThrough();
      const stderr = new PassThrough();
      stdout.end(events.map((e) => JSON.stringify({ v: 1, t: 1, ...e })).join('\n') + '\n');
      stderr.end();
      return { stdin: new PassThrough(), stdout, stderr, done: new Promise((resolve) => stdout.on('end', () => resolve({ code: 0, signal: null }))), cancel: async () => undefined };
    },
    upload: async () => undefined,
    download: async () => undefined,
    close: async () => undefined,
  };
}

describe('a macro run against a server that answered badly', () => {
  it("names each failure reason with its own example, says the usage could not be true, and logs the level's progress", async () => {
    const info: string[] = [];
    const log: Logger = { trace() {}, debug() {}, info: (m) => info.push(m), warn() {}, error() {} };
    let findings: FindingsUpdate | undefined;
    await runMacroPhase(
      {
        target: { name: 't', kind: 'local', serverUrl: 'http://127.0.0.1:9', python: 'python3' },
        transport: replayingTransport(),
        agent: { python: 'python3', path: 'agent.pyz', hash: 'x' },
        workspace: mkdtempSync(join(tmpdir(), 'ib-bad-')),
        sink: { runChanged() {}, findings: (u) => (findings = u) },
        log,
      },
      { concurrency: [4] },
    );
    assert.ok(findings);
    const failures = findings.tables.find((t) => t.id === 'macro-failures');
    assert.deepEqual(
      failures?.rows.map((r) => [r.reason, r.count, r.example]),
      [
        ['bad_response', 2, summary.failure_examples.bad_response],
        ['stalled', 1, summary.failure_examples.stalled],
      ],
    );
    const text = findings.lines.join('\n');
    assert.match(text, /`usage` could not be true for 2 request\(s\) \(usage\.completion_tokens is 40, more than the 4/);
    assert.doesNotMatch(text, /sent no `usage`/);
    assert.ok(info.includes('macro: c=4: starting (1 load-generator process)'), info.join('\n'));
  });
});
