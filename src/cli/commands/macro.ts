import { checkOutPath, CliCommand, parseCommandArgs, phaseExitCode, SIMULATOR_BANNER, UsageError, writeOutputFile } from '../command';
import { AgentCliFlag, agentFlags, agentFlagUsage, flagOf } from '../agentFlags';
import { AGENT_OPTIONS } from '../../remote/agentOptions';
import { agentNumberList, agentValue, finiteNumber, FlagValues, positiveSeconds } from '../flags';
import { cliPhaseContext, openCliTarget, TARGET_OPTIONS, targetUsage } from '../targetOptions';
import { MacroOptions, MacroOptionsError, TABLE_WORKLOADS } from '../../core/macro/options';
import { levelTable, macroHeadline, failureTable, levelLine } from '../../core/macro/tables';
import { conversationTable } from '../../core/macro/conversations';
import { runMacroPhase } from '../../core/phases/macro';
import { renderTextTable } from '../../shared/table';
import { sloLines, sloProblem } from '../../core/macro/sloSearch';
import { collapseTrials, trialsTable } from '../../core/macro/trials';
import { dispatchDelayTable, gpuTelemetryTable } from '../../core/macro/gpuAndDelay';

// Handed to the agent: named, typed and explained by its option table (agent/infbench_agent/options.py).
const LOAD_FLAGS = [
  'concurrency',
  'request-rate',
  'max-concurrency',
  'burstiness',
  'requests',
  'duration',
  'input-len',
  'output-len',
  'range-ratio',
  'random-range-ratio',
  'no-ignore-eos',
  'api',
  'model',
  'prompts-file',
  'dataset-name',
  'dataset-path',
  'sharegpt-output-len',
  'prefix-repetition-prefix-len',
  'prefix-repetition-suffix-len',
  'prefix-repetition-num-prefixes',
  'multi-turn-turns',
  'multi-turn-conversations',
] as const;
const REQUEST_FLAGS = [
  'temperature',
  'top-p',
  'top-k',
  'min-p',
  'extra-body',
  'header',
  'warmup',
  'request-timeout',
  'stall-timeout',
  'goodput',
  'percentiles',
  'workers',
  'seed',
] as const;
const TRIAL_FLAGS = ['trials', 'slo', 'search', 'search-max'] as const;
// The flags of the workloads the agent's table alone defines (trace_replay's...), as the table names them.
const TABLE_WORKLOAD_OPTIONS = TABLE_WORKLOADS.flatMap((w) => w.options);
const TABLE_WORKLOAD_FLAGS = TABLE_WORKLOAD_OPTIONS.map((k) => AGENT_OPTIONS.macro[k].flag.slice(2) as AgentCliFlag<'macro'>);
const GPU_AND_CLIENT_FLAGS = ['gpu-sample-ms', 'slow-client-ms'] as const;

const USAGE = `infbench macro — end-to-end serving benchmark (TTFT, TPOT, ITL, E2EL, throughput, goodput)

Usage: infbench macro [options]

The load generator runs on the target next to the server and streams from its OpenAI-compatible API.
Metrics follow \`vllm bench serve\`; the result file holds one object per level with its field names.

${targetUsage()}
Load:
${agentFlagUsage('macro', LOAD_FLAGS, { concurrency: 'closed-loop levels, comma-separated (default 1,8,32,64)' })}
${agentFlagUsage('macro', TABLE_WORKLOAD_FLAGS)}
Each request:
${agentFlagUsage('macro', REQUEST_FLAGS)}
Trials and the SLO search:
${agentFlagUsage('macro', TRIAL_FLAGS)}
The GPUs and the client:
${agentFlagUsage('macro', GPU_AND_CLIENT_FLAGS)}
Output:
  --out FILE                write the result (one object per level) to FILE as JSON
  --json                    print the result JSON on stdout instead of a table

Ctrl-C stops the run; the levels finished so far are kept and printed.
Example: infbench macro --target local --url http://127.0.0.1:8000 --concurrency 1,8,32 --requests 64 --input-len 256 --output-len 128 --out result.json
Search: infbench macro --target local --slo "ttft_p99<=2000,tpot_p99<=50" --search concurrency --search-max 256 --trials 3`;

/** What the command parses: the target's flags, the agent's for this phase, and its own. */
const OPTIONS = {
  ...TARGET_OPTIONS,
  ...agentFlags('macro', LOAD_FLAGS),
  ...agentFlags('macro', REQUEST_FLAGS),
  ...agentFlags('macro', TRIAL_FLAGS),
  ...agentFlags('macro', TABLE_WORKLOAD_FLAGS),
  ...agentFlags('macro', GPU_AND_CLIENT_FLAGS),
  out: { type: 'string' },
  json: { type: 'boolean' },
} as const;

export const macroCommand: CliCommand = {
  name: 'macro',
  summary: 'serving benchmark: single stream, concurrency sweep or request rates, vllm bench serve metrics',
  usage: USAGE,
  options: OPTIONS,
  async run(argv: string[]): Promise<number> {
    const parsed = parseCommandArgs('macro', {
      args: argv,
      options: OPTIONS,
      strict: true,
    });
    const v = parsed.values;
    const options = macroOptionsFromFlags(v);

    // A bad --out is said before the run, not after it.
    if (v.out) checkOutPath(v.out);
    const opened = await openCliTarget(v, 'macro', 'Stopping: the levels finished so far are kept…');
    try {
      let printed = 0;
      const ctx = cliPhaseContext(opened, (run) => {
        // Finished levels as they end; a level cut short (Cancel, a dropped connection) says how far it got.
        const levels = run.macro?.levels.filter((l) => !l.partial || l.cut) ?? [];
        for (; printed < levels.length; printed++) process.stderr.write(`${levelLine(levels[printed])}\n`);
      });
      let outcome;
      try {
        outcome = await runMacroPhase(ctx, options);
      } catch (err) {
        if (err instanceof MacroOptionsError) throw new UsageError(err.message);
        throw err;
      }
      const result = outcome.run.readResult<Record<string, unknown>>() ?? { levels: outcome.levels };
      const outWritten = !v.out || writeOutputFile('macro', v.out, JSON.stringify(result, null, 2), outcome.run.dir);
      if (v.json) {
        process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
      } else {
        if (outcome.summary.simulated) process.stdout.write(SIMULATOR_BANNER);
        const headline = macroHeadline(collapseTrials(outcome.levels));
        if (headline) process.stdout.write(`${headline}\n\n`);
        if (outcome.levels.length) process.stdout.write(`${renderTextTable(levelTable(outcome.levels))}\n`);
        const trials = trialsTable(outcome.levels);
        if (trials) process.stdout.write(`\n${renderTextTable(trials)}\n`);
        for (const line of sloLines(outcome.slo, outcome.levels)) process.stdout.write(`\n${line.replace(/\*\*/g, '')}\n`);
        const failures = failureTable(outcome.levels);
        if (failures) process.stdout.write(`\n${renderTextTable(failures)}\n`);
        for (const table of [gpuTelemetryTable(outcome.levels), dispatchDelayTable(outcome.levels)])
          if (table) process.stdout.write(`\n${renderTextTable(table)}\n`);
        const conversations = conversationTable(outcome.levels);
        if (conversations) process.stdout.write(`\n${renderTextTable(conversations)}\n`);
        process.stdout.write(`\nRun folder: ${outcome.run.dir}${v.out && outWritten ? `\nResult: ${v.out}` : ''}\n`);
      }
      const code = phaseExitCode('macro', outcome.agent.status, outcome.agent.reason);
      return code === 0 && !outWritten ? 1 : code;
    } finally {
      await opened.close();
    }
  },
};

/** The flags' values as parseArgs gives them: strings, and booleans for the switches. */
export type MacroFlagValues = Record<string, string | boolean | string[] | undefined>;

/** The run's options from `infbench macro`'s flags, each bad value named by its flag. */
export function macroOptionsFromFlags(values: MacroFlagValues): MacroOptions {
  const v = (flag: string): string | undefined => (typeof values[flag] === 'string' ? (values[flag] as string) : undefined);
  const api = agentValue('macro', 'api', values) ?? 'completions';
  const goodput: MacroOptions['goodput'] = {};
  for (const part of (v('goodput') ?? '').split(/[\s,]+/).filter(Boolean)) {
    const [k, val] = part.split(':');
    if (!['ttft', 'tpot', 'e2el'].includes(k) || !(Number(val) > 0))
      throw new UsageError(`${flagOf('macro', 'goodput')} takes SLOs such as "ttft:500 tpot:50" (ms); got "${part}".`);
    goodput[k as 'ttft' | 'tpot' | 'e2el'] = Number(val);
  }
  const workers = v('workers') === undefined || v('workers') === 'auto' ? undefined : finiteNumber(v('workers'), flagOf('macro', 'workers'));
  const options: MacroOptions = {
    url: v('url'),
    api,
    model: v('model'),
    concurrency: agentNumberList('macro', 'concurrency', values),
    requestRate: agentNumberList('macro', 'requestRate', values),
    maxConcurrency: agentValue('macro', 'maxConcurrency', values),
    burstiness: agentValue('macro', 'burstiness', values),
    requests: agentValue('macro', 'requests', values),
    durationS: agentValue('macro', 'duration', values),
    inputLen: agentValue('macro', 'inputLen', values),
    outputLen: agentValue('macro', 'outputLen', values),
    // Also as vllm bench serve spells it, --random-range-ratio: the message names the one given.
    rangeRatio: agentValue('macro', 'rangeRatio', values),
    ignoreEos: values['no-ignore-eos'] ? false : undefined,
    promptsFile: v('prompts-file'),
    dataset: agentValue('macro', 'datasetName', values),
    datasetPath: v('dataset-path'),
    sharegptOutputLen: agentValue('macro', 'sharegptOutputLen', values),
    prefixRepetition: prefixRepetitionFlags(values),
    multiTurn: multiTurnFlags(values),
    workloadOptions: tableWorkloadFlags(values),
    sampling: samplingFlags(values),
    extraBody: extraBodyFlag(v('extra-body')),
    headers: Array.isArray(values.header) && values.header.length ? values.header : undefined,
    warmup: agentValue('macro', 'warmup', values),
    requestTimeoutS: positiveSeconds(v('request-timeout'), flagOf('macro', 'requestTimeout')),
    stallTimeoutS: agentValue('macro', 'stallTimeout', values),
    goodput: Object.keys(goodput).length ? goodput : undefined,
    percentiles: agentNumberList('macro', 'percentiles', values),
    workers,
    seed: agentValue('macro', 'seed', values),
    trials: agentValue('macro', 'trials', values),
    slo: sloFlag(v('slo')),
    search: agentValue('macro', 'search', values),
    searchMax: agentValue('macro', 'searchMax', values),
    gpuSampleMs: agentValue('macro', 'gpuSampleMs', values),
    slowClientMs: agentValue('macro', 'slowClientMs', values),
  };
  for (const k of Object.keys(options) as (keyof MacroOptions)[]) if (options[k] === undefined) delete options[k];
  return options;
}

/** --slo checked here, so that a typo is said before the run rather than by the agent on the host. */
function sloFlag(text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  const problem = sloProblem(text);
  if (problem) throw new UsageError(`${flagOf('macro', 'slo')}: ${problem}`);
  return text;
}

function prefixRepetitionFlags(values: FlagValues): MacroOptions['prefixRepetition'] {
  const p = {
    prefixLen: agentValue('macro', 'prefixRepetitionPrefixLen', values),
    suffixLen: agentValue('macro', 'prefixRepetitionSuffixLen', values),
    numPrefixes: agentValue('macro', 'prefixRepetitionNumPrefixes', values),
  };
  return Object.values(p).some((x) => x !== undefined) ? p : undefined;
}

function tableWorkloadFlags(values: FlagValues): MacroOptions['workloadOptions'] {
  const given = TABLE_WORKLOAD_OPTIONS.map((k) => [k, agentValue('macro', k, values)] as const).filter(([, v]) => v !== undefined);
  return given.length ? (Object.fromEntries(given) as MacroOptions['workloadOptions']) : undefined;
}

function multiTurnFlags(values: FlagValues): MacroOptions['multiTurn'] {
  const m = {
    turns: agentValue('macro', 'multiTurnTurns', values),
    conversations: agentValue('macro', 'multiTurnConversations', values),
  };
  return Object.values(m).some((x) => x !== undefined) ? m : undefined;
}

function samplingFlags(values: FlagValues): MacroOptions['sampling'] {
  const s = {
    temperature: agentValue('macro', 'temperature', values),
    topP: agentValue('macro', 'topP', values),
    // Any number here: the core's own check says that a top-k is a whole number.
    topK: finiteNumber(typeof values['top-k'] === 'string' ? values['top-k'] : undefined, flagOf('macro', 'topK')),
    minP: agentValue('macro', 'minP', values),
  };
  return Object.values(s).some((x) => x !== undefined) ? s : undefined;
}

function extraBodyFlag(text: string | undefined): Record<string, unknown> | undefined {
  if (text === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new UsageError(`${flagOf('macro', 'extraBody')} is not JSON (${err instanceof Error ? err.message : String(err)}); for example '{"top_k": 20}'.`);
  }
  if (!value || typeof value !== 'object' || Array.isArray(value))
    throw new UsageError(`${flagOf('macro', 'extraBody')} must be a JSON object, for example '{"top_k": 20}'.`);
  return value as Record<string, unknown>;
}
