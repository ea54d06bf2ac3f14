import * as vscode from 'vscode';
import { Target } from '../../core/config/target';
import {
  DEFAULT_MACRO_OPTIONS,
  MULTI_TURN_DEFAULT_TURNS,
  MacroOptions,
  PREFIX_REPETITION_DEFAULTS,
  TABLE_WORKLOADS,
  datasetText,
  tableWorkload,
  workloadOptionProblem,
  macroAgentArgs,
  macroDataset,
} from '../../core/macro/options';
import { readSettings } from '../settings';
import { AGENT_OPTIONS, MacroWorkloadSpec } from '../../remote/agentOptions';
import { runMacroPhase } from '../../core/phases/macro';
import { PhaseRunner } from './phaseRunner';

interface Workload {
  label: string;
  options: MacroOptions;
}

// The seed scenario first: single-stream decode speed, then how throughput grows with load.
const WORKLOADS: Workload[] = [
  { label: 'Single stream, then a concurrency sweep', options: {} },
  { label: 'Single stream only', options: { concurrency: [1] } },
  { label: 'Wide concurrency sweep', options: { concurrency: [1, 2, 4, 8, 16, 32, 64, 128, 256] } },
  { label: 'Request-rate sweep (Poisson arrivals)', options: { requestRate: [1, 2, 4, 8, 16], burstiness: 1 } },
];

function parseList(text: string): number[] {
  return text
    .split(/[\s,]+/)
    .filter(Boolean)
    .map((x) => (/^inf$/i.test(x) ? Infinity : Number(x)));
}

/** How many requests each level sends, as the agent decides when nothing is given. */
function perLevel(o: MacroOptions): string {
  if (o.durationS !== undefined) return `${o.durationS} s per level`;
  if (o.requests !== undefined) return `${o.requests} requests per level`;
  return o.requestRate?.length ? '10 s worth of requests per level' : 'max(8, 4 × concurrency) requests per level';
}

/** A workload in one line, as the quick pick and the memory show it. */
export function describeWorkload(o: MacroOptions): string {
  const load = o.requestRate?.length
    ? `${o.requestRate.map((r) => (Number.isFinite(r) ? r : '∞')).join(', ')} req/s (burstiness ${o.burstiness ?? 1}${o.maxConcurrency ? `, at most ${o.maxConcurrency} in flight` : ''})`
    : `concurrency ${(o.concurrency ?? DEFAULT_MACRO_OPTIONS.concurrency).join(', ')}`;
  const data = datasetText(o);
  const slos = Object.entries(o.goodput ?? {}).filter(([, v]) => v !== undefined);
  return [load, perLevel(o), data, slos.length ? `goodput SLOs ${slos.map(([k, v]) => `${k.toUpperCase()} ≤ ${v} ms`).join(', ')}` : '']
    .filter(Boolean)
    .join('; ');
}

/** What a level's size was typed as: a request count ("64") or a duration ("30s"). */
function parseLevelSize(text: string): Pick<MacroOptions, 'requests' | 'durationS'> | undefined | 'invalid' {
  const t = text.trim();
  if (!t) return undefined;
  const m = /^(\d+(?:\.\d+)?)\s*s$/i.exec(t);
  if (m) return Number(m[1]) > 0 ? { durationS: Number(m[1]) } : 'invalid';
  return /^\d+$/.test(t) && Number(t) > 0 ? { requests: Number(t) } : 'invalid';
}

/** Goodput SLOs typed as `vllm bench serve --goodput` takes them: "ttft:500 tpot:50 e2el:10000". */
function parseSlos(text: string): MacroOptions['goodput'] | undefined | 'invalid' {
  const parts = text
    .trim()
    .split(/[\s,]+/)
    .filter(Boolean);
  if (!parts.length) return undefined;
  const out: NonNullable<MacroOptions['goodput']> = {};
  for (const p of parts) {
    const m = /^(ttft|tpot|e2el):(\d+(?:\.\d+)?)$/i.exec(p);
    if (!m || !(Number(m[2]) > 0)) return 'invalid';
    out[m[1].toLowerCase() as 'ttft' | 'tpot' | 'e2el'] = Number(m[2]);
  }
  return out;
}

/** Sampling typed as "temperature=0.6 top-p=0.9 top-k=20" (any of them, in any order). */
function parseSampling(text: string): MacroOptions['sampling'] | undefined | 'invalid' {
  const parts = text
    .trim()
    .split(/[\s,]+/)
    .filter(Boolean);
  if (!parts.length) return undefined;
  const keys = { temperature: 'temperature', 'top-p': 'topP', 'top-k': 'topK' } as const;
  const out: NonNullable<MacroOptions['sampling']> = {};
  for (const p of parts) {
    const m = /^(temperature|top-p|top-k)=(-?\d+(?:\.\d+)?)$/i.exec(p);
    if (!m) return 'invalid';
    const key = keys[m[1].toLowerCase() as keyof typeof keys];
    if (key === 'topK' && !Number.isInteger(Number(m[2]))) return 'invalid';
    out[key] = Number(m[2]);
  }
  return out;
}

function samplingText(s: MacroOptions['sampling']): string {
  if (!s) return '';
  const pairs: [string, number | undefined][] = [
    ['temperature', s.temperature],
    ['top-p', s.topP],
    ['top-k', s.topK],
  ];
  return pairs
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k}=${v}`)
    .join(' ');
}

/** Whole numbers above 0, `count` of them (empty entries allowed from `optionalFrom` on). */
function wholeNumbers(text: string, count: number, optionalFrom = count): (number | undefined)[] | undefined {
  const parts = text.split(',').map((x) => x.trim());
  if (parts.length > count || parts.length < optionalFrom) return undefined;
  const values = parts.map((x) => (x === '' ? undefined : Number(x)));
  const ok = values.every((v, i) => (v === undefined ? i >= optionalFrom : Number.isInteger(v) && v > 0));
  return ok ? values : undefined;
}

/**
 * The questions `vllm bench serve`'s flags answer, one after another, each proposing what this
 * target ran last: load (concurrency or request rate, burstiness), requests or seconds per level,
 * dataset (random, a JSONL file of prompts or a ShareGPT file on the host), prompt and output lengths and
 * their range, goodput SLOs.
 */
async function customWorkload(target: Target, last: MacroOptions): Promise<MacroOptions | undefined> {
  const title = (step: string) => `Run Macro Phase on ${target.name}: ${step}`;
  const mode = await vscode.window.showQuickPick(
    [
      { label: 'Concurrency levels', detail: 'a fixed number of requests in flight per level (--max-concurrency)', rate: false },
      { label: 'Request rates', detail: 'requests sent at a rate, gamma-distributed gaps (--request-rate, --burstiness)', rate: true },
    ],
    { title: title('load'), placeHolder: 'How is the load set?', ignoreFocusOut: true },
  );
  if (!mode) return undefined;
  const options: MacroOptions = {};
  if (!mode.rate) {
    const levels = await vscode.window.showInputBox({
      title: title('concurrency levels'),
      prompt: 'Requests in flight at each level, comma-separated',
      value: (last.requestRate?.length ? DEFAULT_MACRO_OPTIONS.concurrency : (last.concurrency ?? DEFAULT_MACRO_OPTIONS.concurrency)).join(', '),
      ignoreFocusOut: true,
      validateInput: (v) =>
        parseList(v).length && parseList(v).every((n) => Number.isInteger(n) && n > 0) ? undefined : 'Whole numbers above 0, for example 1, 8, 32',
    });
    if (levels === undefined) return undefined;
    options.concurrency = parseList(levels);
  } else {
    const rates = await vscode.window.showInputBox({
      title: title('request rates'),
      prompt: 'Requests per second at each level, comma-separated (inf sends them all at once)',
      value: (last.requestRate ?? [1, 2, 4, 8, 16]).map((r) => (Number.isFinite(r) ? r : 'inf')).join(', '),
      ignoreFocusOut: true,
      validateInput: (v) => (parseList(v).length && parseList(v).every((n) => n > 0) ? undefined : 'Numbers above 0 or inf, for example 1, 4, 16'),
    });
    if (rates === undefined) return undefined;
    options.requestRate = parseList(rates);
    const burst = await vscode.window.showInputBox({
      title: title('burstiness'),
      prompt: 'Gamma shape of the gaps between requests: 1 is Poisson, below 1 burstier, above 1 steadier',
      value: String(last.burstiness ?? 1),
      ignoreFocusOut: true,
      validateInput: (v) => (Number(v) > 0 ? undefined : 'A number above 0, for example 1'),
    });
    if (burst === undefined) return undefined;
    options.burstiness = Number(burst);
  }
  const size = await vscode.window.showInputBox({
    title: title('requests per level'),
    prompt: `A request count ("64") or seconds ("30s") per level; empty for the default (${perLevel({ requestRate: options.requestRate })})`,
    value: last.durationS !== undefined ? `${last.durationS}s` : last.requests !== undefined ? String(last.requests) : '',
    ignoreFocusOut: true,
    validateInput: (v) => (parseLevelSize(v) === 'invalid' ? 'A whole number of requests, or seconds such as 30s' : undefined),
  });
  if (size === undefined) return undefined;
  Object.assign(options, parseLevelSize(size) ?? {});
  const lastDataset = macroDataset(last);
  const hostName = target.kind === 'local' ? 'this machine' : target.host;
  const dataset = await vscode.window.showQuickPick(
    [
      {
        label: 'Random prompts',
        detail: 'of a given length, or each its own within a range, as vllm bench serve --dataset-name random',
        source: 'random' as const,
      },
      { label: 'A JSONL file of prompts on the host', detail: 'one {"prompt": ...} per line (--prompts-file)', source: 'jsonl' as const },
      {
        label: 'Prefix repetition',
        detail: "groups of prompts that share a prefix, as vllm bench serve --dataset-name prefix_repetition: the server's prefix cache at work",
        source: 'prefix_repetition' as const,
      },
      {
        label: 'Multi-turn conversations',
        detail: "each turn sends the whole history with the server's answers, the context growing turn by turn; later turns hit the prefix cache",
        source: 'multi_turn' as const,
      },
      {
        label: 'A ShareGPT file on the host',
        detail:
          "conversations as vllm bench serve --dataset-name sharegpt reads them: the first turn is the prompt, the second turn's length the output length",
        source: 'sharegpt' as const,
      },
      // The workloads the agent's table alone defines, each offered as the agent describes it.
      ...TABLE_WORKLOADS.filter((w) => w.modes.includes(mode.rate ? 'rate' : 'concurrency') || !w.modes.includes('concurrency')).map((w) => ({
        label: w.title[0].toUpperCase() + w.title.slice(1),
        detail: !mode.rate && !w.modes.includes('concurrency') ? `${w.detail}; at its own pace (request rates scale it)` : w.detail,
        source: w.name,
      })),
    ]
      // A conversation sends its next turn when the last is answered: no request rates.
      .filter((d) => !(mode.rate && d.source === 'multi_turn'))
      .sort((a, b) => Number(b.source === lastDataset.name) - Number(a.source === lastDataset.name)),
    { title: title('dataset'), placeHolder: 'Which prompts?', ignoreFocusOut: true },
  );
  if (!dataset) return undefined;
  const fromTable = tableWorkload(dataset.source);
  if (fromTable) {
    const own = await tableWorkloadOptions(fromTable, last, hostName, title);
    if (!own) return undefined;
    Object.assign(options, own);
    // A workload that sets its own pace takes no concurrency levels.
    if (!fromTable.modes.includes('concurrency')) delete options.concurrency;
  } else if (dataset.source === 'prefix_repetition') {
    const p = { ...PREFIX_REPETITION_DEFAULTS, ...last.prefixRepetition };
    const text = await vscode.window.showInputBox({
      title: title('shared prefixes'),
      prompt: 'Prefix tokens a group shares, suffix tokens of each request, number of prefixes (groups)',
      value: `${p.prefixLen}, ${p.suffixLen}, ${p.numPrefixes}`,
      ignoreFocusOut: true,
      validateInput: (v) => (wholeNumbers(v, 3) ? undefined : 'Three whole numbers, for example 256, 256, 10'),
    });
    if (text === undefined) return undefined;
    const [prefixLen, suffixLen, numPrefixes] = wholeNumbers(text, 3)!;
    options.dataset = 'prefix_repetition';
    options.prefixRepetition = { prefixLen, suffixLen, numPrefixes };
  } else if (dataset.source === 'multi_turn') {
    const m = last.multiTurn ?? {};
    const text = await vscode.window.showInputBox({
      title: title('conversations'),
      prompt: "Turns a conversation, and conversations a level (empty: the level's requests ÷ turns)",
      value: `${m.turns ?? MULTI_TURN_DEFAULT_TURNS}, ${m.conversations ?? ''}`,
      ignoreFocusOut: true,
      validateInput: (v) => (wholeNumbers(v, 2, 1) ? undefined : 'Whole numbers: turns, then conversations or nothing, for example 4, 16'),
    });
    if (text === undefined) return undefined;
    const [turns, conversations] = wholeNumbers(text, 2, 1)!;
    options.dataset = 'multi_turn';
    options.multiTurn = { turns, ...(conversations !== undefined ? { conversations } : {}) };
  } else if (dataset.source !== 'random') {
    const file = await vscode.window.showInputBox({
      title: title(dataset.source === 'jsonl' ? 'prompts file' : 'ShareGPT file'),
      prompt:
        dataset.source === 'jsonl'
          ? `The JSONL file's path on ${hostName}`
          : `The ShareGPT JSON file's path on ${hostName} (for example ShareGPT_V3_unfiltered_cleaned_split.json)`,
      value: lastDataset.name === dataset.source ? (lastDataset.path ?? '') : '',
      ignoreFocusOut: true,
      validateInput: (v) => (v.trim() ? undefined : 'A path on the host'),
    });
    if (file === undefined) return undefined;
    if (dataset.source === 'jsonl') options.promptsFile = file.trim();
    else {
      options.dataset = 'sharegpt';
      options.datasetPath = file.trim();
    }
  }
  if (dataset.source === 'sharegpt') {
    const out = await vscode.window.showInputBox({
      title: title('output tokens'),
      prompt: "Output tokens per request; empty for each conversation's own (its second turn's length; --sharegpt-output-len)",
      value: last.sharegptOutputLen !== undefined ? String(last.sharegptOutputLen) : '',
      ignoreFocusOut: true,
      validateInput: (v) => (!v.trim() || (Number.isInteger(Number(v)) && Number(v) > 0) ? undefined : 'A whole number above 0, or empty'),
    });
    if (out === undefined) return undefined;
    if (out.trim()) options.sharegptOutputLen = Number(out);
  } else if (dataset.source === 'prefix_repetition') {
    const out = await vscode.window.showInputBox({
      title: title('output tokens'),
      prompt: 'Output tokens per request',
      value: String(last.outputLen ?? DEFAULT_MACRO_OPTIONS.outputLen),
      ignoreFocusOut: true,
      validateInput: (v) => (wholeNumbers(v, 1) ? undefined : 'A whole number above 0, for example 128'),
    });
    if (out === undefined) return undefined;
    options.outputLen = Number(out);
  } else if (!fromTable?.takesFile) {
    const lengths = await vscode.window.showInputBox({
      title: title(dataset.source === 'multi_turn' ? 'tokens a turn' : 'prompt and output tokens'),
      prompt:
        dataset.source === 'jsonl'
          ? "Output tokens per request (the prompts are the file's); prompt tokens are ignored"
          : dataset.source === 'multi_turn'
            ? 'Tokens each user turn adds, output tokens of each answer'
            : 'Prompt tokens, output tokens',
      value: `${last.inputLen ?? DEFAULT_MACRO_OPTIONS.inputLen}, ${last.outputLen ?? DEFAULT_MACRO_OPTIONS.outputLen}`,
      ignoreFocusOut: true,
      validateInput: (v) =>
        parseList(v).length === 2 && parseList(v).every((n) => Number.isInteger(n) && n > 0) ? undefined : 'Two whole numbers, for example 256, 128',
    });
    if (lengths === undefined) return undefined;
    [options.inputLen, options.outputLen] = parseList(lengths);
  }
  if (dataset.source === 'random') {
    const range = await vscode.window.showInputBox({
      title: title('length range'),
      prompt:
        "Range ratio r: each request's prompt and output lengths drawn uniformly from len × (1 − r) to len × (1 + r) (--random-range-ratio); 0 keeps them fixed",
      value: String(last.rangeRatio ?? 0),
      ignoreFocusOut: true,
      validateInput: (v) => (Number(v) >= 0 && Number(v) < 1 ? undefined : 'A number from 0 to below 1, for example 0.25'),
    });
    if (range === undefined) return undefined;
    if (Number(range) > 0) options.rangeRatio = Number(range);
  }
  const sampling = await vscode.window.showInputBox({
    title: title('sampling'),
    prompt: 'Sampling every request asks for, for example temperature=0.6 top-p=0.9 top-k=20 (empty: greedy, temperature 0, as vllm bench serve)',
    value: samplingText(last.sampling),
    ignoreFocusOut: true,
    validateInput: (v) => (parseSampling(v) === 'invalid' ? 'Pairs such as temperature=0.6 top-p=0.9 top-k=20' : undefined),
  });
  if (sampling === undefined) return undefined;
  const picked = parseSampling(sampling);
  if (picked && picked !== 'invalid') options.sampling = picked;
  const slos = await vscode.window.showInputBox({
    title: title('goodput SLOs'),
    prompt: 'Goodput counts the requests that meet every SLO, in ms, for example ttft:500 tpot:50 (empty for none)',
    value: Object.entries(last.goodput ?? {})
      .map(([k, v]) => `${k}:${v}`)
      .join(' '),
    ignoreFocusOut: true,
    validateInput: (v) => (parseSlos(v) === 'invalid' ? 'Pairs such as ttft:500 tpot:50 e2el:10000 (milliseconds)' : undefined),
  });
  if (slos === undefined) return undefined;
  const goodput = parseSlos(slos);
  if (goodput && goodput !== 'invalid') options.goodput = goodput;
  macroAgentArgs(options, target.serverUrl); // validates; throws a message naming the bad option
  return options;
}

/** A table workload's file and own options, each asked as its row in the agent's table explains it. */
async function tableWorkloadOptions(
  w: MacroWorkloadSpec,
  last: MacroOptions,
  hostName: string | undefined,
  title: (step: string) => string,
): Promise<MacroOptions | undefined> {
  const options: MacroOptions = { dataset: w.name, workloadOptions: {} };
  if (w.takesFile) {
    const lastOne = macroDataset(last);
    const file = await vscode.window.showInputBox({
      title: title(`${w.title}: file`),
      prompt: `The file's path on ${hostName ?? 'the host'}`,
      value: lastOne.name === w.name ? (lastOne.path ?? '') : '',
      ignoreFocusOut: true,
      validateInput: (v) => (v.trim() ? undefined : 'A path on the host'),
    });
    if (file === undefined) return undefined;
    options.datasetPath = file.trim();
  }
  for (const key of w.options) {
    const spec = AGENT_OPTIONS.macro[key];
    const number = spec.kind === 'int' || spec.kind === 'float';
    const previous = last.dataset === w.name ? last.workloadOptions?.[key] : undefined;
    const typed = await vscode.window.showInputBox({
      title: title(`${w.title}: ${spec.flag.slice(2).replace(/-/g, ' ')}`),
      prompt: spec.help,
      value: String(previous ?? spec.default ?? ''),
      ignoreFocusOut: true,
      validateInput: (v) => (!v.trim() ? undefined : workloadOptionProblem(spec, number ? Number(v) : v.trim())),
    });
    if (typed === undefined) return undefined;
    if (typed.trim() && typed.trim() !== String(spec.default)) Object.assign(options.workloadOptions!, { [key]: number ? Number(typed) : typed.trim() });
  }
  return options;
}

interface Remembered {
  label: string;
  options: MacroOptions;
}

/** The macro phase; `memory` (the workspace's state) keeps each target's last workload, offered first next time. */
export function macroRunner(memory: vscode.Memento): PhaseRunner {
  const key = (target: Target) => `inferenceBench.macro.lastWorkload/${target.name}`;
  return {
    phase: 'macro',
    title: 'Macro phase (serving benchmark)',
    needsGpusFree: false,
    async pickOptions(target, defaults) {
      if (defaults) return { ...WORKLOADS[0].options };
      const last = memory.get<Remembered>(key(target));
      type Item = vscode.QuickPickItem & { options?: MacroOptions; custom?: boolean };
      const items: Item[] = [
        ...(last
          ? [
              {
                label: `$(history) Again: ${last.label}`,
                detail: describeWorkload(last.options),
                description: `last run on ${target.name}`,
                options: last.options,
              },
            ]
          : []),
        ...WORKLOADS.map((w): Item => ({ label: w.label, detail: describeWorkload(w.options), options: w.options })),
        {
          label: 'Custom…',
          detail:
            'concurrency or request rate, requests or seconds per level, dataset (random, prefix repetition, multi-turn, JSONL, ShareGPT), lengths, sampling, goodput SLOs',
          custom: true,
        },
      ];
      const picked = await vscode.window.showQuickPick(items, {
        title: `Run Macro Phase on ${target.name}`,
        placeHolder: `Load against ${target.serverUrl} (the load generator runs on ${target.name})`,
        matchOnDetail: true,
        ignoreFocusOut: true,
      });
      if (!picked) return undefined;
      const options = picked.custom ? await customWorkload(target, last?.options ?? {}) : { ...picked.options };
      if (!options) return undefined;
      const label = picked.custom ? 'Custom' : picked.label.startsWith('$(history)') ? last!.label : picked.label;
      await memory.update(key(target), { label, options } satisfies Remembered);
      return { ...options } as Record<string, unknown>;
    },
    async run(ctx, options) {
      const { requestTimeoutS, stallTimeoutS, macroTrials, macroSlo } = readSettings();
      const outcome = await runMacroPhase(ctx, { requestTimeoutS, stallTimeoutS, trials: macroTrials, slo: macroSlo, ...(options as MacroOptions) });
      return outcome.summary;
    },
  };
}
