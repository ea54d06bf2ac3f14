import * as assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { FindingsUpdate } from '../../../src/core/campaign/phaseContext';
import { Logger } from '../../../src/core/log';
import { runMacroPhase } from '../../../src/core/phases/macro';
import { Transport } from '../../../src/remote/transport';
import { stderrLogger } from '../../../src/cli/cliLogger';

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
  errors: ["a stream message's `choices` is a str, not a list: 'abc' (after 1 tokens)", 'x', 'the stream sent no token for 60 s after its last token'],
  failure_examples: {
    bad_response: "a stream message's `choices` is a str, not a list: 'abc' (after 1 tokens)",
    stalled: 'the stream sent no token for 60 s after its last token (2 tokens received); --stall-timeout sets this bound (60 s)',
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

// What an agent that does not clean server text (an older one) prints for a server that answers with terminal
// controls: OSC 0 sets the window title, CSI 2J clears the screen, a C1 CSI, NUL, and a bidi override.
const TERMINAL = '\x1b]0;PWNED-TITLE\x07 the engine died \x1b[2J\x9b31m\u202eevil\x00';
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

function replaying(lines: object[]): Transport {
  return {
    ...replayingTransport(),
    exec() {
      const stdout = new PassThrough();
      const stderr = new PassThrough();
      stdout.end(lines.map((e) => JSON.stringify({ v: 1, t: 1, ...e })).join('\n') + '\n');
      stderr.end();
      const done = new Promise<{ code: number; signal: null }>((resolve) => stdout.on('end', () => resolve({ code: 0, signal: null })));
      return { stdin: new PassThrough(), stdout, stderr, done, cancel: async () => undefined };
    },
  };
}

describe('a macro run against a server whose text carries terminal controls', () => {
  it('shows that text in the log, the findings and on stderr with each control as U+FFFD, never raw', async () => {
    const hostile = {
      ...summary,
      failures: { http_500: 1, server_error_in_stream: 1 },
      errors: [`HTTP 500: ${TERMINAL}`],
      failure_examples: { http_500: `HTTP 500: ${TERMINAL}`, server_error_in_stream: `the server reported an error mid-stream: ${TERMINAL}` },
    };
    const server = { url: 'http://127.0.0.1:9', kind: 'unknown', version: null, model: `m${TERMINAL}`, simulated: false };
    const said: string[] = [];
    const push = (m: string) => said.push(m);
    const log: Logger = { trace: push, debug: push, info: push, warn: push, error: push };
    let findings: FindingsUpdate | undefined;
    const outcome = await runMacroPhase(
      {
        target: { name: 't', kind: 'local', serverUrl: 'http://127.0.0.1:9', python: 'python3' },
        transport: replaying([
          { type: 'server', server },
          { type: 'log', level: 'warn', message: `c=4: 1 request(s) got an answer that is no OpenAI stream (${TERMINAL})` },
          { type: 'macro.level', level: 0, partial: false, summary: hostile },
          { type: 'result', result: { levels: [hostile], server, cancelled: false, client: { python: '3', cpu_count: 1, host: 'h' } } },
          { type: 'done', ok: true },
        ]),
        agent: { python: 'python3', path: 'agent.pyz', hash: 'x' },
        workspace: mkdtempSync(join(tmpdir(), 'ib-bad-')),
        sink: { runChanged() {}, findings: (u) => (findings = u) },
        log,
      },
      { concurrency: [4] },
    );
    assert.ok(findings);
    const doc = [...findings.lines, ...findings.tables.flatMap((t) => t.rows.map((r) => JSON.stringify(r)))].join('\n');
    assert.doesNotMatch(doc, CONTROL);
    assert.match(doc, /\ufffd\]0;PWNED-TITLE\ufffd the engine died \ufffd\[2J/);
    assert.ok(
      said.some((m) => m.includes('PWNED-TITLE')),
      said.join('\n'),
    );
    assert.deepEqual(
      said.filter((m) => CONTROL.test(m)),
      [],
    );
    assert.doesNotMatch(JSON.stringify(outcome), /\\u001b|\\u0007|\\u009b|\\u202e/);

    // The CLI's own last step: whatever reaches its logger goes to stderr shown, not acted on.
    const written: string[] = [];
    const write = process.stderr.write;
    process.stderr.write = ((chunk: string) => (written.push(chunk), true)) as typeof process.stderr.write;
    try {
      stderrLogger().warn(`raw from somewhere: ${TERMINAL}\nnext line`);
    } finally {
      process.stderr.write = write;
    }
    assert.deepEqual(written, ['[warn] raw from somewhere: \ufffd]0;PWNED-TITLE\ufffd the engine died \ufffd[2J\ufffd31m\ufffdevil\ufffd\nnext line\n']);
  });
});
