// What a micro run asks of the agent, and how that becomes the agent's `micro` command line.
import { agentOptionArgs } from '../../remote/agentOptionArgs';
import { DEFAULT_M, MICRO_PARTS, MicroAgentOptions, MicroPart } from '../../remote/agentOptions';

// The parts and the default M list are the agent's own (its option table), not a second list of them.
export { DEFAULT_M, MICRO_PARTS };
export type { MicroPart };
// The agent's own choices (its option table), not a second list of them.
export type MicroDtype = NonNullable<MicroAgentOptions['dtype']>;

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
  arBackend?: NonNullable<MicroAgentOptions['arBackend']>;
  arMaxBytes?: number;
  /** Hidden size for decode all-reduce sizes when no model is given. */
  hidden?: number;
  /** Experts per token for the all-to-all sizes of a cluster when no model is given. */
  topK?: number;
}

export class MicroOptionsError extends Error {}

const SHAPE = /^[A-Za-z0-9_.-]+=\d+x\d+$/;

function positiveInteger(value: number | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  if (!Number.isInteger(value) || value < 1) throw new MicroOptionsError(`${name} must be a positive whole number; got ${value}.`);
  return value;
}

/** The agent's `micro` arguments for these options (validated; the message names the bad option). */
export function microAgentArgs(options: MicroOptions, serverUrl?: string): string[] {
  const tp = positiveInteger(options.tp, 'tp');
  // Without an M list the agent picks one for the device: DEFAULT_M on a GPU, a short one on a CPU.
  if (options.m) {
    if (!options.m.length) throw new MicroOptionsError('m needs at least one token count, for example 1,8,64.');
    options.m.forEach((v) => positiveInteger(v, 'each M'));
  }
  for (const s of options.shapes ?? []) {
    if (!SHAPE.test(s)) throw new MicroOptionsError(`shape "${s}" is not NAME=NxK, for example gate_up=512x7168.`);
  }
  const group = positiveInteger(options.groupSize, 'group size');
  if (options.device && !/^(auto|cpu|cuda(:\d+)?)$/.test(options.device))
    throw new MicroOptionsError(`device must be auto, cpu, cuda or cuda:N; got "${options.device}".`);
  if (options.busyThreshold !== undefined && !(options.busyThreshold > 0 && options.busyThreshold <= 1))
    throw new MicroOptionsError(`busy threshold is a fraction of GPU memory in (0, 1]; got ${options.busyThreshold}.`);
  const bad = (options.skip ?? []).filter((p) => !(MICRO_PARTS as readonly string[]).includes(p));
  if (bad.length) throw new MicroOptionsError(`skip: unknown part ${bad.join(', ')}; parts are ${MICRO_PARTS.join(', ')}.`);
  return agentOptionArgs('micro', {
    model: options.model || undefined,
    config: options.config || undefined,
    serverUrl: !options.model && !options.config && !options.shapes?.length ? serverUrl : undefined,
    tp,
    m: options.m?.join(','),
    shape: options.shapes,
    only: options.only,
    dtype: options.dtype !== 'auto' ? options.dtype : undefined,
    groupSize: group,
    device: options.device || undefined,
    allowBusy: options.allowBusy,
    busyThreshold: options.busyThreshold,
    skip: options.skip?.length ? options.skip.join(',') : undefined,
    repeats: positiveInteger(options.repeats, 'repeats'),
    launchKernels: positiveInteger(options.launchKernels, 'launch-kernels'),
    arWorldSize: positiveInteger(options.arWorldSize, 'ar-world-size'),
    arMaxBytes: positiveInteger(options.arMaxBytes, 'ar-max-bytes'),
    hidden: positiveInteger(options.hidden, 'hidden'),
    arBackend: options.arBackend !== 'auto' ? options.arBackend : undefined,
  });
}
