import * as vscode from 'vscode';
import { Target } from '../../core/config/target';
import { DEFAULT_MACRO_OPTIONS, MacroOptions, macroAgentArgs } from '../../core/macro/options';
import { readSettings } from '../settings';
import { runMacroPhase } from '../../core/phases/macro';
import { PhaseRunner } from './phases';

interface Workload {
  label: string;
  detail: string;
  options: MacroOptions;
}

const shape = `${DEFAULT_MACRO_OPTIONS.inputLen} prompt → ${DEFAULT_MACRO_OPTIONS.outputLen} output tokens`;

// The seed scenario first: single-stream decode speed, then how throughput grows with load.
const WORKLOADS: Workload[] = [
  { label: 'Single stream, then a concurrency sweep', detail: `concurrency ${DEFAULT_MACRO_OPTIONS.concurrency.join(', ')}; ${shape}`, options: {} },
  { label: 'Single stream only', detail: `concurrency 1 (decode tok/s = 1 / TPOT); ${shape}`, options: { concurrency: [1] } },
  { label: 'Wide concurrency sweep', detail: `concurrency 1, 2, 4, 8, 16, 32, 64, 128, 256; ${shape}`, options: { concurrency: [1, 2, 4, 8, 16, 32, 64, 128, 256] } },
  { label: 'Request-rate sweep (Poisson arrivals)', detail: `1, 2, 4, 8, 16 req/s; ${shape}`, options: { requestRate: [1, 2, 4, 8, 16], burstiness: 1 } },
];

function parseList(text: string): number[] {
  return text.split(/[\s,]+/).filter(Boolean).map(Number);
}

async function customWorkload(target: Target): Promise<MacroOptions | undefined> {
  const levels = await vscode.window.showInputBox({
    title: 'Run Macro Phase: concurrency levels',
    prompt: 'Requests in flight at each level, comma-separated',
    value: DEFAULT_MACRO_OPTIONS.concurrency.join(', '),
    ignoreFocusOut: true,
    validateInput: (v) => (parseList(v).length && parseList(v).every((n) => Number.isInteger(n) && n > 0) ? undefined : 'Whole numbers above 0, for example 1, 8, 32'),
  });
  if (levels === undefined) return undefined;
  const lengths = await vscode.window.showInputBox({
    title: 'Run Macro Phase: prompt and output tokens',
    prompt: 'Prompt tokens, output tokens',
    value: `${DEFAULT_MACRO_OPTIONS.inputLen}, ${DEFAULT_MACRO_OPTIONS.outputLen}`,
    ignoreFocusOut: true,
    validateInput: (v) => (parseList(v).length === 2 && parseList(v).every((n) => Number.isInteger(n) && n > 0) ? undefined : 'Two whole numbers, for example 256, 128'),
  });
  if (lengths === undefined) return undefined;
  const [inputLen, outputLen] = parseList(lengths);
  const options: MacroOptions = { concurrency: parseList(levels), inputLen, outputLen };
  macroAgentArgs(options, target.serverUrl); // validates; throws a message naming the bad option
  return options;
}

export const macroRunner: PhaseRunner = {
  phase: 'macro',
  title: 'Macro phase (serving benchmark)',
  needsGpusFree: false,
  async pickOptions(target, defaults) {
    if (defaults) return { ...WORKLOADS[0].options };
    const picked = await vscode.window.showQuickPick(
      [...WORKLOADS.map((w) => ({ ...w, description: '' })), { label: 'Custom…', detail: 'Choose concurrency levels and token counts', description: '', options: undefined }],
      { title: `Run Macro Phase on ${target.name}`, placeHolder: `Load against ${target.serverUrl} (the load generator runs on ${target.name})`, matchOnDetail: true },
    );
    if (!picked) return undefined;
    return picked.options ? { ...picked.options } : ((await customWorkload(target)) as Record<string, unknown> | undefined);
  },
  async run(ctx, options) {
    const outcome = await runMacroPhase(ctx, { requestTimeoutS: readSettings().requestTimeoutS, ...(options as MacroOptions) });
    return outcome.summary;
  },
};
