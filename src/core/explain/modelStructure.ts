// What the budget needs to know about a model to turn micro-benchmark points into a decode step:
// how many all-reduces a step runs and of what size, and which GEMMs it runs how often on one GPU.

/** One GEMM of a decode step on one GPU (N and K already split by tensor parallelism). */
export interface LinearShape {
  name: string;
  n: number;
  k: number;
  /** Calls per decode step on one GPU at batch 1 (layers x experts hit for routed experts). */
  perStep: number;
  /** A routed expert: its M is the tokens routed to one expert, not the batch. */
  routedExpert?: boolean;
}

export interface ModelStructure {
  name: string;
  /** Where the structure came from: "micro run <id>" or "preset kimi-k2.5". */
  source: string;
  hidden: number;
  layers: number;
  tp: number;
  /** Bytes per activation element (2 for bf16/fp16): the all-reduce message is batch x hidden x this. */
  activationBytes: number;
  /** Tensor parallelism all-reduces twice per layer: after attention's o_proj and after the MLP/MoE. */
  allReducesPerLayer: number;
  /** All-reduces outside the layers: the vocab-parallel embedding's one. */
  extraAllReduces: number;
  experts?: { total: number; active: number };
  linears: LinearShape[];
}

/**
 * Kimi-K2.5 (DeepSeek-V3 architecture, INT4 routed experts) at TP=8, shaped the way vLLM shards it —
 * the same shapes the micro phase derives from the model's config.json (agent/infbench_agent/models.py).
 * 61 layers, the first dense; 64 MLA heads (8 per GPU); 384 experts, 8 active, 2048 wide (256 per GPU).
 */
export const KIMI_K25_TP8: ModelStructure = {
  name: 'kimi-k2.5',
  source: 'preset kimi-k2.5 (TP=8)',
  hidden: 7168,
  layers: 61,
  tp: 8,
  activationBytes: 2,
  allReducesPerLayer: 2,
  extraAllReduces: 1,
  experts: { total: 384, active: 8 },
  linears: [
    { name: 'attn.qkv_a_proj', n: 2112, k: 7168, perStep: 61 },
    { name: 'attn.q_b_proj', n: 1536, k: 1536, perStep: 61 },
    { name: 'attn.kv_b_proj', n: 2048, k: 512, perStep: 61 },
    { name: 'attn.o_proj', n: 7168, k: 1024, perStep: 61 },
    { name: 'moe.gate_up', n: 512, k: 7168, perStep: 60 * 8, routedExpert: true },
    { name: 'moe.down', n: 7168, k: 256, perStep: 60 * 8, routedExpert: true },
    { name: 'shared_expert.gate_up', n: 512, k: 7168, perStep: 60 },
    { name: 'shared_expert.down', n: 7168, k: 256, perStep: 60 },
    { name: 'moe.router', n: 384, k: 7168, perStep: 60 },
    { name: 'dense_mlp.gate_up', n: 4608, k: 7168, perStep: 1 },
    { name: 'dense_mlp.down', n: 7168, k: 2304, perStep: 1 },
    { name: 'lm_head', n: 20480, k: 7168, perStep: 1 },
  ],
};

export const MODEL_PRESETS: Record<string, ModelStructure> = {
  'kimi-k2.5': KIMI_K25_TP8,
  'kimi-k25-tp8': KIMI_K25_TP8,
};

/** The preset whose name the model id mentions ("moonshotai/Kimi-K2.5-INT4 (simulated)" finds kimi-k2.5). */
export function presetFor(modelName: string | undefined): ModelStructure | undefined {
  if (!modelName) return undefined;
  const key = modelName.toLowerCase().replace(/[^a-z0-9]/g, '');
  if (key.includes('kimik2') || key.includes('kimik25')) return KIMI_K25_TP8;
  return MODEL_PRESETS[modelName.toLowerCase()];
}

/** All-reduces one decode step runs on every GPU. */
export function allReducesPerStep(model: ModelStructure): number {
  return model.layers * model.allReducesPerLayer + model.extraAllReduces;
}

/** Bytes one decode all-reduce moves: the hidden state of every sequence in the step. */
export function decodeMessageBytes(model: ModelStructure, batch: number): number {
  return batch * model.hidden * model.activationBytes;
}

/**
 * How a batch spreads over routed experts: with `batch` tokens each picking `active` of `total` experts
 * uniformly, the expected number of distinct experts hit per layer is total * (1 - (1 - active/total)^batch),
 * and each of them sees batch * active / distinct tokens on average.
 */
export function expertSpread(total: number, active: number, batch: number): { distinct: number; tokensPerExpert: number } {
  const distinct = total * (1 - Math.pow(1 - active / total, batch));
  return { distinct, tokensPerExpert: (batch * active) / distinct };
}
