#!/usr/bin/env node
// A paced OpenAI-compatible test server for load-generator benchmarks: every stream gets one token
// per --pace-ms, each token its own SSE message written as its own HTTP chunk (one packet), as vLLM
// writes them, then a usage-only message and [DONE] (vllm/entrypoints/openai/serving_completion.py's
// stream shape with stream_options.include_usage). No model, no batching: the only timing is the pace.
//
// Node rather than Python so that on a small host the server costs little CPU beside the client it
// measures: it must not be the part that runs late. It keeps its own account of when it wrote each
// stream's first and last token (`GET /stats`), the truth a client's TPOT is checked against.
//
//   node bench/paced-server.mjs --pace-ms 20 [--port 0]   # prints {"url": ...} on its first line
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { port: { type: 'string', default: '0' }, 'pace-ms': { type: 'string', default: '20' } } });
const paceMs = Number(values['pace-ms']);
const MODEL = 'paced-test-server';
const created = Math.floor(Date.now() / 1000);

// Streams by due time. Due times follow a fixed schedule from the first token, so a late timer is
// caught up at the next token instead of shifting every later one (a real server's steps do not drift).
let streams = [];
let timer = null;
let timerDue = Infinity;
let nextId = 0;
const stats = { finished: 0, tpotSumMs: 0, tpotCount: 0, tokens: 0, lateWritesMs: 0, maxLateMs: 0 };

function arm() {
  let due = Infinity;
  for (const s of streams) if (s.due < due) due = s.due;
  if (due === Infinity || due >= timerDue) return;
  if (timer) clearTimeout(timer);
  timerDue = due;
  timer = setTimeout(tick, Math.max(0, due - performance.now()));
}

function tick() {
  timer = null;
  timerDue = Infinity;
  const now = performance.now();
  const keep = [];
  for (const s of streams) {
    if (s.closed) continue;
    if (s.due > now + 0.05) {
      keep.push(s);
      continue;
    }
    const t = performance.now();
    stats.lateWritesMs += t - s.due;
    if (t - s.due > stats.maxLateMs) stats.maxLateMs = t - s.due;
    s.sent += 1;
    if (s.sent === 1) {
      s.first = t;
      s.base = Math.max(s.due, t);
    }
    s.last = t;
    s.res.write(
      `data: {"id":"${s.id}","object":"text_completion","created":${created},"model":"${MODEL}","choices":[{"index":0,"text":" tok","logprobs":null,"finish_reason":${s.sent === s.max ? '"length"' : 'null'},"stop_reason":null}],"usage":null}\n\n`,
    );
    stats.tokens += 1;
    if (s.sent < s.max) {
      s.due = s.base + s.sent * paceMs;
      keep.push(s);
      continue;
    }
    if (s.usage) {
      s.res.write(
        `data: {"id":"${s.id}","object":"text_completion","created":${created},"model":"${MODEL}","choices":[],"usage":{"prompt_tokens":${s.prompt},"total_tokens":${s.prompt + s.max},"completion_tokens":${s.max}}}\n\n`,
      );
    }
    s.res.end('data: [DONE]\n\n');
    stats.finished += 1;
    if (s.max > 1) {
      stats.tpotSumMs += (s.last - s.first) / (s.max - 1);
      stats.tpotCount += 1;
    }
  }
  streams = keep;
  arm();
}

function json(res, status, body) {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

const server = http.createServer((req, res) => {
  const url = req.url.split('?')[0];
  if (req.method === 'GET' && url === '/v1/models') {
    json(res, 200, { object: 'list', data: [{ id: MODEL, object: 'model', created, owned_by: 'paced-test-server', root: MODEL, max_model_len: 1 << 20 }] });
    return;
  }
  if (req.method === 'GET' && url === '/stats') {
    json(res, 200, { ...stats, mean_sent_tpot_ms: stats.tpotCount ? stats.tpotSumMs / stats.tpotCount : null, in_flight: streams.length, pace_ms: paceMs });
    return;
  }
  if (req.method === 'POST' && url === '/stats/reset') {
    Object.assign(stats, { finished: 0, tpotSumMs: 0, tpotCount: 0, tokens: 0, lateWritesMs: 0, maxLateMs: 0 });
    json(res, 200, { ok: true });
    return;
  }
  if (req.method === 'GET' && url === '/health') {
    res.writeHead(200);
    res.end();
    return;
  }
  if (req.method !== 'POST' || !['/v1/completions', '/tokenize'].includes(url)) {
    json(res, 404, { detail: 'Not Found' });
    return;
  }
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    let body;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      json(res, 400, { error: { message: 'body is not JSON' } });
      return;
    }
    const prompt = String(body.prompt ?? '');
    // One token per word: what /tokenize answers, so the agent's calibration is exact here.
    const promptTokens = prompt.split(/\s+/).filter(Boolean).length;
    if (url === '/tokenize') {
      json(res, 200, { count: promptTokens, max_model_len: 1 << 20, tokens: [] });
      return;
    }
    if (!body.stream) {
      json(res, 400, { error: { message: 'this test server only streams (stream: true)' } });
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
    res.flushHeaders();
    const s = {
      id: `cmpl-${nextId++}`,
      res,
      max: Math.max(1, Number(body.max_tokens) || 16),
      sent: 0,
      prompt: promptTokens,
      usage: Boolean(body.stream_options?.include_usage),
      due: performance.now() + paceMs,
      base: 0,
      first: 0,
      last: 0,
      closed: false,
    };
    res.on('close', () => {
      s.closed = true;
    });
    streams.push(s);
    arm();
  });
});
server.keepAliveTimeout = 60_000;
server.headersTimeout = 65_000;
server.maxRequestsPerSocket = 0;
server.on('connection', (sock) => sock.setNoDelay(true));
server.listen(Number(values.port), '127.0.0.1', () => {
  const { port } = server.address();
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${port}`, pace_ms: paceMs, pid: process.pid })}\n`);
});
for (const sig of ['SIGTERM', 'SIGINT'])
  process.on(sig, () => {
    server.close();
    process.exit(0);
  });
