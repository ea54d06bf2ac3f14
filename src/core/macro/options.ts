// What a macro run asks of the load generator, and how that becomes the agent's command line.

export interface MacroOptions {
  /** The server's base URL as seen from the target host; default the target's serverUrl. */
  url?: string;
  model?: string;
  api?: 'completions' | 'chat';
  /** Closed-loop levels (requests in flight). Ignored when requestRate is given. */
  concurrency?: number[];
  /** Open-loop levels in requests per second (Infinity sends all at once), gamma-distributed gaps. */
  requestRate?: number[];
  /** Cap on requests in flight in request-rate mode. */
  maxConcurrency?: number;
  /** Gamma shape of the arrival gaps; 1 = Poisson. */
  burstiness?: number;
  /** Requests per level; default max(8, 4 x concurrency). */
  requests?: number;
  /** Seconds per level instead of a request count. */
  durationS?: number;
  inputLen?: number;
  outputLen?: number;
  /** false lets the model stop at EOS (default: ignore_eos so every request makes outputLen tokens). */
  ignoreEos?: boolean;
  warmup?: number;
  seed?: number;
  percentiles?: number[];
  /** Goodput SLOs in milliseconds. */
  goodput?: { ttft?: number; tpot?: number; e2el?: number };
  /** A JSONL file of prompts, as a path on the target host. */
  promptsFile?: string;
  /** Load-generator processes: 'auto' or a number. */
  workers?: number | 'auto';
  requestTimeoutS?: number;
  /** Bearer token for a server started with --api-key; handed to the agent on stdin, never stored. */
  apiKey?: string;
}

/** The seed scenario's defaults: single stream first, then a sweep. */
export const DEFAULT_MACRO_OPTIONS: Required<Pick<MacroOptions, 'api' | 'concurrency' | 'inputLen' | 'outputLen' | 'warmup'>> = {
  api: 'completions',
  concurrency: [1, 8, 32, 64],
  inputLen: 256,
  outputLen: 128,
  warmup: 2,
};

export class MacroOptionsError extends Error {}

function positiveList(values: number[] | undefined, name: string, allowInfinity = false): number[] | undefined {
  if (!values) return undefined;
  if (!values.length) throw new MacroOptionsError(`${name} needs at least one value, for example 1,8,32.`);
  for (const v of values) {
    if (!(v > 0) || (!allowInfinity && !Number.isFinite(v))) throw new MacroOptionsError(`${name} values must be positive numbers; got ${v}.`);
  }
  return values;
}

/** The agent's `macro` arguments for these options (validated; the message names the bad option). */
export function macroAgentArgs(options: MacroOptions, serverUrl: string): string[] {
  const o = { ...DEFAULT_MACRO_OPTIONS, ...options };
  const args = ['--url', o.url ?? serverUrl, '--api', o.api, '--input-len', String(o.inputLen), '--output-len', String(o.outputLen)];
  const rates = positiveList(o.requestRate, 'request rate', true);
  if (rates) {
    args.push('--request-rate', rates.map((r) => (Number.isFinite(r) ? String(r) : 'inf')).join(','));
    if (o.maxConcurrency !== undefined) args.push('--max-concurrency', String(o.maxConcurrency));
    if (o.burstiness !== undefined) args.push('--burstiness', String(o.burstiness));
  } else {
    const levels = positiveList(o.concurrency, 'concurrency')!;
    if (levels.some((c) => !Number.isInteger(c))) throw new MacroOptionsError('concurrency levels must be whole numbers, for example 1,8,32.');
    args.push('--concurrency', levels.join(','));
  }
  for (const [name, v] of [['input length', o.inputLen], ['output length', o.outputLen]] as const) {
    if (!Number.isInteger(v) || v < 1) throw new MacroOptionsError(`${name} must be a whole number of tokens, at least 1; got ${v}.`);
  }
  if (o.model) args.push('--model', o.model);
  if (o.requests !== undefined) args.push('--requests', String(o.requests));
  if (o.durationS !== undefined) args.push('--duration', String(o.durationS));
  if (o.ignoreEos === false) args.push('--no-ignore-eos');
  args.push('--warmup', String(o.warmup));
  if (o.seed !== undefined) args.push('--seed', String(o.seed));
  if (o.percentiles?.length) args.push('--percentiles', o.percentiles.join(','));
  const slos = Object.entries(o.goodput ?? {}).filter(([, v]) => v !== undefined);
  if (slos.length) args.push('--goodput', slos.map(([k, v]) => `${k}:${v}`).join(' '));
  if (o.promptsFile) args.push('--prompts-file', o.promptsFile);
  if (o.workers !== undefined) args.push('--workers', String(o.workers));
  if (o.requestTimeoutS !== undefined) args.push('--request-timeout', String(o.requestTimeoutS));
  return args;
}
