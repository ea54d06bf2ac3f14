import { KernelFamilySpec } from './types';
import { compileUserPattern } from './userPattern';

// The ordered kernel family table (notes: FIELD-FACTS "Kernel families"). The first match wins, so
// order matters: flash attention lives inside `cutlass::` names and must be seen as attention
// before GEMM; vLLM's custom all-reduce (`cross_device_reduce_*`) matches no "nccl" and would pass
// for compute (Meta's HTA makes that mistake); Marlin names hold no "gemm".
// ROCm (MI300X): RCCL keeps NCCL's kernel names (ncclDevKernel_*); hipBLASLt and rocBLAS run
// Tensile-generated GEMMs named Cijk_<A>_<B>... (ROCm/hipBLASLt Tensile logic files, e.g.
// aquavanjaram_Cijk_Alik_Bljk_*.yaml; TraceLens matches the same prefix), sometimes Custom_Cijk_...;
// vLLM's ROCm skinny GEMMs are wvSplitK*/LLGemm* (vllm csrc/rocm/skinny_gemms.cu); composable
// kernel (CK) names start ck:: / ck_tile:: with Gemm, Fmha, Moe in the kernel's name; aiter
// (ROCm/aiter) names fused MoE fmoe_*, its sorting MoeSorting*, norms rmsnorm*; SGLang writes the KV
// cache with store_kvcache; gpt-oss's Triton MoE routes with _combined_routing_* / _sum_bitmatrix_rows.
export const BUILTIN_FAMILIES: readonly KernelFamilySpec[] = [
  // One all-reduce category whichever library ran it, so that the headline, the tables and the
  // kernel panel show the same figure; the kernel names still tell vLLM's custom kernel from NCCL's.
  { category: 'all-reduce', pattern: 'cross_device_reduce_1stage|cross_device_reduce_2stage|allreduce_fusion' },
  { category: 'all-reduce', pattern: '^(void )?nccl(Dev)?Kernel.*AllReduce' },
  { category: 'nccl all-gather', pattern: '^(void )?nccl(Dev)?Kernel.*AllGather' },
  { category: 'nccl reduce-scatter', pattern: '^(void )?nccl(Dev)?Kernel.*ReduceScatter' },
  { category: 'nccl send/recv', pattern: '^(void )?nccl(Dev)?Kernel.*(SendRecv|Send|Recv)' },
  { category: 'nccl other', pattern: '^(void )?nccl(Dev)?Kernel' },
  { category: 'attention', pattern: 'flash|fmha|Fmha|FlashAttn|flashinfer|paged_attention|unified_attention|_mla_|reshape_and_cache|store_kvcache' },
  { category: 'moe gemm', pattern: 'fused_moe_kernel|marlin_moe|_group_gemm|GroupProblemShape|fmoe_|ck_moe|MoeGemm|MoeFlatmm|moe_gemm' },
  { category: 'moe routing', pattern: 'moe_align|moe_sorting|MoeSorting|topk|expert|_routing_|bitmatrix' },
  { category: 'quantized gemm', pattern: 'Marlin|gptq_marlin|machete' },
  // cuDNN's convolutions (scudnn, dgrad/wgrad engines) and CUTLASS implicit-GEMM convs, before GEMM.
  { category: 'conv', pattern: 'scudnn|dgrad|wgrad|implicit_convolve|implicit_gemm|conv2d|convolution' },
  { category: 'gemm', pattern: 'gemm|Gemm|gemv|nvjet|xmma|cutlass|cublas|splitKreduce|matmul|Cijk_|wvSplitK|LLGemm|hipblaslt' },
  // PyTorch's indexing kernels, the token dispatch of an eager MoE expert loop (Hugging Face's Mixtral,
  // modeling_mixtral.py MixtralSparseMoeBlock: torch.where(expert_mask) -> nonzero, hidden_states[top_x]
  // -> index/gather, final_hidden_states.index_add_): index_select and index_add_ run indexSelect*/
  // indexFunc* (aten/src/ATen/native/cuda/Indexing.cu), x[idx] and x[idx] = v index_elementwise_kernel
  // (IndexKernel.cu), gather/scatter _scatter_gather_elementwise_kernel (ScatterGatherKernel.cu) and
  // vectorized_gather_kernel, nonzero cub's DeviceSelect::Flagged then write_indices (Nonzero.cu).
  {
    category: 'index/gather',
    pattern:
      'indexSelectSmallIndex|indexSelectLargeIndex|indexFuncSmallIndex|indexFuncLargeIndex|index_elementwise_kernel|_scatter_gather_elementwise_kernel|vectorized_gather_kernel|write_indices<|DeviceSelectSweepKernel|DeviceCompactInitKernel',
  },
  // The router's softmax (aten/src/ATen/native/cuda/PersistentSoftmax.cuh softmax_warp_forward, SoftMax.cu
  // cunn_SoftMaxForward) and topk's sort of its k values (TensorTopK.cu sorts with bitonicSortKVInPlace,
  // SortUtils.cuh), beside topk's own gatherTopK (moe routing above).
  { category: 'softmax', pattern: 'softmax_warp_forward|cunn_SoftMaxForward' },
  { category: 'sort', pattern: 'bitonicSortKVInPlace|radixSortKVInPlace|DeviceRadixSort|segmented_sort' },
  { category: 'norm', pattern: 'rms_norm|rmsnorm|Rmsnorm|layer_norm|layernorm|Norm|bn_fw|bn_bw|batch_norm' },
  { category: 'activation', pattern: 'act_and_mul|silu|gelu' },
  { category: 'rotary', pattern: 'rotary_embedding' },
  { category: 'quantize', pattern: 'quant|cvt_' },
  { category: 'elementwise', pattern: 'elementwise|reduce_kernel' },
  { category: 'triton', pattern: 'triton' },
  { category: 'memory', pattern: 'Memcpy|Memset' },
];

export const MEMORY_CATEGORY = 'memory';
export const OTHER_CATEGORY = 'other';
export const IDLE_CATEGORY = 'idle';

/** Classifies kernel names by the ordered table, with the user's families tried first. Caches per name. */
export class KernelClassifier {
  private readonly families: { category: string; re: RegExp }[];
  private readonly cache = new Map<string, string>();
  /** Every category the classifier can answer, in table order, then memory, other, idle. */
  readonly categoryOrder: string[];

  constructor(extra: readonly KernelFamilySpec[] = []) {
    this.families = [];
    for (const spec of extra) {
      let re: RegExp;
      try {
        re = compileUserPattern(`The kernel family "${spec.category}"`, spec.pattern, spec.flags ?? '');
      } catch (err) {
        throw new Error(`${(err as Error).message} Fix it in the inferenceBench.kernelFamilies setting or the --family flag.`);
      }
      this.families.push({ category: spec.category, re });
    }
    for (const spec of BUILTIN_FAMILIES) this.families.push({ category: spec.category, re: new RegExp(spec.pattern, spec.flags ?? '') });
    const order: string[] = [];
    for (const f of this.families) if (!order.includes(f.category)) order.push(f.category);
    for (const c of [MEMORY_CATEGORY, OTHER_CATEGORY, IDLE_CATEGORY]) if (!order.includes(c)) order.push(c);
    this.categoryOrder = order;
  }

  /** `isMemoryEvent`: the event's cat was gpu_memcpy or gpu_memset, which is memory whatever its name. */
  classify(name: string, isMemoryEvent = false): string {
    if (isMemoryEvent) return MEMORY_CATEGORY;
    let category = this.cache.get(name);
    if (category === undefined) {
      category = OTHER_CATEGORY;
      for (const f of this.families) {
        if (f.re.test(name)) {
          category = f.category;
          break;
        }
      }
      this.cache.set(name, category);
    }
    return category;
  }
}
