// What a macro run asks of the load generator, and how that becomes the agent's command line.
import { agentOptionArgs } from '../../remote/agentOptionArgs';
import { AGENT_OPTIONS, AgentOptionSpec, MACRO_WORKLOADS, MacroAgentOptions, MacroWorkloadSpec } from '../../remote/agentOptions';

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
  /**
   * Random prompts: each request's prompt and output lengths drawn uniformly from
   * [len × (1 − r), len × (1 + r)], 0 ≤ r < 1 (vllm bench serve --random-range-ratio).
   */
  rangeRatio?: number;
  /** false lets the model stop at EOS (default: ignore_eos so every request makes outputLen tokens). */
  ignoreEos?: boolean;
  warmup?: number;
  seed?: number;
  percentiles?: number[];
  /** Goodput SLOs in milliseconds. */
  goodput?: { ttft?: number; tpot?: number; e2el?: number };
  /** A JSONL file of prompts, as a path on the target host (the same as dataset 'jsonl' with datasetPath). */
  promptsFile?: string;
  /** Where the prompts come from; a file's kind is told from the file when only datasetPath is given. */
  dataset?: MacroDataset;
  /** The dataset file, as a path on the target host (the agent reads it there). */
  datasetPath?: string;
  /** ShareGPT: output tokens of every request instead of each conversation's second turn. */
  sharegptOutputLen?: number;
  /** Load-generator processes: 'auto' or a number. */
  workers?: number | 'auto';
  requestTimeoutS?: number;
  /** Seconds a stream may send no token (whatever other bytes come) before it fails as stalled (the agent's default 60); 0 turns it off. */
  stallTimeoutS?: number;
  /** prefix_repetition: groups of requests that share a prefix (vllm bench serve's defaults 256, 256, 10). */
  prefixRepetition?: { prefixLen?: number; suffixLen?: number; numPrefixes?: number };
  /**
   * multi_turn: conversations whose every turn sends the whole history (inputLen tokens more a user turn, the
   * server's outputLen-token answers in between); conversations per level, default the level's requests ÷ turns.
   */
  multiTurn?: { turns?: number; conversations?: number };
  /**
   * A workload's own options where MacroOptions has no field of its own for them (a workload the agent added
   * since, such as trace_replay's traceSpeed), named as the agent's option table names them.
   */
  workloadOptions?: Partial<MacroAgentOptions>;
  /** Sampling parameters every request carries; temperature 0 (greedy) unless given, as vllm bench serve sends. */
  sampling?: { temperature?: number; topP?: number; topK?: number; minP?: number };
  /** A JSON object merged into every request body (vllm bench serve --extra-body). */
  extraBody?: Record<string, unknown>;
  /** KEY=VALUE headers sent with every request (vllm bench serve --header). */
  headers?: string[];
  /** Runs of each load, each with fresh prompts; figures then read mean ± 95% interval (CV). Default 1. */
  trials?: number;
  /** Objectives each load is judged on: "ttft_p99<=2000,tpot_p99<=50", goodput>=95% (agent's --slo). */
  slo?: string;
  /** Find the highest concurrency (or request rate) that meets `slo`, bracketing by doubling then bisecting. */
  search?: 'concurrency' | 'rate';
  /** The highest load the search tries. */
  searchMax?: number;
  /** Milliseconds between samples of each GPU's power and clocks (nvidia-smi) while a level runs; 0 turns it off (the agent's default 500). */
  gpuSampleMs?: number;
  /** A check of the client's own limit: the load generator holds each send back this many ms, so its dispatch delay shows. */
  slowClientMs?: number;
  /** Bearer token for a server started with --api-key; handed to the agent on stdin, never stored. */
  apiKey?: string;
}

/**
 * random: generated prompts; jsonl: a file of prompts; sharegpt: ShareGPT conversations; prefix_repetition:
 * groups of generated prompts that share a prefix (each as vllm bench serve's --dataset-name); multi_turn:
 * conversations whose context grows turn by turn (as vLLM's benchmarks/multi_turn drives them).
 */
export type MacroDataset = NonNullable<MacroAgentOptions['datasetName']>;

/** The workloads MacroOptions has fields of its own for; any other the agent defines goes through workloadOptions. */
const OWN_FIELDS: readonly MacroDataset[] = ['random', 'jsonl', 'sharegpt', 'prefix_repetition', 'multi_turn'];

/** A workload the agent defines that MacroOptions has no fields for: offered, asked and passed from its table row. */
export function tableWorkload(name: MacroDataset | undefined): MacroWorkloadSpec | undefined {
  return name && !OWN_FIELDS.includes(name) ? MACRO_WORKLOADS.find((w) => w.name === name) : undefined;
}

/** The workloads offered from the agent's table alone (the front ends ask their options from their rows). */
export const TABLE_WORKLOADS: readonly MacroWorkloadSpec[] = MACRO_WORKLOADS.filter((w) => !OWN_FIELDS.includes(w.name));

/** A workload option's value as its row takes it: a number of its kind at least its minimum, one of its choices. */
export function workloadOptionProblem(spec: AgentOptionSpec, value: unknown): string | undefined {
  const name = spec.flag.slice(2).replace(/-/g, ' ');
  if (spec.kind === 'int' || spec.kind === 'float') {
    const whole = spec.kind === 'int';
    if (typeof value !== 'number' || !Number.isFinite(value) || (whole && !Number.isInteger(value)) || (spec.minimum !== undefined && value < spec.minimum))
      return `${name} must be ${whole ? 'a whole number' : 'a number'}${spec.minimum !== undefined ? `, at least ${spec.minimum}` : ''}; got ${String(value)}.`;
    if (!whole && !(value > 0) && spec.minimum === undefined) return `${name} must be above 0; got ${value}.`;
  }
  if (spec.choices && !spec.choices.includes(String(value))) return `${name} must be one of ${spec.choices.join(', ')}; got ${String(value)}.`;
  return undefined;
}

/** The agent's default turns per conversation, from its option table (--multi-turn-turns). */
export const MULTI_TURN_DEFAULT_TURNS = AGENT_OPTIONS.macro.multiTurnTurns.default as number;

/** The agent's defaults for prefix repetition (vllm/benchmarks/datasets.py, PrefixRepetitionRandomDataset's). */
export const PREFIX_REPETITION_DEFAULTS = {
  prefixLen: AGENT_OPTIONS.macro.prefixRepetitionPrefixLen.default as number,
  suffixLen: AGENT_OPTIONS.macro.prefixRepetitionSuffixLen.default as number,
  numPrefixes: AGENT_OPTIONS.macro.prefixRepetitionNumPrefixes.default as number,
};

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
  const rates = positiveList(o.requestRate, 'request rate', true);
  // A workload that sets its own pace (a trace) takes no concurrency levels: without rates it plays as recorded.
  const rateOnly = !(MACRO_WORKLOADS.find((w) => w.name === macroDataset(o).name)?.modes.includes('concurrency') ?? true);
  const levels = rates || rateOnly ? undefined : positiveList(o.concurrency, 'concurrency')!;
  if (levels?.some((c) => !Number.isInteger(c))) throw new MacroOptionsError('concurrency levels must be whole numbers, for example 1,8,32.');
  for (const [name, v] of [
    ['input length', o.inputLen],
    ['output length', o.outputLen],
  ] as const) {
    if (!Number.isInteger(v) || v < 1) throw new MacroOptionsError(`${name} must be a whole number of tokens, at least 1; got ${v}.`);
  }
  const slos = Object.entries(o.goodput ?? {}).filter(([, v]) => v !== undefined);
  if (o.trials !== undefined && (!Number.isInteger(o.trials) || o.trials < 1))
    throw new MacroOptionsError(`trials must be a whole number, at least 1; got ${o.trials}.`);
  if (o.search && !o.slo?.trim())
    throw new MacroOptionsError('a search for the highest load needs the objectives to meet, for example --slo "ttft_p99<=2000,tpot_p99<=50".');
  if (o.search === 'concurrency' && rates)
    throw new MacroOptionsError('a concurrency search runs closed-loop levels: leave out the request rates (or search by rate).');
  const dataset = datasetOptions(o);
  return agentOptionArgs('macro', {
    url: o.url ?? serverUrl,
    api: o.api,
    inputLen: o.inputLen,
    outputLen: o.outputLen,
    requestRate: rates?.map((r) => (Number.isFinite(r) ? String(r) : 'inf')).join(','),
    maxConcurrency: rates ? o.maxConcurrency : undefined,
    burstiness: rates ? o.burstiness : undefined,
    concurrency: levels?.join(','),
    model: o.model || undefined,
    requests: o.requests,
    duration: o.durationS,
    noIgnoreEos: o.ignoreEos === false,
    warmup: o.warmup,
    seed: o.seed,
    percentiles: o.percentiles?.length ? o.percentiles.join(',') : undefined,
    goodput: slos.length ? slos.map(([k, v]) => `${k}:${v}`).join(' ') : undefined,
    ...dataset,
    ...requestExtras(o),
    workers: o.workers !== undefined ? String(o.workers) : undefined,
    requestTimeout: o.requestTimeoutS,
    stallTimeout: o.stallTimeoutS,
    gpuSampleMs: o.gpuSampleMs,
    slowClientMs: o.slowClientMs || undefined,
    trials: o.trials !== undefined && o.trials > 1 ? o.trials : undefined,
    slo: o.slo?.trim() || undefined,
    search: o.search,
    searchMax: o.search ? o.searchMax : undefined,
  });
}

/** The dataset a run's options name: its kind (undefined when a file's kind is left to the agent to tell) and file. */
export function macroDataset(o: MacroOptions): { name?: MacroDataset; path?: string } {
  if (o.promptsFile) return { name: 'jsonl', path: o.promptsFile };
  if (o.datasetPath) return { name: o.dataset, path: o.datasetPath };
  return { name: o.dataset ?? 'random' };
}

function datasetOptions(o: MacroOptions): MacroAgentOptions {
  const { name, path } = macroDataset(o);
  if (o.promptsFile && o.dataset && o.dataset !== 'jsonl')
    throw new MacroOptionsError(`a prompts file is a JSONL of prompts, not a ${o.dataset} dataset; give the ${o.dataset} file as the dataset path.`);
  if (o.promptsFile && o.datasetPath && o.datasetPath !== o.promptsFile)
    throw new MacroOptionsError('the prompts file and the dataset path name different files; give one of them.');
  if ((name === 'random' || name === 'prefix_repetition' || name === 'multi_turn') && o.datasetPath)
    throw new MacroOptionsError(`${GENERATED_WORDS[name]} take no dataset file; got ${o.datasetPath}.`);
  if (name === 'multi_turn') return multiTurnOptions(o);
  const fromTable = tableWorkload(name);
  if (fromTable) return tableWorkloadOptions(o, fromTable, path);
  if (name === 'prefix_repetition') {
    for (const [label, v] of Object.entries(o.prefixRepetition ?? {}))
      if (v !== undefined && (!Number.isInteger(v) || v < 1))
        throw new MacroOptionsError(`prefix repetition ${label} must be a whole number, at least 1; got ${v}.`);
    if (o.rangeRatio) throw new MacroOptionsError('range ratio applies to random prompts only: prefix-repetition prompts keep the prefix and suffix lengths.');
    const p = o.prefixRepetition ?? {};
    return {
      datasetName: 'prefix_repetition',
      prefixRepetitionPrefixLen: p.prefixLen,
      prefixRepetitionSuffixLen: p.suffixLen,
      prefixRepetitionNumPrefixes: p.numPrefixes,
    };
  }
  if (name && name !== 'random' && !path) throw new MacroOptionsError(`the ${name} dataset needs its file's path on the host.`);
  if (o.rangeRatio !== undefined) {
    if (!(o.rangeRatio >= 0 && o.rangeRatio < 1))
      throw new MacroOptionsError(`range ratio must be at least 0 and below 1, for example 0.25; got ${o.rangeRatio}.`);
    if (o.rangeRatio > 0 && name !== 'random')
      throw new MacroOptionsError("range ratio applies to random prompts only: a dataset's prompts keep their own lengths.");
  }
  if (o.sharegptOutputLen !== undefined) {
    if (!Number.isInteger(o.sharegptOutputLen) || o.sharegptOutputLen < 1)
      throw new MacroOptionsError(`ShareGPT output length must be a whole number of tokens, at least 1; got ${o.sharegptOutputLen}.`);
    if (name !== 'sharegpt')
      throw new MacroOptionsError('a ShareGPT output length applies to the sharegpt dataset only; for random prompts give the output length.');
  }
  if (o.promptsFile) return { promptsFile: o.promptsFile, rangeRatio: o.rangeRatio || undefined, sharegptOutputLen: o.sharegptOutputLen };
  return {
    datasetName: path ? name : undefined,
    datasetPath: path,
    rangeRatio: o.rangeRatio || undefined,
    sharegptOutputLen: o.sharegptOutputLen,
  };
}

function tableWorkloadOptions(o: MacroOptions, w: MacroWorkloadSpec, path: string | undefined): MacroAgentOptions {
  if (w.takesFile && !path) throw new MacroOptionsError(`${w.title} needs its file's path on the host.`);
  if (!w.takesFile && path) throw new MacroOptionsError(`${w.title} takes no dataset file; got ${path}.`);
  if (o.rangeRatio) throw new MacroOptionsError(`range ratio applies to random prompts only, not to ${w.title}.`);
  if (o.requestRate?.length && !w.modes.includes('rate')) throw new MacroOptionsError(`${w.title} runs at concurrency levels, not request rates.`);
  const own: Partial<MacroAgentOptions> = {};
  for (const [key, value] of Object.entries(o.workloadOptions ?? {}) as [keyof MacroAgentOptions, unknown][]) {
    if (value === undefined) continue;
    if (!w.options.includes(key)) throw new MacroOptionsError(`${AGENT_OPTIONS.macro[key].flag.slice(2)} is not an option of ${w.title}.`);
    const problem = workloadOptionProblem(AGENT_OPTIONS.macro[key], value);
    if (problem) throw new MacroOptionsError(problem);
    Object.assign(own, { [key]: value });
  }
  return { datasetName: w.name, datasetPath: path, ...own };
}

const GENERATED_WORDS = { random: 'random prompts', prefix_repetition: 'prefix-repetition prompts', multi_turn: 'multi-turn conversations' };

function multiTurnOptions(o: MacroOptions): MacroAgentOptions {
  const m = o.multiTurn ?? {};
  for (const [label, v] of Object.entries(m))
    if (v !== undefined && (!Number.isInteger(v) || v < 1)) throw new MacroOptionsError(`multi-turn ${label} must be a whole number, at least 1; got ${v}.`);
  if (o.requestRate?.length)
    throw new MacroOptionsError('multi-turn conversations run at concurrency levels, not request rates: each sends its next turn when the last is answered.');
  if (o.rangeRatio) throw new MacroOptionsError('range ratio applies to random prompts only: every turn of a conversation adds the input length.');
  return { datasetName: 'multi_turn', multiTurnTurns: m.turns, multiTurnConversations: m.conversations };
}

function requestExtras(o: MacroOptions): MacroAgentOptions {
  const s = o.sampling ?? {};
  for (const [label, v] of Object.entries(s))
    if (v !== undefined && !Number.isFinite(v)) throw new MacroOptionsError(`${label} must be a number; got ${String(v)}.`);
  if (s.topK !== undefined && !Number.isInteger(s.topK)) throw new MacroOptionsError(`top-k must be a whole number; got ${s.topK}.`);
  for (const h of o.headers ?? []) {
    const at = h.indexOf('=');
    if (at < 1 || /[\r\n]/.test(h)) throw new MacroOptionsError(`a header is KEY=VALUE, for example x-tenant=bench; got "${h}".`);
  }
  return {
    temperature: s.temperature,
    topP: s.topP,
    topK: s.topK,
    minP: s.minP,
    extraBody: o.extraBody && Object.keys(o.extraBody).length ? JSON.stringify(o.extraBody) : undefined,
    header: o.headers?.length ? o.headers : undefined,
  };
}

const percent = (r: number) => `${Math.round(r * 1000) / 10}%`;

/** The lengths a request may draw, as the agent bounds them (macro/prompts.py length_range, vLLM's floor and ceil). */
export function lengthRange(length: number, ratio: number): [number, number] {
  return [Math.max(1, Math.floor(length * (1 - ratio))), Math.max(1, Math.ceil(length * (1 + ratio)))];
}

/**
 * What a run's prompts are, in words, as the quick picks and the findings say it: "random prompts,
 * 256 → 128 tokens, each ±25% (range ratio 0.25)", "ShareGPT conversations from FILE, ...".
 */
export function datasetText(o: MacroOptions): string {
  const extras = requestExtrasText(o);
  return extras ? `${promptsText(o)}; ${extras}` : promptsText(o);
}

/** What every request carried beyond its prompt, in words: "temperature 0.6, top-k 40, extra body {…}, headers x-tenant". */
export function requestExtrasText(o: MacroOptions): string {
  const s = o.sampling ?? {};
  const parts = [
    s.temperature !== undefined ? `temperature ${s.temperature}` : '',
    s.topP !== undefined ? `top-p ${s.topP}` : '',
    s.topK !== undefined ? `top-k ${s.topK}` : '',
    s.minP !== undefined ? `min-p ${s.minP}` : '',
    o.extraBody && Object.keys(o.extraBody).length ? `extra body ${JSON.stringify(o.extraBody)}` : '',
    // Header values may be a gateway's tokens: only their names are said.
    o.headers?.length ? `headers ${o.headers.map((h) => h.slice(0, h.indexOf('='))).join(', ')}` : '',
  ];
  return parts.filter(Boolean).join(', ');
}

function promptsText(o: MacroOptions): string {
  const { name, path } = macroDataset(o);
  if (name === 'jsonl') return `prompts from ${path}`;
  if (name === 'sharegpt') {
    return `ShareGPT conversations from ${path}, ${o.sharegptOutputLen !== undefined ? `${o.sharegptOutputLen} output tokens each` : "each with its second turn's output length"}`;
  }
  const fromTable = tableWorkload(name);
  if (fromTable) {
    const own = Object.entries(o.workloadOptions ?? {}).filter(([, v]) => v !== undefined);
    const said = own.map(([k, v]) => `${AGENT_OPTIONS.macro[k as keyof MacroAgentOptions].flag.slice(2).replace(/-/g, ' ')} ${String(v)}`);
    return [`${fromTable.title}${path ? ` from ${path}` : ''}`, ...said].join(', ');
  }
  if (path) return `prompts from ${path}`;
  if (name === 'multi_turn') return multiTurnText(o);
  if (name === 'prefix_repetition') {
    const given = Object.entries(o.prefixRepetition ?? {}).filter(([, v]) => v !== undefined);
    const p = { ...PREFIX_REPETITION_DEFAULTS, ...Object.fromEntries(given) };
    return (
      `prompts in ${p.numPrefixes} groups sharing a prefix (vllm bench serve's prefix_repetition): ${p.prefixLen} shared + ` +
      `${p.suffixLen} own tokens → ${o.outputLen ?? DEFAULT_MACRO_OPTIONS.outputLen} tokens`
    );
  }
  const input = o.inputLen ?? DEFAULT_MACRO_OPTIONS.inputLen;
  const output = o.outputLen ?? DEFAULT_MACRO_OPTIONS.outputLen;
  if (!o.rangeRatio) return `random prompts, ${input} → ${output} tokens`;
  const [inLow, inHigh] = lengthRange(input, o.rangeRatio);
  const [outLow, outHigh] = lengthRange(output, o.rangeRatio);
  return `random prompts, ${input} → ${output} tokens, each ±${percent(o.rangeRatio)} (${inLow}–${inHigh} → ${outLow}–${outHigh}, range ratio ${o.rangeRatio})`;
}

/** "multi-turn: 16 conversations × 4 turns, +256 tokens a turn → 128 output tokens, each turn sending the whole history". */
function multiTurnText(o: MacroOptions): string {
  const turns = o.multiTurn?.turns ?? MULTI_TURN_DEFAULT_TURNS;
  // As the agent counts them (macro/command.py, conversation_count): a level of seconds starts new ones until its end;
  // else as many as given, or the level's requests ÷ turns.
  const conversations =
    o.durationS !== undefined
      ? `conversations of ${turns} turns, new ones for the level's seconds`
      : o.multiTurn?.conversations !== undefined || o.requests !== undefined
        ? `${o.multiTurn?.conversations ?? Math.max(1, Math.ceil(o.requests! / turns))} conversations × ${turns} turns`
        : `conversations of ${turns} turns, max(8, 4 × concurrency) requests a level`;
  const input = o.inputLen ?? DEFAULT_MACRO_OPTIONS.inputLen;
  const output = o.outputLen ?? DEFAULT_MACRO_OPTIONS.outputLen;
  return `multi-turn: ${conversations}, +${input} tokens a turn → ${output} output tokens, each turn sending the whole history`;
}
