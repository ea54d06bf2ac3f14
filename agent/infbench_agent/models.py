"""Model shapes for the micro phase: the GEMMs one decode step runs on one GPU under tensor parallelism.

Shapes come from a model's config.json (a path, the server's /v1/models root, or the Hugging Face
cache on the host) or from a preset. A GEMM here is y[M, N] = x[M, K] @ W[K, N] on one GPU, so N and K
are already divided by the tensor-parallel size where the layer is split (column-parallel layers
split N, row-parallel layers split K), the way vLLM shards them.
Standard library only.
"""
from __future__ import annotations

import glob
import json
import os
from dataclasses import asdict, dataclass
from typing import Any, Optional

from infbench_agent import auth, events, http


@dataclass
class GemmShape:
    name: str  # "moe.gate_up", "attn.o_proj", ...
    n: int  # output features on one GPU
    k: int  # input features on one GPU
    per_step: int  # how many times one decode step runs it on one GPU (layers x experts hit)
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ModelInfo:
    name: str
    source: str  # "preset", or the config.json path it was read from
    hidden: int
    layers: int
    dtype: str  # bf16 | fp16 | fp32
    quant: Optional[str]  # None | "int4" | "fp8"
    config: dict[str, Any]  # the text model's config (for presets, the preset's fields)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("config")
        return d


# Presets hold the config.json fields that the shapes need, as the models' published configs give them.
PRESETS: dict[str, dict[str, Any]] = {
    # Kimi-K2.5 (INT4 routed experts, W4A16 group 32): DeepSeek-V3 architecture, 64 MLA heads.
    "kimi-k2.5": {
        "model_type": "kimi_k2",
        "hidden_size": 7168,
        "intermediate_size": 18432,
        "moe_intermediate_size": 2048,
        "n_routed_experts": 384,
        "num_experts_per_tok": 8,
        "n_shared_experts": 1,
        "first_k_dense_replace": 1,
        "num_hidden_layers": 61,
        "num_attention_heads": 64,
        "q_lora_rank": 1536,
        "kv_lora_rank": 512,
        "qk_nope_head_dim": 128,
        "qk_rope_head_dim": 64,
        "v_head_dim": 128,
        "vocab_size": 163840,
        "torch_dtype": "bfloat16",
        "_quant": "int4",
        "_group_size": 32,
    },
    "deepseek-v3": {
        "model_type": "deepseek_v3",
        "hidden_size": 7168,
        "intermediate_size": 18432,
        "moe_intermediate_size": 2048,
        "n_routed_experts": 256,
        "num_experts_per_tok": 8,
        "n_shared_experts": 1,
        "first_k_dense_replace": 3,
        "num_hidden_layers": 61,
        "num_attention_heads": 128,
        "q_lora_rank": 1536,
        "kv_lora_rank": 512,
        "qk_nope_head_dim": 128,
        "qk_rope_head_dim": 64,
        "v_head_dim": 128,
        "vocab_size": 129280,
        "torch_dtype": "bfloat16",
        "_quant": "fp8",
    },
    "llama-3-70b": {
        "model_type": "llama",
        "hidden_size": 8192,
        "intermediate_size": 28672,
        "num_hidden_layers": 80,
        "num_attention_heads": 64,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "vocab_size": 128256,
        "torch_dtype": "bfloat16",
    },
    "llama-3-8b": {
        "model_type": "llama",
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "vocab_size": 128256,
        "torch_dtype": "bfloat16",
    },
    "qwen3-235b-a22b": {
        "model_type": "qwen3_moe",
        "hidden_size": 4096,
        "moe_intermediate_size": 1536,
        "num_experts": 128,
        "num_experts_per_tok": 8,
        "num_hidden_layers": 94,
        "num_attention_heads": 64,
        "num_key_value_heads": 4,
        "head_dim": 128,
        "vocab_size": 151936,
        "torch_dtype": "bfloat16",
    },
    "qwen3-30b-a3b": {
        "model_type": "qwen3_moe",
        "hidden_size": 2048,
        "moe_intermediate_size": 768,
        "num_experts": 128,
        "num_experts_per_tok": 8,
        "num_hidden_layers": 48,
        "num_attention_heads": 32,
        "num_key_value_heads": 4,
        "head_dim": 128,
        "vocab_size": 151936,
        "torch_dtype": "bfloat16",
    },
}
ALIASES = {
    "kimi-k2": "kimi-k2.5",
    "deepseek-r1": "deepseek-v3",
    "llama-3.1-70b": "llama-3-70b",
    "llama-3.3-70b": "llama-3-70b",
    "llama-3.1-8b": "llama-3-8b",
}


class ModelError(ValueError):
    """A model or config that cannot give shapes: the message says what is wrong, the hint what to pass instead,
    its `{n}` slots filled by the remedies, and the code is the AgentError's it becomes."""

    def __init__(
        self, message: str, hint: str = "", remedies: Optional[list[events.Remedy]] = None, code: events.ErrorCode = "bad_model"
    ) -> None:
        super().__init__(message)
        self.hint = hint
        self.remedies = remedies
        self.code = code


def preset_names() -> list[str]:
    return sorted(PRESETS)


def _dtype_name(config: dict[str, Any]) -> str:
    raw = str(config.get("torch_dtype") or config.get("dtype") or "bfloat16").replace("torch.", "")
    return {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "fp32", "float": "fp32"}.get(raw, "bf16")


def _quant_name(quant: Optional[dict[str, Any]]) -> Optional[str]:
    """Reduces a quantization_config to what picks a kernel: int4 weight-only, fp8, or none."""
    if not isinstance(quant, dict):
        return None
    method = str(quant.get("quant_method", "")).lower()
    if method in ("fp8", "fbgemm_fp8", "modelopt") or "fp8" in str(quant.get("quant_algo", "")).lower():
        return "fp8"
    if method in ("gptq", "awq", "gptq_marlin", "awq_marlin") and int(quant.get("bits", 4)) == 4:
        return "int4"
    if method == "compressed-tensors":
        for group in (quant.get("config_groups") or {}).values():
            weights = (group or {}).get("weights") or {}
            if int(weights.get("num_bits", 0) or 0) == 4:
                return "int4"
            if int(weights.get("num_bits", 0) or 0) == 8 and weights.get("type") == "float":
                return "fp8"
    return None


def _group_size(quant: Optional[dict[str, Any]]) -> int:
    if not isinstance(quant, dict):
        return 0
    for group in (quant.get("config_groups") or {}).values():
        size = ((group or {}).get("weights") or {}).get("group_size")
        if size:
            return int(size)
    return int(quant.get("group_size") or 0) if int(quant.get("group_size") or 0) > 0 else 0


def model_from_config(config: dict[str, Any], name: str, source: str) -> ModelInfo:
    # Multimodal wrappers (Kimi-K2.5, Llama 4...) keep the language model under text_config.
    text = dict(config.get("text_config") or config)
    quant = config.get("quantization_config") or text.get("quantization_config")
    if "hidden_size" not in text or "num_hidden_layers" not in text:
        raise ModelError(
            f"{source} has no hidden_size / num_hidden_layers: not a transformer config.json the micro phase understands.",
            f"Pass {{0}} with a preset ({', '.join(preset_names())}) or {{1}}.",
            [events.flag("--model"), events.flag("--shape", "NAME=NxK")],
        )
    group_size = _group_size(quant)
    if group_size and "_group_size" not in text:
        text["_group_size"] = group_size
    return ModelInfo(
        name=name,
        source=source,
        hidden=int(text["hidden_size"]),
        layers=int(text["num_hidden_layers"]),
        dtype=_dtype_name(text if "torch_dtype" in text or "dtype" in text else config),
        quant=text.get("_quant") or _quant_name(quant),
        config=text,
    )


def load_preset(name: str) -> ModelInfo:
    key = ALIASES.get(name.lower(), name.lower())
    if key not in PRESETS:
        raise ModelError(
            f"No preset named {name!r}.",
            f"Presets: {', '.join(preset_names())}; or pass {{0}} with the model's config.json (or its folder).",
            [events.flag("--config")],
        )
    return model_from_config(PRESETS[key], key, "preset")


def load_config_file(path: str) -> ModelInfo:
    file = os.path.join(path, "config.json") if os.path.isdir(path) else path
    try:
        with open(file, encoding="utf-8") as f:
            config = json.load(f)
    except OSError as exc:
        raise ModelError(f"Cannot read {file}: {exc.strerror}.", "Pass the model's folder or its config.json.") from exc
    except json.JSONDecodeError as exc:
        raise ModelError(f"{file} is not valid JSON ({exc}).") from exc
    name = os.path.basename(os.path.dirname(os.path.abspath(file)))
    return model_from_config(config, name, file)


def hf_cache_config(model_id: str) -> Optional[str]:
    """The config.json of a model id in the host's Hugging Face cache, newest snapshot first."""
    roots = []
    if os.environ.get("HF_HUB_CACHE"):
        roots.append(os.environ["HF_HUB_CACHE"])
    hf_home = os.environ.get("HF_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "huggingface")
    roots.append(os.path.join(hf_home, "hub"))
    folder = "models--" + model_id.replace("/", "--")
    for root in roots:
        found = glob.glob(os.path.join(root, folder, "snapshots", "*", "config.json"))
        if found:
            return max(found, key=os.path.getmtime)
    return None


def served_model_root(server_url: str, timeout: float = 5.0, api_key: Optional[str] = None) -> Optional[str]:
    """The model path or id the server loaded: vLLM and SGLang give it as `root` in /v1/models."""
    url = server_url.rstrip("/") + "/v1/models"
    status, raw, _, _ = http.request_once(url, timeout, "GET", api_key)
    if status in (401, 403):
        raise ModelError(auth.unauthorized_message(url, status, bool(api_key)), auth.KEY_HINT, auth.KEY_REMEDIES, "unauthorized")
    if status is None or not 200 <= status < 300:
        return None
    try:
        body = json.loads(raw or b"")
    except (ValueError, RecursionError):
        return None
    entries = body.get("data") if isinstance(body, dict) else None
    for entry in entries if isinstance(entries, list) else []:
        root = entry.get("root") or entry.get("id") if isinstance(entry, dict) else None
        if root:
            return str(root)
    return None


def _config_on_host(name: str) -> Optional[ModelInfo]:
    """The model a name stands for on this host: a path to a folder or config.json, else a Hugging Face id in the cache."""
    if os.path.exists(name):
        return load_config_file(name)
    cached = hf_cache_config(name)
    return load_config_file(cached) if cached else None


def resolve_model(model: Optional[str], config_path: Optional[str], server_url: Optional[str], api_key: Optional[str] = None) -> ModelInfo:
    """Finds the model to take shapes from: an explicit config, then a preset, then a path or HF id, then the server."""
    if config_path:
        return load_config_file(config_path)
    if model:
        key = ALIASES.get(model.lower(), model.lower())
        if key in PRESETS:
            return load_preset(key)
        found = _config_on_host(model)
        if found is not None:
            return found
        raise ModelError(
            f"{model!r} is neither a preset ({', '.join(preset_names())}), a path, nor a model in the host's Hugging Face cache.",
            "Pass {0} with the model's config.json.",
            [events.flag("--config")],
        )
    if server_url:
        root = served_model_root(server_url, api_key=api_key)
        if root:
            found = _config_on_host(root)
            if found is not None:
                return found
            raise ModelError(
                f"The server at {server_url} serves {root!r}, but its config.json is not on this host "
                "(not a path, not in the Hugging Face cache).",
                "Pass {0}, or a preset with {1}.",
                [events.flag("--config"), events.flag("--model")],
            )
    raise ModelError(
        "No model given and none found on a server.",
        f"Pass {{0}} with a preset ({', '.join(preset_names())}), {{1}} with a config.json, or {{2}}.",
        [events.flag("--model"), events.flag("--config"), events.flag("--shape", "NAME=NxK")],
    )


def _split(total: int, tp: int, what: str) -> int:
    if total % tp:
        raise ModelError(
            f"{what} ({total}) does not divide by the tensor-parallel size {tp}.",
            "Give {0} a value that divides it.",
            [events.flag("--tp")],
            "bad_option",
        )
    return total // tp


def gemm_shapes(model: ModelInfo, tp: int) -> list[GemmShape]:
    """The distinct GEMMs of one decode step on one GPU under tensor parallelism `tp`."""
    c = model.config
    h = model.hidden
    layers = model.layers
    shapes: list[GemmShape] = []

    # Attention projections.
    heads = int(c.get("num_attention_heads", 0) or 0)
    if c.get("kv_lora_rank"):
        # Multi-head latent attention (DeepSeek-V3, Kimi): the down projections are replicated, the
        # per-head up projections and o_proj are split over heads.
        q_lora = int(c.get("q_lora_rank") or 0)
        kv_lora = int(c["kv_lora_rank"])
        nope, rope, v_dim = int(c["qk_nope_head_dim"]), int(c["qk_rope_head_dim"]), int(c["v_head_dim"])
        local_heads = _split(heads, tp, "num_attention_heads")
        if q_lora:
            shapes.append(GemmShape("attn.qkv_a_proj", q_lora + kv_lora + rope, h, layers, "replicated (q_a + kv_a fused)"))
            shapes.append(GemmShape("attn.q_b_proj", local_heads * (nope + rope), q_lora, layers))
        else:
            shapes.append(GemmShape("attn.q_proj", local_heads * (nope + rope), h, layers))
            shapes.append(GemmShape("attn.kv_a_proj", kv_lora + rope, h, layers, "replicated"))
        shapes.append(GemmShape("attn.kv_b_proj", local_heads * (nope + v_dim), kv_lora, layers))
        shapes.append(GemmShape("attn.o_proj", h, local_heads * v_dim, layers))
    elif heads:
        head_dim = int(c.get("head_dim") or h // heads)
        kv_heads = int(c.get("num_key_value_heads") or heads)
        local_heads = _split(heads, tp, "num_attention_heads")
        # KV heads fewer than TP ranks are replicated, one per rank.
        local_kv = max(1, kv_heads // tp)
        shapes.append(GemmShape("attn.qkv_proj", (local_heads + 2 * local_kv) * head_dim, h, layers))
        shapes.append(GemmShape("attn.o_proj", h, local_heads * head_dim, layers))

    # MLPs: routed experts, shared experts, and dense layers.
    experts = int(c.get("n_routed_experts") or c.get("num_experts") or c.get("num_local_experts") or 0)
    moe_inter = int(c.get("moe_intermediate_size") or 0)
    dense_inter = int(c.get("intermediate_size") or 0)
    if experts and moe_inter:
        active = int(c.get("num_experts_per_tok") or 1)
        dense_layers = int(c.get("first_k_dense_replace") or 0)
        if c.get("mlp_only_layers"):
            dense_layers = len(c["mlp_only_layers"])
        moe_layers = layers - dense_layers
        local = _split(moe_inter, tp, "moe_intermediate_size")
        note = f"one expert; M = tokens routed to it ({experts} experts, {active} active per token)"
        shapes.append(GemmShape("moe.gate_up", 2 * local, h, moe_layers * active, note))
        shapes.append(GemmShape("moe.down", h, local, moe_layers * active, note))
        shared = int(c.get("n_shared_experts") or 0)
        shared_inter = shared * moe_inter or int(c.get("shared_expert_intermediate_size") or 0)
        if shared_inter:
            s_local = _split(shared_inter, tp, "shared expert intermediate size")
            shapes.append(GemmShape("shared_expert.gate_up", 2 * s_local, h, moe_layers))
            shapes.append(GemmShape("shared_expert.down", h, s_local, moe_layers))
        shapes.append(GemmShape("moe.router", experts, h, moe_layers, "replicated"))
        if dense_layers and dense_inter:
            d_local = _split(dense_inter, tp, "intermediate_size")
            shapes.append(GemmShape("dense_mlp.gate_up", 2 * d_local, h, dense_layers))
            shapes.append(GemmShape("dense_mlp.down", h, d_local, dense_layers))
    elif dense_inter:
        d_local = _split(dense_inter, tp, "intermediate_size")
        shapes.append(GemmShape("mlp.gate_up", 2 * d_local, h, layers))
        shapes.append(GemmShape("mlp.down", h, d_local, layers))

    vocab = int(c.get("vocab_size") or 0)
    if vocab:
        shapes.append(GemmShape("lm_head", -(-vocab // tp), h, 1))
    return shapes


def parse_shape(spec: str) -> GemmShape:
    """`NAME=NxK` (for example `gate_up=512x7168`) from the command line."""
    try:
        name, dims = spec.split("=", 1)
        n, k = (int(x) for x in dims.lower().split("x"))
    except ValueError as exc:
        raise ModelError(
            f"--shape {spec!r}: expected NAME=NxK.", "Give it as {0}.", [events.flag("--shape", "gate_up=512x7168")], "bad_option"
        ) from exc
    if n <= 0 or k <= 0:
        raise ModelError(f"--shape {spec!r}: N and K must be positive.", code="bad_option")
    return GemmShape(name.strip() or f"{n}x{k}", n, k, 1, "given on the command line")
