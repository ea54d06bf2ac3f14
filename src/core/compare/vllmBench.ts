// Importing a `vllm bench serve --save-result` file as a macro run folder, so its numbers sit beside
// ours in the results view and in `infbench compare`. Our macro results use vLLM's field names, so a
// level is the file's object with the per-request lists dropped. With `--save-detailed` the file
// also holds one entry per request (vllm/benchmarks/serve.py, `benchmark`'s result dict: input_lens,
// output_lens, ttfts, itls, latencies, start_times, queue_times, errors; all in seconds, start_times
// on the client's perf_counter clock); those become the run's request records, as our own agent
// streams them, so that the timeline and the Chrome trace show the imported requests.
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { MacroLevelSummary } from '../../shared/results';
import { finite } from '../../shared/finite';
import { MacroRequestRecord } from '../../remote/agentSchema';
import { RunFolder } from '../runs/runFolder';

export class ImportError extends Error {}

/** The result.json of an imported run: the macro result shape plus where it came from. */
export interface ImportedMacroResult {
  levels: MacroLevelSummary[];
  source: 'vllm bench serve';
  file: string;
  model?: string;
  backend?: string;
  /** Requests imported with their send times (a `--save-detailed` file); 0 without. */
  requests?: number;
}

// Per-request lists (`--save-detailed` adds more) and vLLM's run header: kept out of the level.
const PER_REQUEST = new Set([
  'input_lens',
  'output_lens',
  'ttfts',
  'itls',
  'latencies',
  'start_times',
  'queue_times',
  'generated_texts',
  'errors',
  'rps_change_events',
  'spec_decode_per_position_acceptance_rates',
]);
const HEADER = new Set(['date', 'endpoint_type', 'backend', 'label', 'model_id', 'tokenizer_id', 'num_prompts']);
const REQUIRED = ['completed', 'duration', 'output_throughput'];

/**
 * The result objects in a `vllm bench serve` file: one JSON object (`--save-result`), one per line
 * (`--append-result` appends a line per run), or an array of them.
 */
export function parseVllmBenchFile(text: string, fileName = 'the file'): Record<string, unknown>[] {
  const trimmed = text.trim();
  if (!trimmed)
    throw new ImportError(
      `${fileName} is empty. Pass the JSON that \`vllm bench serve --save-result\` wrote (in --result-dir, named like vllm-<rate>qps-...json).`,
    );
  let objects: unknown[];
  try {
    const whole: unknown = JSON.parse(trimmed);
    objects = Array.isArray(whole) ? whole : [whole];
  } catch {
    objects = [];
    const lines = trimmed.split(/\r?\n/);
    for (let i = 0; i < lines.length; i++) {
      if (!lines[i].trim()) continue;
      try {
        objects.push(JSON.parse(lines[i]));
      } catch (err) {
        throw new ImportError(
          `${fileName} line ${i + 1} is not JSON (${(err as Error).message}). A \`vllm bench serve\` result is one JSON object, or one per line with --append-result.`,
        );
      }
    }
  }
  const results = objects.filter((o): o is Record<string, unknown> => typeof o === 'object' && o !== null && !Array.isArray(o));
  if (!results.length) throw new ImportError(`${fileName} holds no JSON objects.`);
  results.forEach((r, i) => {
    const missing = REQUIRED.filter((k) => typeof r[k] !== 'number');
    if (missing.length) {
      throw new ImportError(
        `${fileName}${results.length > 1 ? ` (result ${i + 1})` : ''} lacks ${missing.join(', ')}: it does not look like a \`vllm bench serve --save-result\` file. Embedding (pooling) benchmarks are not supported.`,
      );
    }
  });
  return results;
}

/** One macro level from one vLLM result object. */
export function levelFromVllm(r: Record<string, unknown>): MacroLevelSummary {
  const level: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(r)) {
    if (PER_REQUEST.has(key) || HEADER.has(key)) continue;
    if (typeof value === 'number' || value === null || typeof value === 'string') level[key] = value;
  }
  const rate = r.request_rate;
  const concurrency = r.max_concurrency;
  return {
    ...level,
    max_concurrency: typeof concurrency === 'number' ? concurrency : null,
    // vLLM writes "inf" for an unlimited rate; ours is null.
    request_rate: typeof rate === 'number' && Number.isFinite(rate) ? rate : null,
    completed: r.completed as number,
    failed: typeof r.failed === 'number' ? r.failed : 0,
    duration: r.duration as number,
    total_input_tokens: (r.total_input_tokens as number) ?? 0,
    total_output_tokens: (r.total_output_tokens as number) ?? 0,
    request_throughput: (r.request_throughput as number) ?? 0,
    output_throughput: r.output_throughput as number,
    total_token_throughput: (r.total_token_throughput as number) ?? 0,
  };
}

const list = (v: unknown): unknown[] | undefined => (Array.isArray(v) ? v : undefined);
const ms = (seconds: number | undefined): number | null => (seconds === undefined ? null : Math.round(seconds * 1e6) / 1e3);

/**
 * The requests of one `--save-detailed` result as request records, their times from the result's
 * first send moved by `offsetS` onto the run's axis; empty when the file has no start_times (saved
 * without --save-detailed). A request failed when its `errors` entry is not empty.
 */
export function vllmRequestRecords(r: Record<string, unknown>, offsetS = 0): MacroRequestRecord[] {
  const starts = list(r.start_times);
  if (!starts?.length) return [];
  const first = Math.min(...starts.map((s) => finite(s) ?? Infinity));
  if (!Number.isFinite(first)) return [];
  const at = (key: string, i: number): unknown => list(r[key])?.[i];
  // vLLM's queue time is the send minus the request's arrival. Under a request rate that is how late it
  // went out (ours: the lag past its planned send); at an unlimited rate every request arrives at the
  // start, and the figure is the wait for a --max-concurrency slot, which our closed loop does not count.
  const paced = finite(r.request_rate) !== undefined;
  const out: MacroRequestRecord[] = [];
  starts.forEach((start, i) => {
    const sent = finite(start);
    if (sent === undefined) return;
    const error = at('errors', i);
    const ok = typeof error !== 'string' || error === '';
    const ttft = finite(at('ttfts', i));
    const itl = (list(at('itls', i)) ?? []).map((x) => finite(x)).filter((x): x is number => x !== undefined);
    const latency = finite(at('latencies', i)) ?? (ok && ttft !== undefined ? ttft + itl.reduce((a, b) => a + b, 0) : undefined);
    const tokens = finite(at('output_lens', i));
    const tpot = ok && tokens !== undefined && tokens > 1 && latency !== undefined && ttft !== undefined ? (latency - ttft) / (tokens - 1) : undefined;
    out.push({
      id: i,
      ok,
      reason: ok ? null : 'error',
      error: ok ? null : String(error),
      prompt_tokens: finite(at('input_lens', i)) ?? null,
      output_tokens: tokens ?? null,
      ttft_ms: ok ? ms(ttft) : null,
      tpot_ms: ms(tpot),
      e2el_ms: ms(latency),
      itl_mean_ms: itl.length ? ms(itl.reduce((a, b) => a + b, 0) / itl.length) : null,
      itl_max_ms: itl.length ? ms(Math.max(...itl)) : null,
      lag_ms: paced ? ms(finite(at('queue_times', i))) : null,
      start_s: Math.round((sent - first) * 1e6) / 1e6,
      run_s: Math.round((offsetS + sent - first) * 1e6) / 1e6,
    });
  });
  return out;
}

/** `20261201-051500` (vLLM's local-time stamp) as a Date, read as UTC since the file has no zone. */
function vllmDate(stamp: unknown): Date | undefined {
  const m = typeof stamp === 'string' ? /^(\d{4})(\d{2})(\d{2})-(\d{2})(\d{2})(\d{2})$/.exec(stamp) : null;
  return m ? new Date(Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6])) : undefined;
}

/** Creates a completed macro run folder holding the file's results, one level per result, by concurrency. */
export function importVllmBench(workspace: string, file: string, now = new Date()): RunFolder {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ImportError(
      `Cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}. Pass the path of the JSON that \`vllm bench serve --save-result\` wrote.`,
    );
  }
  // Sorted by load, as the levels are, so that each result's requests go with its level.
  const results = parseVllmBenchFile(text, basename(file)).sort(
    (a, b) =>
      (finite(a.max_concurrency) ?? Infinity) - (finite(b.max_concurrency) ?? Infinity) ||
      (finite(a.request_rate) ?? Infinity) - (finite(b.request_rate) ?? Infinity),
  );
  // `level` is the level's index, as our agent numbers them: the views name a request's level by it.
  const levels = results.map((r, i) => ({ ...levelFromVllm(r), level: i }));
  // Each level's requests after the previous level's, a second apart: separate runs of vLLM share no clock.
  const events: string[] = [];
  let offset = 0;
  results.forEach((r, i) => {
    const records = vllmRequestRecords(r, offset);
    for (const record of records) events.push(JSON.stringify({ type: 'macro.request', level: i, record }));
    const ends = records.map((x) => (x.run_s ?? 0) + (x.e2el_ms ?? 0) / 1000);
    offset = Math.max(offset + levels[i].duration, ...ends) + 1;
  });
  const first = results[0];
  const model = typeof first.model_id === 'string' ? first.model_id : undefined;
  const backend = typeof first.backend === 'string' ? first.backend : undefined;
  const startedAt = vllmDate(first.date) ?? now;
  const options: Record<string, unknown> = {
    imported_from: basename(file),
    tool: 'vllm bench serve',
    model,
    backend,
    label: first.label ?? undefined,
    num_prompts: results.map((r) => r.num_prompts),
    concurrency: levels.map((l) => l.max_concurrency),
    burstiness: first.burstiness,
  };
  const run = RunFolder.create(workspace, 'macro', 'vllm bench serve (imported)', options, startedAt);
  const result: ImportedMacroResult = { levels, source: 'vllm bench serve', file: basename(file), model, backend, requests: events.length };
  if (events.length) run.appendEvent(events.join('\n'));
  run.writeResult(result);
  // A simulated server says so in its model id; keep the label so nobody mistakes it for hardware.
  run.update({ simulated: /simulat/i.test(model ?? '') || undefined });
  const seconds = levels.reduce((sum, l) => sum + l.duration, 0);
  run.finish('completed', undefined, new Date(startedAt.getTime() + seconds * 1000));
  return run;
}
