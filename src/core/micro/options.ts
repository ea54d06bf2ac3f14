// What a micro run asks of the agent, and how that becomes the agent's `micro` command line.

export type MicroPart = 'peak' | 'gemm' | 'launch' | 'allreduce';
export const MICRO_PARTS: readonly MicroPart[] = ['peak', 'gemm', 'launch', 'allreduce'];
export type MicroDtype = 'auto' | 'bf16' | 'fp16' | 'fp32' | 'fp8' | 'int4';

export interface MicroOptions {
  /** A preset (kimi-k2.5, deepseek-v3, llama-3-70b, qwen3-235b-a22b...), a model folder or a Hugging Face id on the host. */
  model?: string;
  /** The model's config.json (or its folder) on the host. */
  config?: string;
  /** Tensor-parallel size the shapes are split by. */
  tp?: number;
  /** Token counts M to sweep; default 1, 2, 4, ... 256. */
  m?: number[];
  /** Extra GEMMs `NAME=NxK`; with no model, the only ones. */
  shapes?: string[];
  /** Keep only shapes whose name contains one of these. */
  only?: string[];
  dtype?: MicroDtype;
  groupSize?: number;
  /** auto, cuda, cuda:N or cpu. */
  device?: string;
  /** The user consented to run beside whatever holds the GPUs (sized to the free memory). */
  allowBusy?: boolean;
  busyThreshold?: number;
  skip?: MicroPart[];
  repeats?: number;
  launchKernels?: number;
  arWorldSize?: number;
  arBackend?: 'auto' | 'nccl' | 'gloo';
  arMaxBytes?: number;
  /** Hidden size for decode all-reduce sizes when no model is given. */
  hidden?: number;
  /** Experts per token for the all-to-all sizes of a cluster when no model is given. */
  topK?: number;
}

export const DEFAULT_M = [1, 2, 4, 8, 16, 32, 64, 128, 256];

export class MicroOptionsError extends Error {}

const SHAPE = /^[A-Za-z0-9_.-]+=\d+x\d+$/;

function positiveInteger(value: number | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  if (!Number.isInteger(value) || value < 1) throw new MicroOptionsError(`${name} must be a positive whole number; got ${value}.`);
  return value;
}

/** The agent's `micro` arguments for these options (validated; the message names the bad option). */
export function microAgentArgs(options: MicroOptions, serverUrl?: string): string[] {
  const args: string[] = [];
  if (options.model) args.push('--model', options.model);
  if (options.config) args.push('--config', options.config);
  if (!options.model && !options.config && !options.shapes?.length && serverUrl) args.push('--server-url', serverUrl);
  const tp = positiveInteger(options.tp, 'tp');
  if (tp) args.push('--tp', String(tp));
  // Without an M list the agent picks one for the device: DEFAULT_M on a GPU, a short one on a CPU.
  if (options.m) {
    if (!options.m.length) throw new MicroOptionsError('m needs at least one token count, for example 1,8,64.');
    options.m.forEach((v) => positiveInteger(v, 'each M'));
    args.push('--m', options.m.join(','));
  }
  for (const s of options.shapes ?? []) {
    if (!SHAPE.test(s)) throw new MicroOptionsError(`shape "${s}" is not NAME=NxK, for example gate_up=512x7168.`);
    args.push('--shape', s);
  }
  for (const o of options.only ?? []) args.push('--only', o);
  if (options.dtype && options.dtype !== 'auto') args.push('--dtype', options.dtype);
  const group = positiveInteger(options.groupSize, 'group size');
  if (group) args.push('--group-size', String(group));
  if (options.device) {
    if (!/^(auto|cpu|cuda(:\d+)?)$/.test(options.device)) throw new MicroOptionsError(`device must be auto, cpu, cuda or cuda:N; got "${options.device}".`);
    args.push('--device', options.device);
  }
  if (options.allowBusy) args.push('--allow-busy');
  if (options.busyThreshold !== undefined) {
    if (!(options.busyThreshold > 0 && options.busyThreshold <= 1))
      throw new MicroOptionsError(`busy threshold is a fraction of GPU memory in (0, 1]; got ${options.busyThreshold}.`);
    args.push('--busy-threshold', String(options.busyThreshold));
  }
  if (options.skip?.length) {
    const bad = options.skip.filter((p) => !MICRO_PARTS.includes(p));
    if (bad.length) throw new MicroOptionsError(`skip: unknown part ${bad.join(', ')}; parts are ${MICRO_PARTS.join(', ')}.`);
    args.push('--skip', options.skip.join(','));
  }
  const numeric: [keyof MicroOptions, string][] = [
    ['repeats', '--repeats'],
    ['launchKernels', '--launch-kernels'],
    ['arWorldSize', '--ar-world-size'],
    ['arMaxBytes', '--ar-max-bytes'],
    ['hidden', '--hidden'],
  ];
  for (const [key, flag] of numeric) {
    const v = positiveInteger(options[key] as number | undefined, flag.slice(2));
    if (v) args.push(flag, String(v));
  }
  if (options.arBackend && options.arBackend !== 'auto') args.push('--ar-backend', options.arBackend);
  return args;
}
