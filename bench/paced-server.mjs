#!/usr/bin/env node
// A paced OpenAI-compatible test server for load-generator benchmarks: every stream gets one token
// per --pace-ms, each token its own SSE message written as its own HTTP chunk (one packet), as vLLM
// writes them, then a usage-only message and [DONE] (vllm/entrypoints/openai/serving_completion.py's
// stream shape with stream_options.include_usage). No model, no batching: the only timing is the pace.
//
// Node rather than Python so that on a small host the server costs little CPU beside the client it
// measures: it must not be the part that runs late. It keeps its own account of what it wrote
// (`GET /stats`), the truth a client's TPOT and TTFT are checked against: each stream's TPOT from its
// first to its last token written, its TTFT from its request received (the body's end) to its first
// token written (and from its headers read: a long prompt's upload included), and its own lag: how
// late each token was written against its due time. With --procs N the streams are spread over N
// processes (node:cluster, all accepting on the one port), each with its own account; /stats answers
// the combined account, and each process's under `procs`. `on_time` is false when the server itself
// fell behind its pace (its p99 lateness past --late-bound-ms), so that a client's error is not read
// into what was the server's.
//
//   node bench/paced-server.mjs --pace-ms 20 [--port 0] [--procs 1] [--late-bound-ms 2] [--accept shared|rr]
//   # prints {"url": ..., "pace_ms": ..., "pid": ..., "procs": ...} on its first line
import cluster from 'node:cluster';
import http from 'node:http';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '0' },
    'pace-ms': { type: 'string', default: '20' },
    procs: { type: 'string', default: '1' },
    'late-bound-ms': { type: 'string', default: '2' },
    accept: { type: 'string', default: 'shared' },
  },
});
const paceMs = Number(values['pace-ms']);
const procs = Math.max(1, Math.floor(Number(values.procs)) || 1);
const lateBoundMs = Number(values['late-bound-ms']);
const MODEL = 'paced-test-server';
const created = Math.floor(Date.now() / 1000);

// Lateness histogram: 10 µs bins up to 1 s, then one bin for the rest (their largest kept as the max).
// Histograms add across processes, so the combined percentiles are exact to a bin.
const BIN_MS = 0.01;
const BINS = 100_000;

function newAccount() {
  return {
    finished: 0,
    tpotSumMs: 0,
    tpotCount: 0,
    ttftSumMs: 0,
    ttftCount: 0,
    maxTtftMs: 0,
    // From the request's headers read instead of its body's end: the upload of a long prompt included.
    ttftFromHeadersSumMs: 0,
    uploadSumMs: 0,
    tokens: 0,
    lateWritesMs: 0,
    maxLateMs: 0,
    late: new Uint32Array(BINS + 1),
  };
}

function addLate(acc, ms) {
  acc.lateWritesMs += ms;
  if (ms > acc.maxLateMs) acc.maxLateMs = ms;
  acc.late[Math.min(BINS, Math.max(0, Math.floor(ms / BIN_MS)))] += 1;
}

function percentileMs(hist, total, p) {
  if (!total) return null;
  const want = Math.ceil((p / 100) * total);
  let seen = 0;
  for (let i = 0; i <= BINS; i++) {
    seen += hist[i];
    if (seen >= want) return (i + 1) * BIN_MS;
  }
  return null;
}

// ---- one serving process: its streams, its timer, its account ----

function serve(onListening, askAll) {
  let acc = newAccount();
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  const cpu0 = process.cpuUsage();
  let nextId = 0;
  let inFlight = 0;
  // Streams by due time in a binary heap: a tick takes only the due ones, O(log n) each (a scan of every
  // stream per tick cost O(n) per token, quadratic in the streams, and fell behind near 2,000). Due times
  // follow a fixed schedule from the first token, so a late timer is caught up at the next token instead
  // of shifting every later one (a real server's steps do not drift).
  const heap = [];
  let timer = null;
  let timerDue = Infinity;

  function push(s) {
    let i = heap.length;
    heap.push(s);
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (heap[p].due <= s.due) break;
      heap[i] = heap[p];
      i = p;
    }
    heap[i] = s;
  }

  function pop() {
    const top = heap[0];
    const last = heap.pop();
    if (heap.length) {
      let i = 0;
      const n = heap.length;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= n) break;
        const c = l + 1 < n && heap[l + 1].due < heap[l].due ? l + 1 : l;
        if (heap[c].due >= last.due) break;
        heap[i] = heap[c];
        i = c;
      }
      heap[i] = last;
    }
    return top;
  }

  function arm() {
    const due = heap.length ? heap[0].due : Infinity;
    if (due === Infinity || due >= timerDue) return;
    if (timer) clearTimeout(timer);
    timerDue = due;
    timer = setTimeout(tick, Math.max(0, due - performance.now()));
  }

  function tick() {
    timer = null;
    timerDue = Infinity;
    // The clock read again after each write: tokens that fell due while this burst was written go out in it.
    while (heap.length && heap[0].due <= performance.now() + 0.05) {
      const s = pop();
      if (s.closed) continue;
      const t = performance.now();
      addLate(acc, Math.max(0, t - s.due));
      s.sent += 1;
      if (s.sent === 1) {
        s.first = t;
        s.base = Math.max(s.due, t);
        const ttft = t - s.received;
        acc.ttftSumMs += ttft;
        acc.ttftCount += 1;
        if (ttft > acc.maxTtftMs) acc.maxTtftMs = ttft;
        acc.ttftFromHeadersSumMs += t - s.arrived;
        acc.uploadSumMs += s.received - s.arrived;
      }
      s.last = t;
      s.res.write(
        `data: {"id":"${s.id}","object":"text_completion","created":${created},"model":"${MODEL}","choices":[{"index":0,"text":" tok","logprobs":null,"finish_reason":${s.sent === s.max ? '"length"' : 'null'},"stop_reason":null}],"usage":null}\n\n`,
      );
      acc.tokens += 1;
      if (s.sent < s.max) {
        s.due = s.base + s.sent * paceMs;
        push(s);
        continue;
      }
      if (s.usage) {
        s.res.write(
          `data: {"id":"${s.id}","object":"text_completion","created":${created},"model":"${MODEL}","choices":[],"usage":{"prompt_tokens":${s.prompt},"total_tokens":${s.prompt + s.max},"completion_tokens":${s.max}}}\n\n`,
        );
      }
      s.res.end('data: [DONE]\n\n');
      inFlight -= 1;
      s.closed = true;
      acc.finished += 1;
      if (s.max > 1) {
        acc.tpotSumMs += (s.last - s.first) / (s.max - 1);
        acc.tpotCount += 1;
      }
    }
    arm();
  }

  // This process's account, as it travels to the primary (the histogram as [bin, count] pairs).
  function account() {
    const late = [];
    for (let i = 0; i <= BINS; i++) if (acc.late[i]) late.push([i, acc.late[i]]);
    const c = process.cpuUsage(cpu0);
    return {
      ...acc,
      late,
      in_flight: inFlight,
      pid: process.pid,
      cpu_s: (c.user + c.system) / 1e6,
      loop_delay_p99_ms: loop.count ? loop.percentile(99) / 1e6 : null,
      loop_delay_max_ms: loop.count ? loop.max / 1e6 : null,
    };
  }

  function reset() {
    acc = newAccount();
    loop.reset();
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
      askAll('account', account, (accounts) => json(res, 200, combine(accounts)));
      return;
    }
    if (req.method === 'POST' && url === '/stats/reset') {
      askAll('reset', reset, () => json(res, 200, { ok: true }));
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
    const arrived = performance.now();
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const received = performance.now();
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
        id: `cmpl-${process.pid}-${nextId++}`,
        res,
        max: Math.max(1, Number(body.max_tokens) || 16),
        sent: 0,
        prompt: promptTokens,
        usage: Boolean(body.stream_options?.include_usage),
        received,
        arrived,
        due: received + paceMs,
        base: 0,
        first: 0,
        last: 0,
        closed: false,
      };
      inFlight += 1;
      res.on('close', () => {
        if (!s.closed) inFlight -= 1;
        s.closed = true;
      });
      push(s);
      arm();
    });
  });
  server.keepAliveTimeout = 60_000;
  server.headersTimeout = 65_000;
  server.maxRequestsPerSocket = 0;
  server.on('connection', (sock) => sock.setNoDelay(true));
  // A deep accept queue: a wave of thousands of connects at once would overflow the default 511 (a dropped SYN
  // waits a second for its retry, the server's own TTFT none the wiser).
  server.listen({ port: Number(values.port), host: '127.0.0.1', backlog: 65535 }, () => onListening(server.address().port));
  return { account, reset };
}

// The combined account of every process: sums, the lateness histograms added, and each process's own figures.
function combine(accounts) {
  const late = new Uint32Array(BINS + 1);
  const sum = (k) => accounts.reduce((a, x) => a + x[k], 0);
  const max = (k) => accounts.reduce((a, x) => Math.max(a, x[k] ?? 0), 0);
  for (const a of accounts) for (const [i, n] of a.late) late[i] += n;
  const tokens = sum('tokens');
  const tpotCount = sum('tpotCount');
  const ttftCount = sum('ttftCount');
  const lateP99 = percentileMs(late, tokens, 99);
  let lateOver = 0;
  for (let i = Math.ceil(lateBoundMs / BIN_MS); i <= BINS; i++) lateOver += late[i];
  const onTime = lateP99 === null || lateP99 <= lateBoundMs;
  return {
    finished: sum('finished'),
    tpotSumMs: sum('tpotSumMs'),
    tpotCount,
    tokens,
    lateWritesMs: sum('lateWritesMs'),
    maxLateMs: max('maxLateMs'),
    mean_sent_tpot_ms: tpotCount ? sum('tpotSumMs') / tpotCount : null,
    mean_sent_ttft_ms: ttftCount ? sum('ttftSumMs') / ttftCount : null,
    max_sent_ttft_ms: ttftCount ? max('maxTtftMs') : null,
    mean_sent_ttft_from_headers_ms: ttftCount ? sum('ttftFromHeadersSumMs') / ttftCount : null,
    mean_upload_ms: ttftCount ? sum('uploadSumMs') / ttftCount : null,
    in_flight: sum('in_flight'),
    pace_ms: paceMs,
    // The server's own lag: how late it wrote its tokens against their due times.
    mean_late_ms: tokens ? sum('lateWritesMs') / tokens : null,
    late_p50_ms: percentileMs(late, tokens, 50),
    late_p99_ms: lateP99,
    late_bound_ms: lateBoundMs,
    late_share: tokens ? lateOver / tokens : null,
    on_time: onTime,
    behind: onTime ? null : `the server wrote 1% of its tokens more than ${lateP99.toFixed(2)} ms late (bound ${lateBoundMs} ms): it fell behind its pace`,
    cpu_s: sum('cpu_s'),
    procs: accounts.map((a) => ({
      pid: a.pid,
      tokens: a.tokens,
      finished: a.finished,
      in_flight: a.in_flight,
      mean_sent_tpot_ms: a.tpotCount ? a.tpotSumMs / a.tpotCount : null,
      mean_sent_ttft_ms: a.ttftCount ? a.ttftSumMs / a.ttftCount : null,
      mean_late_ms: a.tokens ? a.lateWritesMs / a.tokens : null,
      max_late_ms: a.maxLateMs,
      loop_delay_p99_ms: a.loop_delay_p99_ms,
      loop_delay_max_ms: a.loop_delay_max_ms,
      cpu_s: a.cpu_s,
    })),
  };
}

function announce(port, pid) {
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${port}`, pace_ms: paceMs, pid, procs })}\n`);
}

if (procs === 1) {
  // One process: the account is its own.
  serve(
    (port) => announce(port, process.pid),
    (what, mine, done) => {
      const answer = mine();
      done(what === 'reset' ? [] : [answer]);
    },
  );
  for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => process.exit(0));
} else if (cluster.isPrimary) {
  // The workers accept on the one listening socket themselves (--accept shared, the default), so that a wave of
  // thousands of connects is taken by all of them at once: with --accept rr (cluster's round robin) the primary
  // accepts each and hands it to a worker over IPC, one after another, and at 8,192 connects that queue held
  // requests for hundreds of ms before any worker saw them (the client's TTFT counts it, the server's does not).
  // The primary then only relays the /stats questions: every worker answers with its account, the asking one
  // combines them.
  cluster.schedulingPolicy = values.accept === 'rr' ? cluster.SCHED_RR : cluster.SCHED_NONE;
  const workers = [];
  let listening = 0;
  let asks = 0;
  const pending = new Map();
  for (let i = 0; i < procs; i++) {
    const w = cluster.fork();
    workers.push(w);
    w.on('message', (m) => {
      if (m.type === 'listening' && ++listening === procs) announce(m.port, process.pid);
      else if (m.type === 'ask') {
        const key = ++asks;
        pending.set(key, { from: w, id: m.id, answers: [] });
        for (const x of workers) x.send({ type: 'collect', key, what: m.what });
      } else if (m.type === 'answer') {
        const p = pending.get(m.key);
        p.answers.push(m.account);
        if (p.answers.length === procs) {
          pending.delete(m.key);
          p.from.send({ type: 'answered', id: p.id, accounts: p.answers });
        }
      }
    });
    w.on('exit', (code, signal) => {
      if (!stopping && code !== 0) {
        process.stderr.write(`paced-server: worker ${w.process.pid} exited (${signal ?? code})\n`);
        process.exit(1);
      }
    });
  }
  let stopping = false;
  for (const sig of ['SIGTERM', 'SIGINT'])
    process.on(sig, () => {
      stopping = true;
      for (const w of workers) w.kill();
      process.exit(0);
    });
} else {
  let self = null;
  let asked = 0;
  const waiting = new Map();
  self = serve(
    (port) => process.send({ type: 'listening', port }),
    (what, _mine, done) => {
      const id = ++asked;
      waiting.set(id, done);
      process.send({ type: 'ask', id, what });
    },
  );
  process.on('message', (m) => {
    if (m.type === 'collect') {
      if (m.what === 'reset') self.reset();
      process.send({ type: 'answer', key: m.key, account: m.what === 'reset' ? null : self.account() });
    } else if (m.type === 'answered') {
      const done = waiting.get(m.id);
      waiting.delete(m.id);
      done(m.accounts.filter(Boolean));
    }
  });
  // The primary's signal ends the workers; one of their own would leave the others.
  for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => process.exit(0));
}
