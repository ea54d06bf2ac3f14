// The model the server really served, as the probe read it from its config.json (agent probe/served_model.py),
// and the checks that set it against micro's model and the profiled trace: a budget pairs only what agrees.
import { finite } from '../../shared/finite';
import { ModelStructure } from './modelStructure';
import type { ProfileInput } from './inputs';

export interface ServedConfig {
  /** The probe run that read it. */
  runId: string;
  /** The model as the server was given it (a path or a Hugging Face id). */
  model: string;
  path?: string;
  /** How the probe found it ("the server's --model, in the Hugging Face cache"). */
  foundBy?: string;
  modelType?: string;
  /** "text_config" where a multimodal wrapper (Kimi-K2.5) nests the language model. */
  nested?: string;
  layers?: number;
  hidden?: number;
  heads?: number;
  kvHeads?: number;
  /** Routed experts and how many each token picks; absent for a dense model. */
  experts?: { total: number; active?: number };
  /** Tensor- and pipeline-parallel size from the server's command line, where the probe saw it. */
  tp?: number;
  pp?: number;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === 'string' && v ? v : undefined);

/** The served config from a probe run's result (`server.model_config`), or undefined where it has none. */
export function servedConfigFrom(runId: string, probeResult: unknown): ServedConfig | undefined {
  const server = isObj(probeResult) && isObj(probeResult.server) ? probeResult.server : undefined;
  const c = server && isObj(server.model_config) ? server.model_config : undefined;
  const model = c && str(c.model);
  if (!c || !model) return undefined;
  const parallel = isObj(server!.parallel) ? server!.parallel : {};
  const total = finite(c.experts);
  return {
    runId,
    model,
    path: str(c.path),
    foundBy: str(c.found_by),
    modelType: str(c.model_type),
    nested: str(c.nested),
    layers: finite(c.num_hidden_layers),
    hidden: finite(c.hidden_size),
    heads: finite(c.num_attention_heads),
    kvHeads: finite(c.num_key_value_heads),
    experts: total && total > 1 ? { total, active: finite(c.num_experts_per_tok) } : undefined,
    tp: finite(parallel.tp),
    pp: finite(parallel.pp),
  };
}

/** The model names a probe run saw the server serve (/v1/models ids and roots, and the config's model). */
export function servedNames(probeResult: unknown): string[] {
  const server = isObj(probeResult) && isObj(probeResult.server) ? probeResult.server : {};
  const names: string[] = [];
  for (const m of Array.isArray(server.models) ? server.models : []) if (isObj(m)) for (const k of ['id', 'root']) if (str(m[k])) names.push(m[k] as string);
  if (isObj(server.model_config) && str(server.model_config.model)) names.push(server.model_config.model as string);
  return names;
}

/** "moonshotai/Kimi-K2.5 (kimi_k2 under text_config, 61 layers, 384 experts, 8 active), read by probe run P from ...". */
export function servedText(s: ServedConfig): string {
  const parts = [
    s.modelType ? `${s.modelType}${s.nested ? ` under ${s.nested}` : ''}` : '',
    s.layers !== undefined ? `${s.layers} layers` : '',
    s.hidden !== undefined ? `hidden ${s.hidden}` : '',
    s.experts ? `${s.experts.total} experts${s.experts.active ? `, ${s.experts.active} active` : ''}` : 'dense',
    s.tp !== undefined ? `TP ${s.tp}` : '',
  ].filter(Boolean);
  return `${s.model} (${parts.join(', ')}), read by probe run ${s.runId}${s.foundBy ? ` from ${s.foundBy}` : ''}`;
}

/** The figures where micro's model and the served config disagree, in words; empty where they agree. */
export function servedVsModel(s: ServedConfig, m: ModelStructure): string[] {
  const out: string[] = [];
  if (s.layers !== undefined && s.layers !== m.layers) out.push(`layers: served ${s.layers}, micro's model ${m.layers}`);
  if (s.hidden !== undefined && s.hidden !== m.hidden) out.push(`hidden size: served ${s.hidden}, micro's model ${m.hidden}`);
  const microMoe = Boolean(m.experts) || m.linears.some((l) => l.routedExpert);
  if (s.experts && !microMoe) out.push(`the served model is MoE (${s.experts.total} experts), micro's model dense`);
  if (!s.experts && microMoe && (s.layers !== undefined || s.hidden !== undefined))
    out.push(`the served model is dense, micro's model MoE${m.experts ? ` (${m.experts.total} experts)` : ''}`);
  if (s.experts && m.experts) {
    if (s.experts.total !== m.experts.total) out.push(`routed experts: served ${s.experts.total}, micro's model ${m.experts.total}`);
    if (s.experts.active !== undefined && s.experts.active !== m.experts.active)
      out.push(`experts per token: served ${s.experts.active}, micro's model ${m.experts.active}`);
  }
  if (s.tp !== undefined && s.tp !== m.tp) out.push(`tensor parallelism: served TP ${s.tp}, micro's model TP ${m.tp}`);
  return out;
}

/**
 * The figures where the trace contradicts the served config, in words. Attention runs once per layer
 * (one to a few kernels: the attention, the KV-cache write), so far fewer or far more attention kernels
 * per step than the config's layers is another model; the trace's ranks are the server's TP x PP; a
 * dense config runs no fused MoE kernel.
 */
export function servedVsTrace(s: ServedConfig, p: ProfileInput): string[] {
  const out: string[] = [];
  const attention = p.attention_kernels_per_step;
  if (s.layers !== undefined && attention !== undefined && p.kernels_per_step && (attention < 0.5 * s.layers || attention > 6 * s.layers))
    out.push(`the trace runs ${attention.toFixed(0)} attention kernels per step, where the served ${s.layers} layers run one to a few each`);
  const ranks = s.tp !== undefined ? s.tp * (s.pp ?? 1) : undefined;
  if (ranks !== undefined && p.world_size !== undefined && p.world_size !== ranks)
    out.push(
      `the trace ran on ${p.world_size} GPU${p.world_size === 1 ? '' : 's'}, the server on ${ranks} (TP ${s.tp}${s.pp && s.pp > 1 ? ` x PP ${s.pp}` : ''})`,
    );
  const busy = (match: (c: string) => boolean) => Object.entries(p.by_category_ms).some(([c, ms]) => ms > 0 && match(c.toLowerCase().replace(/[^a-z]/g, '')));
  // One trace file names no world size; tensor parallelism all-reduces every layer, one GPU never does.
  if (ranks !== undefined && p.world_size === undefined && (s.tp ?? 1) > 1 && p.kernels_per_step && !busy((c) => c.includes('allreduce')))
    out.push(`the trace runs no all-reduce, where the server's TP ${s.tp} all-reduces every layer`);
  const fusedMoe = busy((c) => c === 'moegemm');
  if (!s.experts && fusedMoe && s.layers !== undefined) out.push('the trace runs fused MoE kernels, where the served config is dense');
  return out;
}
