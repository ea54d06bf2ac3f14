/* global window, document */
// How long the results view takes to draw the run timeline of one 10,000-request level (every request a
// bar, the per-second client series and the server's /metrics samples beneath): the page's own bundle
// (dist/webview.js) in headless Chromium, fed the messages the extension host sends. Prints one line per
// measurement; with a file name last, also saves a screenshot of the timeline there.
//   npm run build && node bench/webviewTimeline.mjs [requests=10000] [rounds=10] [screenshot.png]
import { openResultsPage } from './webviewPage.mjs';

const count = Number(process.argv[2] ?? 10_000);
const rounds = Number(process.argv[3] ?? 10);
const screenshot = process.argv[4];

/** One level at c=64: each request 50-300 ms of TTFT then 4 s of decoding, a few queued, one in 50 failed. */
function macroRun(n) {
  const concurrency = 64;
  const requests = [];
  const slots = new Array(concurrency).fill(0);
  for (let i = 0; i < n; i++) {
    const slot = i % concurrency;
    const start = slots[slot] + ((i * 7919) % 13) / 1000;
    const ttft = 50 + ((i * 104729) % 250);
    const ok = i % 50 !== 7;
    const e2el = ok ? ttft + 4000 + ((i * 31) % 400) : 900;
    slots[slot] = start + e2el / 1000;
    requests.push({ level: 0, start_s: start, ttft_ms: ok ? ttft : null, e2el_ms: e2el, ok, output_tokens: ok ? 256 : 0, queued_ms: i % 9 === 0 ? 30 : 0 });
  }
  const end = Math.max(...slots);
  const samples = Array.from({ length: Math.ceil(end) }, (_, t) => ({
    t,
    running: 60 + (t % 5),
    waiting: t % 7,
    kv_cache_usage: 0.4 + 0.3 * Math.sin(t / 40) ** 2,
  }));
  const level = {
    level: 0,
    max_concurrency: concurrency,
    request_rate: null,
    completed: n,
    failed: Math.floor(n / 50),
    duration: end,
    total_input_tokens: 1,
    total_output_tokens: 1,
    request_throughput: n / end,
    output_throughput: (256 * n) / end,
    total_token_throughput: (300 * n) / end,
    mean_ttft_ms: 175,
    median_ttft_ms: 175,
    p99_ttft_ms: 297,
    mean_tpot_ms: 15.7,
    median_tpot_ms: 15.7,
    p99_tpot_ms: 16.5,
    server_state: { interval_s: 1, samples, failed_reads: 0, summary: { samples: samples.length } },
  };
  return {
    id: 'bench-run',
    phase: 'macro',
    target: 'bench',
    startedAt: '2026-12-01T00:00:00.000Z',
    status: 'completed',
    simulated: true,
    macro: { levels: [level], requests },
  };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const line = (what, xs) => {
  const s = [...xs].sort((a, b) => a - b);
  console.log(`${what}: median ${median(s).toFixed(1)} ms, min ${s[0].toFixed(1)} ms, max ${s.at(-1).toFixed(1)} ms over ${s.length}`);
};

const { page, send, close } = await openResultsPage();
try {
  const run = macroRun(count);
  const posted = () => page.evaluate(() => window.__posted.length);

  let before = await posted();
  await send({ type: 'snapshot', snapshot: { runs: [run] } });
  await page.waitForFunction((n) => window.__posted.length > n && window.__posted.some((m) => m.type === 'rendered'), before);
  const bars = Number(await page.locator('#run-timeline canvas').getAttribute('data-bars'));
  if (bars !== count) throw new Error(`the timeline drew ${bars} bars of ${count}`);
  const first = await page.evaluate(() => window.__posted.filter((m) => m.type === 'rendered').at(-1).ms);
  console.log(`first draw of the results view with a ${count}-request timeline (snapshot): ${first.toFixed(1)} ms in the page`);

  const updates = [];
  const timelineOnly = [];
  for (let i = 0; i < rounds; i++) {
    before = await posted();
    await send({ type: 'runUpdated', run: { ...run, headline: `update ${i}` } });
    await page.waitForFunction((n) => window.__posted.length > n && window.__posted.at(-1).type === 'rendered', before);
    updates.push(await page.evaluate(() => window.__posted.at(-1).ms));
    timelineOnly.push(Number(await page.evaluate(() => document.body.dataset.timelineMs)));
  }
  line(`live update of the whole results view, ${count}-request timeline + charts`, updates);
  line(`  of which the timeline (shaping the requests and drawing them)`, timelineOnly);

  // A zoom redraws the timeline alone, synchronously in the click.
  const zooms = [];
  for (let i = 0; i < rounds; i++) {
    const label = i % 2 ? 'Zoom out' : 'Zoom in';
    zooms.push(
      await page.evaluate((name) => {
        const b = [...document.querySelectorAll('#run-timeline button')].find((x) => x.textContent.trim() === name);
        const t = performance.now();
        b.click();
        return performance.now() - t;
      }, label),
    );
  }
  line(`timeline redraw on a zoom (${count} requests, whole run then half of it)`, zooms);
  if (screenshot) {
    await page.locator('#run-timeline').screenshot({ path: screenshot });
    console.log(`screenshot: ${screenshot}`);
  }
} finally {
  await close();
}
