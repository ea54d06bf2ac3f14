import * as assert from 'node:assert/strict';
import { RuntimeKind, runtimeKind } from '../../../src/core/trace/collect';
import { KernelClassifier } from '../../../src/core/trace/families';

describe('runtime calls', () => {
  it('knows HIP launches, graph launches, copies and syncs as it knows CUDA ones (ROCm traces file them as cuda_runtime)', () => {
    assert.equal(runtimeKind('hipLaunchKernel'), RuntimeKind.KernelLaunch);
    assert.equal(runtimeKind('hipExtModuleLaunchKernel'), RuntimeKind.KernelLaunch);
    assert.equal(runtimeKind('hipGraphLaunch'), RuntimeKind.GraphLaunch);
    assert.equal(runtimeKind('hipMemcpyWithStream'), RuntimeKind.Copy);
    assert.equal(runtimeKind('hipDeviceSynchronize'), RuntimeKind.Sync);
    assert.equal(runtimeKind('cudaLaunchKernelExC'), RuntimeKind.KernelLaunch);
    assert.equal(runtimeKind('cudaGraphLaunch_v10000'), RuntimeKind.GraphLaunch);
    assert.equal(runtimeKind('hipGetDevicePropertiesR0600'), undefined);
  });
});

describe('kernel families', () => {
  const c = new KernelClassifier();

  it('knows the ROCm kernels of vLLM and SGLang on MI300X (hipBLASLt, CK, aiter, RCCL), not "other"', () => {
    const expect: [string, string][] = [
      ['Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x256x64_MI16x16x1_SN_LDSB1_gfx942', 'gemm'],
      ['Custom_Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_NTD_SK3_UserArgs_MT256x256x64_MI16x16x1_shortname0_gfx950', 'gemm'],
      ['void wvSplitK_hf_sml_<__hip_bfloat16, 64, 2, 16, 8, 2, 1>(int, int, int, int, __hip_bfloat16 const*, ...)', 'gemm'],
      ['void ck::kernel_gemm_xdl_cshuffle_v3<ck::GridwiseGemm_xdl_cshuffle_v3<...>>(...)', 'gemm'],
      ['void ck_tile::kentry<ck_tile::FmhaFwdKernel<ck_tile::BlockFmhaPipelineQRKSVS<...>>>(...)', 'attention'],
      ['void paged_attention_ll4mi_QKV_mfma16_kernel<__hip_bfloat16, ...>(...)', 'attention'],
      ['kernel_unified_attention_2d', 'attention'],
      ['fmoe_bf16_g1u1_subGU_256', 'moe gemm'],
      ['void ck_tile::kentry<ck_tile::MoeSortingKernel<ck_tile::MoeSortingProblem<...>>>(...)', 'moe routing'],
      ['void aiter::add_rmsnorm2d_fwd<...>(...)', 'norm'],
      ['ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)', 'nccl other'],
      ['void aiter::cross_device_reduce_1stage<__hip_bfloat16, 8>(...)', 'all-reduce'],
    ];
    for (const [name, category] of expect) assert.equal(c.classify(name), category, name);
  });

  it('sees flash attention inside cutlass names as attention, not GEMM', () => {
    assert.equal(
      c.classify('void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<cute::tuple<>>>>(flash::FlashAttnFwdSm90::Params)'),
      'attention',
    );
    assert.equal(c.classify('cudnn_generated_fort_native_sdpa_sm80_flash_fprop_wmma_f16_knob_3_64x64x128_4x1x1_cga1x1x1_kernel0_0'), 'attention');
    assert.equal(c.classify('void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8>(Params)'), 'gemm');
  });

  it("counts vLLM's custom all-reduce as all-reduce, not compute", () => {
    assert.equal(
      c.classify('void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*, vllm::RankSignals, vllm::Signal*, __nv_bfloat16*, int, int)'),
      'all-reduce',
    );
    assert.equal(c.classify('void vllm::cross_device_reduce_2stage<__nv_bfloat16, 8>(...)'), 'all-reduce');
    assert.equal(c.classify('void flashinfer::trtllm_allreduce_fusion::allreduce_fusion_kernel_oneshot_lamport<...>'), 'all-reduce');
  });

  it("splits NCCL kernels by collective, all-reduce in the one all-reduce category with vLLM's custom kernels", () => {
    assert.equal(c.classify('ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)'), 'all-reduce');
    assert.equal(c.classify('void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(...)'), 'all-reduce');
    assert.equal(c.classify('ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)'), 'nccl all-gather');
    assert.equal(c.classify('ncclDevKernel_ReduceScatter_Sum_f32_RING_LL(...)'), 'nccl reduce-scatter');
    assert.equal(c.classify('ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)'), 'nccl send/recv');
    assert.equal(c.classify('ncclKernel_Broadcast_RING_LL_Sum_int8_t(ncclWorkElem)'), 'nccl other');
  });

  it('tells Marlin quantized GEMM and MoE kernels apart from plain GEMM', () => {
    assert.equal(
      c.classify('void marlin::Marlin<256, 1, 8, 8, 4, 8, false>(int4 const*, int4 const*, int4*, int4 const*, int, int, int, int, int*)'),
      'quantized gemm',
    );
    assert.equal(c.classify('void marlin_moe_wna16::Marlin<...>(...)'), 'moe gemm');
    assert.equal(c.classify('fused_moe_kernel'), 'moe gemm');
    assert.equal(c.classify('void vllm::moe::moe_align_block_size_kernel<int>(...)'), 'moe routing');
    assert.equal(c.classify('nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT'), 'gemm');
  });

  it('classifies the small fry: norms, activations, rotary, quantize, elementwise, triton, other', () => {
    assert.equal(c.classify('void vllm::rms_norm_kernel<c10::BFloat16>(...)'), 'norm');
    assert.equal(c.classify('void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(...)'), 'norm');
    assert.equal(c.classify('void vllm::act_and_mul_kernel<c10::BFloat16, &vllm::silu_kernel<c10::BFloat16>, true>(...)'), 'activation');
    assert.equal(c.classify('void vllm::rotary_embedding_kernel<c10::BFloat16, true>(...)'), 'rotary');
    assert.equal(c.classify('void vllm::scaled_fp8_quant_kernel<c10::BFloat16>(...)'), 'quantize');
    assert.equal(c.classify('void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>(...)'), 'elementwise');
    assert.equal(c.classify('triton_poi_fused_mul_0'), 'triton');
    assert.equal(c.classify('void at::native::unknown_kernel<...>'), 'other');
  });

  it("names PyTorch's indexing, softmax and sort kernels, an eager MoE loop's dispatch and routing (names from the H200 loop)", () => {
    const names: [string, string][] = [
      ['void at::native::(anonymous namespace)::indexSelectSmallIndex<c10::BFloat16, long, unsigned int, 2, 2, -2>(...)', 'index/gather'],
      ['void at::native::indexFuncSmallIndex<c10::BFloat16, long, unsigned int, 2, 2, -2, at::native::(anonymous namespace)::ReduceAdd>(...)', 'index/gather'],
      ['void at::native::index_elementwise_kernel<128, 4, at::native::gpu_index_kernel<...> >(long, ...)', 'index/gather'],
      ['void at::native::vectorized_gather_kernel<16, long>(char*, char*, long*, int, long, long, long, long, bool)', 'index/gather'],
      [
        'void at::native::(anonymous namespace)::write_indices<long>(long*, at::native::(anonymous namespace)::TensorDims<long>, int, long, long*, long)',
        'index/gather',
      ],
      ['void at_cuda_detail::cub::detail::select::DeviceSelectSweepKernel<...>(...)', 'index/gather'],
      [
        'void (anonymous namespace)::softmax_warp_forward<float, float, float, 2, false, false>(float*, float const*, int, int, int, bool const*, int, bool)',
        'softmax',
      ],
      ['void at::native::bitonicSortKVInPlace<2, -1, 16, 16, float, long, at::native::GTOp<float, true>, unsigned int>(...)', 'sort'],
      ['void at::native::sbtopk::gatherTopK<float, unsigned int, 2, false>(...)', 'moe routing'],
      ['void at::native::vectorized_elementwise_kernel<8, at::native::FillFunctor<c10::BFloat16>, std::array<char*, 1ul> >(...)', 'elementwise'],
    ];
    for (const [name, category] of names) assert.equal(c.classify(name), category, name);
  });

  it("puts cuDNN's convolutions and batch norms where they belong, not in other (names from a V100 CNN trace)", () => {
    assert.equal(c.classify('void cudnn::detail::dgrad_engine<float, 512, 6, 5, 3, 3, 3, false>(int, int, int, float const*)'), 'conv');
    assert.equal(c.classify('cudnn_infer_volta_scudnn_128x64_relu_medium_nn_v1'), 'conv');
    assert.equal(c.classify('void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 128, true, 1>(float, float)'), 'norm');
    assert.equal(c.classify('volta_sgemm_64x64_nt'), 'gemm');
  });

  it('counts memcpy and memset events as memory by their event category', () => {
    assert.equal(c.classify('Memcpy DtoD (Device -> Device)', true), 'memory');
    assert.equal(c.classify('some_name', true), 'memory');
  });

  it("tries the user's families first and keeps their categories in the order", () => {
    const custom = new KernelClassifier([
      { category: 'all-reduce', pattern: 'my_ar_kernel' },
      { category: 'sampler', pattern: 'sampling', flags: 'i' },
    ]);
    assert.equal(custom.classify('void my_ar_kernel<8>()'), 'all-reduce');
    assert.equal(custom.classify('FlashInfer Top-P SAMPLING kernel'), 'sampler');
    assert.ok(custom.categoryOrder.indexOf('sampler') < custom.categoryOrder.indexOf('other'));
    assert.equal(custom.categoryOrder.at(-1), 'idle');
  });

  it('names the family and the setting when a user pattern is broken', () => {
    assert.throws(
      () => new KernelClassifier([{ category: 'mine', pattern: '(unclosed' }]),
      /kernel family "mine" has an invalid pattern.*inferenceBench\.kernelFamilies/,
    );
  });
});
