/* global window */
// How long the results view takes to redraw a chart of 10,000 points: the page's own bundle
// (dist/webview.js) in headless Chromium, fed the messages the extension host sends while a macro
// run goes (a snapshot, then runUpdated increments). Prints one line per measurement.
//   npm run build && node bench/webviewChartUpdate.mjs [points=10000] [rounds=10]
import { openResultsPage } from './webviewPage.mjs';

const points = Number(process.argv[2] ?? 10_000);
const rounds = Number(process.argv[3] ?? 10);

function macroRun(requestCount) {
  const levels = [1, 2, 4, 8, 16, 32, 64].map((c) => ({
    max_concurrency: c,
    request_rate: null,
    completed: 100,
    failed: 0,
    duration: 10,
    total_input_tokens: 1,
    total_output_tokens: 1,
    request_throughput: c / 5,
    output_throughput: 57 * c,
    total_token_throughput: 280 * c,
    mean_ttft_ms: 45 + c,
    median_ttft_ms: 44 + c,
    p99_ttft_ms: 50 + c,
    mean_tpot_ms: 17.5 + c / 10,
    median_tpot_ms: 17.4 + c / 10,
    p99_tpot_ms: 19 + c / 10,
    mean_itl_ms: 17.5,
    median_itl_ms: 17.4,
    p99_itl_ms: 19,
  }));
  // Two series (E2E and TTFT) per request: half the points each.
  const requests = Array.from({ length: requestCount }, (_, i) => ({
    level: Math.floor((i * 7) / requestCount),
    start_s: i / 50,
    ttft_ms: 40 + (i % 17),
    e2el_ms: 4400 + ((i * 7919) % 400),
    ok: true,
  }));
  return {
    id: 'bench-run',
    phase: 'macro',
    target: 'bench',
    startedAt: '2026-12-01T00:00:00.000Z',
    status: 'running',
    simulated: true,
    macro: { levels, requests },
  };
}

const { page, send, close } = await openResultsPage();
try {
  const lastRender = () => page.evaluate(() => window.__posted.filter((m) => m.type === 'rendered').at(-1));

  const half = Math.floor(points / 2);
  let t0 = Date.now();
  await send({ type: 'snapshot', snapshot: { runs: [macroRun(half)] } });
  await page.waitForFunction(() => window.__posted.some((m) => m.type === 'rendered'));
  const first = await lastRender();
  console.log(`first draw (snapshot, ${first.points} points in all charts): ${first.ms.toFixed(1)} ms in the page, ${Date.now() - t0} ms wall`);

  const times = [];
  for (let i = 0; i < rounds; i++) {
    const before = await page.evaluate(() => window.__posted.length);
    // Each increment adds 50 requests, the way a live run grows.
    await send({ type: 'runUpdated', run: macroRun(half + (i + 1) * 25) });
    await page.waitForFunction((n) => window.__posted.length > n && window.__posted.at(-1).type === 'rendered', before);
    times.push((await lastRender()).ms);
  }
  times.sort((a, b) => a - b);
  console.log(
    `live update of the results view at ~${points} request points (all charts + header): median ${times[Math.floor(times.length / 2)].toFixed(1)} ms, min ${times[0].toFixed(1)} ms, max ${times.at(-1).toFixed(1)} ms over ${rounds} updates`,
  );

  const chartOnly = [];
  for (let i = 0; i < rounds; i++) {
    const { ms, painted } = await page.evaluate((n) => window.infbenchBench(n), points);
    if (painted < 1000) throw new Error(`the benchmark chart painted only ${painted} pixels: it did not draw`);
    chartOnly.push(ms);
  }
  chartOnly.sort((a, b) => a - b);
  console.log(
    `chart.js update of one ${points}-point scatter (laid out, fresh data): median ${chartOnly[Math.floor(rounds / 2)].toFixed(1)} ms, min ${chartOnly[0].toFixed(1)} ms, max ${chartOnly.at(-1).toFixed(1)} ms`,
  );
} finally {
  await close();
}
