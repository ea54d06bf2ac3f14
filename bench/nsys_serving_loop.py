"""A small continuous-batching decode loop for Nsight Systems captures, with its own step log as the truth.

    python3 bench/nsys_serving_loop.py --graphs on|off --nvtx on|off --steps 40 --log steps.json
        [--torch-trace trace.json.gz]

Four transformer-ish layers (layer 0 a dense MLP, layers 1-3 a mixture of experts; layer 2's attention
reads a KV cache four times as long, so that it is the slow attention layer), an embedding, a final
norm, the LM head and an argmax sampler. After each attention and MLP/MoE block a Triton kernel named
`cross_device_reduce_1stage` stands in for vLLM's custom all-reduce (one GPU here: it only copies).

Each decode step takes a batch size from a fixed, seeded schedule (8, 16 or 32 running requests, as a
continuous-batching scheduler would), pads to it and runs the model: eagerly with --graphs off, or by
replaying the CUDA graph captured for that size at start-up with --graphs on (as vLLM and SGLang do for
decode). The sampler always runs eagerly, outside the graph.

--nvtx on registers NVTX ranges on every module the way SGLang's and vLLM's layerwise NVTX hooks do
(`PytHooks.register_hooks(model, module_prefix="model")`; sglang model_runner.py, vllm
vllm/utils/nvtx_pytorch_hooks.py): a forward pre-hook pushes a range whose text is the dict
`{'Module': 'model.layers.0.self_attn', ...}`, the forward hook pops it and pushes and pops an empty
output marker. Graph capture runs with the hooks on, so the ranges open while each node was captured
are recorded at start-up. Every decode step is itself an NVTX range `decode_step` (and a
torch.profiler record_function of the same name).

The step log (--log) holds each steady step's GPU time from CUDA events recorded on the stream before
its first and after its last kernel: the independent truth the Nsight Systems report is checked against.
"""

import argparse
import gzip
import json
import os
import random
import shutil
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

HIDDEN = 2048
HEADS = 16
HEAD_DIM = 128
INTER = 5632
EXPERTS = 8
TOP_K = 2
EXPERT_INTER = 1408
VOCAB = 32000
LAYERS = 4
CONTEXT = 1024
BATCH_SIZES = (8, 16, 32)
DTYPE = torch.bfloat16


def _fake_all_reduce():
    """A Triton kernel named as vLLM's one-stage custom all-reduce; None where Triton cannot build it."""
    try:
        import triton
        import triton.language as tl
    except ImportError:
        return None

    @triton.jit
    def cross_device_reduce_1stage(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask)
        tl.store(x_ptr + offs, x, mask=mask)

    def run(x):
        n = x.numel()
        cross_device_reduce_1stage[(triton.cdiv(n, 1024),)](x, n, BLOCK=1024)
        return x

    return run


class AllReduce(nn.Module):
    def __init__(self, kernel):
        super().__init__()
        self.kernel = kernel

    def forward(self, x):
        return self.kernel(x) if self.kernel else x.mul_(1.0)


class RMSNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(HIDDEN, dtype=DTYPE))

    def forward(self, x):
        return F.rms_norm(x, (HIDDEN,), self.weight, 1e-6)


class Attention(nn.Module):
    def __init__(self, context, ar):
        super().__init__()
        self.qkv_proj = nn.Linear(HIDDEN, 3 * HIDDEN, bias=False, dtype=DTYPE)
        self.o_proj = nn.Linear(HIDDEN, HIDDEN, bias=False, dtype=DTYPE)
        self.all_reduce = AllReduce(ar)
        self.k_cache = torch.randn(max(BATCH_SIZES), HEADS, context, HEAD_DIM, dtype=DTYPE, device="cuda")
        self.v_cache = torch.randn_like(self.k_cache)

    def forward(self, x):
        b = x.shape[0]
        q, k, v = self.qkv_proj(x).split(HIDDEN, dim=-1)
        q = q.view(b, HEADS, 1, HEAD_DIM)
        # The new token's key and value land in the last slot (a fixed-length cache is enough here).
        self.k_cache[:b, :, -1:, :].copy_(k.view(b, HEADS, 1, HEAD_DIM))
        self.v_cache[:b, :, -1:, :].copy_(v.view(b, HEADS, 1, HEAD_DIM))
        scores = torch.matmul(q, self.k_cache[:b].transpose(-1, -2)) * (HEAD_DIM**-0.5)
        out = torch.matmul(torch.softmax(scores.float(), dim=-1).to(DTYPE), self.v_cache[:b])
        return self.all_reduce(self.o_proj(out.reshape(b, HIDDEN)))


class MLP(nn.Module):
    def __init__(self, ar):
        super().__init__()
        self.gate_up_proj = nn.Linear(HIDDEN, 2 * INTER, bias=False, dtype=DTYPE)
        self.down_proj = nn.Linear(INTER, HIDDEN, bias=False, dtype=DTYPE)
        self.all_reduce = AllReduce(ar)

    def forward(self, x):
        gate, up = self.gate_up_proj(x).chunk(2, dim=-1)
        return self.all_reduce(self.down_proj(F.silu(gate) * up))


class Experts(nn.Module):
    def __init__(self):
        super().__init__()
        self.w13 = nn.Parameter(torch.randn(HIDDEN, EXPERTS * 2 * EXPERT_INTER, dtype=DTYPE) * 0.02)
        self.w2 = nn.Parameter(torch.randn(EXPERTS, EXPERT_INTER, HIDDEN, dtype=DTYPE) * 0.02)

    def forward(self, x, weights):
        b = x.shape[0]
        h = (x @ self.w13).view(b, EXPERTS, 2, EXPERT_INTER)
        act = F.silu(h[:, :, 0]) * h[:, :, 1]
        out = torch.bmm(act.transpose(0, 1), self.w2)  # (E, b, HIDDEN)
        return torch.einsum("ebh,be->bh", out, weights)


class MoE(nn.Module):
    def __init__(self, ar):
        super().__init__()
        self.gate = nn.Linear(HIDDEN, EXPERTS, bias=False, dtype=DTYPE)
        self.experts = Experts()
        self.all_reduce = AllReduce(ar)

    def forward(self, x):
        probs = torch.softmax(self.gate(x).float(), dim=-1)
        top, idx = torch.topk(probs, TOP_K, dim=-1)
        weights = torch.zeros_like(probs).scatter_(1, idx, top).to(DTYPE)
        return self.all_reduce(self.experts(x, weights))


class Layer(nn.Module):
    def __init__(self, index, ar):
        super().__init__()
        self.input_layernorm = RMSNorm()
        self.self_attn = Attention(CONTEXT * (4 if index == 2 else 1), ar)
        self.post_attention_layernorm = RMSNorm()
        if index == 0:
            self.mlp = MLP(ar)
        else:
            self.moe = MoE(ar)

    def forward(self, x):
        x = x + self.self_attn(self.input_layernorm(x))
        ffn = self.mlp if hasattr(self, "mlp") else self.moe
        return x + ffn(self.post_attention_layernorm(x))


class Model(nn.Module):
    def __init__(self, ar):
        super().__init__()
        self.embed_tokens = nn.Embedding(VOCAB, HIDDEN, dtype=DTYPE)
        self.layers = nn.ModuleList([Layer(i, ar) for i in range(LAYERS)])
        self.norm = RMSNorm()
        self.lm_head = nn.Linear(HIDDEN, VOCAB, bias=False, dtype=DTYPE)

    def forward(self, ids):
        x = self.embed_tokens(ids)
        for layer in self.layers:
            x = layer(x)
        return self.lm_head(self.norm(x))


class Sampler(nn.Module):
    def forward(self, logits):
        return torch.argmax(logits, dim=-1)


def register_nvtx_hooks(root: nn.Module, prefix: str) -> None:
    """Module ranges shaped as SGLang's and vLLM's PytHooks write them (see the module docstring)."""
    nvtx = torch.cuda.nvtx
    names = {m: n for n, m in root.named_modules(prefix=prefix)}

    def pre(module, args, kwargs):
        nvtx.range_push(str({"Module": names[module], "Inputs": [list(a.shape) for a in args if torch.is_tensor(a)]}))

    def post(module, args, out):
        nvtx.range_pop()
        nvtx.range_push(str({"Module": names[module], "Outputs": [list(out.shape)] if torch.is_tensor(out) else []}))
        nvtx.range_pop()

    for module in names:
        module.register_forward_pre_hook(pre, with_kwargs=True)
        module.register_forward_hook(post)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--graphs", choices=("on", "off"), default="on")
    p.add_argument("--nvtx", choices=("on", "off"), default="on")
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--log", required=True)
    p.add_argument("--torch-trace", help="also profile the steady steps with torch.profiler into this .json.gz")
    p.add_argument(
        "--profiler-api",
        metavar="FIRST:LAST",
        help="call cudaProfilerStart before steady step FIRST and cudaProfilerStop after step LAST, "
        "as vLLM's CUDA profiler mode and SGLang's CUDA_PROFILER activity do at /start_profile and /stop_profile",
    )
    a = p.parse_args()

    torch.manual_seed(a.seed)
    ar = _fake_all_reduce()
    model = Model(ar).cuda().eval()
    sampler = Sampler()
    if a.nvtx == "on":
        register_nvtx_hooks(model, "model")
        register_nvtx_hooks(sampler, "sampler")
    rng = random.Random(a.seed)
    schedule = [rng.choice(BATCH_SIZES) for _ in range(a.warmup + a.steps)]
    ids = {b: torch.zeros(b, dtype=torch.long, device="cuda") for b in BATCH_SIZES}
    graphs = {}
    logits_out = {}
    capture_s = 0.0
    with torch.inference_mode():
        # Warm-up outside any step range (Triton compiles, cuBLAS picks its kernels), then capture.
        for b in BATCH_SIZES:
            model(ids[b])
        torch.cuda.synchronize()
        if a.graphs == "on":
            t0 = time.perf_counter()
            pool = None
            for b in sorted(BATCH_SIZES, reverse=True):
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g, pool=pool):
                    logits_out[b] = model(ids[b])
                pool = g.pool()
                graphs[b] = g
            torch.cuda.synchronize()
            capture_s = time.perf_counter() - t0

        def step(b: int):
            if a.graphs == "on":
                graphs[b].replay()
                logits = logits_out[b]
            else:
                logits = model(ids[b])
            nxt = sampler(logits)
            ids[b].copy_(nxt)

        events = []
        prof = None
        first, last = (int(x) for x in a.profiler_api.split(":")) if a.profiler_api else (-1, -1)
        for i, b in enumerate(schedule):
            steady = i >= a.warmup
            if steady and i - a.warmup == first:
                torch.cuda.cudart().cudaProfilerStart()
            if steady and i == a.warmup and a.torch_trace:
                prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA])
                prof.__enter__()
            if steady:
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                torch.cuda.nvtx.range_push("decode_step")
                with torch.profiler.record_function("decode_step"):
                    start.record()
                    step(b)
                    end.record()
                torch.cuda.nvtx.range_pop()
                events.append((i - a.warmup, b, start, end))
                if i - a.warmup == last:
                    torch.cuda.cudart().cudaProfilerStop()
            else:
                step(b)
        torch.cuda.synchronize()
        if prof is not None:
            prof.__exit__(None, None, None)
            raw = a.torch_trace[:-3] if a.torch_trace.endswith(".gz") else a.torch_trace
            prof.export_chrome_trace(raw)
            if raw != a.torch_trace:
                with open(raw, "rb") as src, gzip.open(a.torch_trace, "wb") as dst:
                    shutil.copyfileobj(src, dst)
                os.remove(raw)
    steps = [{"step": s, "batch": b, "gpuMs": st.elapsed_time(en)} for s, b, st, en in events]
    log = {
        "loop": "bench/nsys_serving_loop.py",
        "graphs": a.graphs,
        "nvtx": a.nvtx,
        "layers": LAYERS,
        "profilerApiSteps": a.profiler_api,
        "fakeAllReduce": "triton cross_device_reduce_1stage" if ar else "mul_",
        "captureSeconds": capture_s,
        "device": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "steps": steps,
        "meanStepMs": sum(s["gpuMs"] for s in steps) / len(steps) if steps else None,
    }
    with open(a.log, "w") as f:
        json.dump(log, f, indent=1)
    print(json.dumps({k: v for k, v in log.items() if k != "steps"}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
