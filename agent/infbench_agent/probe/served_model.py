"""The structure of the model a server serves, read from its config.json on this host.

The probe uses it so that the budget can check micro's model and the profiled trace against what was
really served. The model comes from the server's command line (vLLM: `vllm serve <model>` or `--model`;
SGLang: `--model-path`), else from /v1/models; its config.json from that path (relative to the server's
working directory), else from the Hugging Face cache the server itself reads. Only a few structural
numbers are reported. Standard library only; nothing here raises: no config found means no summary.
"""
from __future__ import annotations

import glob
import json
import os
from typing import Any, Dict, List, Optional, Tuple

from infbench_agent.probe.argv import flag_value

# The config.json fields the summary keeps, under the names Hugging Face configs give them.
FIELDS = (
    "num_hidden_layers",
    "hidden_size",
    "num_attention_heads",
    "num_key_value_heads",
    "intermediate_size",
    "moe_intermediate_size",
    "num_experts_per_tok",
    "first_k_dense_replace",
    "vocab_size",
)
# Routed experts go by three names: n_routed_experts (DeepSeek-V3, Kimi-K2: configuration_deepseek_v3.py),
# num_experts (Qwen2/3-MoE: configuration_qwen3_moe.py), num_local_experts (Mixtral, Llama 4:
# configuration_mixtral.py), the same three vLLM's model files read.
EXPERT_FIELDS = ("n_routed_experts", "num_experts", "num_local_experts")
MAX_CONFIG_BYTES = 4 << 20


def _flag(argv: List[str], name: str) -> Optional[str]:
    return flag_value(argv, (name,))


def model_arg(argv: List[str], kind: str) -> Optional[Tuple[str, str]]:
    """(model, the flag it came from) on a server's command line, or None.

    vLLM: `vllm serve <model_tag>` (vllm/entrypoints/cli/serve.py adds `model_tag` as an optional
    positional that overrides --model) or `--model` (python -m vllm.entrypoints.openai.api_server).
    SGLang: `--model-path` (alias `--model`, sglang/srt/server_args.py).
    """
    names = ("--model-path", "--model") if kind == "sglang" else ("--model", "--model-path")
    for i, a in enumerate(argv):
        # `vllm serve MODEL ...`: the first word after `serve` that is not a flag.
        if a == "serve" and i > 0 and os.path.basename(argv[i - 1]).startswith("vllm") and i + 1 < len(argv):
            if not argv[i + 1].startswith("-"):
                return argv[i + 1], "the model argument of `vllm serve`"
    for name in names:
        value = _flag(argv, name)
        if value:
            return value, f"the server's {name}"
    return None


def hub_caches(env: Dict[str, str], download_dir: Optional[str]) -> List[str]:
    """The Hugging Face hub caches a process with `env` reads, as huggingface_hub/constants.py defines them:
    HF_HUB_CACHE, else the older HUGGINGFACE_HUB_CACHE, else $HF_HOME/hub, HF_HOME defaulting to
    $XDG_CACHE_HOME/huggingface and that to ~/.cache. vLLM's --download-dir is a hub cache too."""
    home = env.get("HOME") or os.path.expanduser("~")

    def expand(p: str) -> str:
        return os.path.join(home, p[2:]) if p.startswith("~/") else p

    hf_home = expand(env.get("HF_HOME") or os.path.join(env.get("XDG_CACHE_HOME") or os.path.join(home, ".cache"), "huggingface"))
    roots = [download_dir] if download_dir else []
    roots.append(expand(env.get("HF_HUB_CACHE") or env.get("HUGGINGFACE_HUB_CACHE") or os.path.join(hf_home, "hub")))
    return [r for i, r in enumerate(roots) if r and r not in roots[:i]]


def cached_config(model_id: str, caches: List[str], revision: Optional[str] = None) -> Optional[str]:
    """config.json of `model_id` in a hub cache: the snapshot refs/<revision> (main by default) points at,
    else the newest snapshot that has one."""
    folder = "models--" + model_id.replace("/", "--")
    for root in caches:
        base = os.path.join(root, folder)
        ref = os.path.join(base, "refs", revision or "main")
        try:
            with open(ref, encoding="utf-8") as f:
                commit = f.read().strip()
            pinned = os.path.join(base, "snapshots", commit, "config.json")
            if commit and os.path.isfile(pinned):
                return pinned
        except OSError:
            pass
        if revision and os.path.isfile(os.path.join(base, "snapshots", revision, "config.json")):
            return os.path.join(base, "snapshots", revision, "config.json")
        found = glob.glob(os.path.join(base, "snapshots", "*", "config.json"))
        if found:
            return max(found, key=os.path.getmtime)
    return None


def summarize(config: Dict[str, Any]) -> Dict[str, Any]:
    """The numbers of a config.json that fix a decode step's shape; multimodal wrappers (Kimi-K2.5,
    Llama 4, Qwen2.5-VL) keep the language model under text_config, and that is the part reported."""
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else None
    src = text or config
    out: Dict[str, Any] = {"model_type": src.get("model_type") or config.get("model_type")}
    if text is not None:
        out["nested"] = "text_config"
        out["outer_model_type"] = config.get("model_type")
    for key in FIELDS:
        value = src.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            out[key] = value
    for key in EXPERT_FIELDS:
        value = src.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            out["experts"] = value
            out["experts_field"] = key
            break
    return out


def read_config(path: str) -> Optional[Dict[str, Any]]:
    try:
        if os.path.getsize(path) > MAX_CONFIG_BYTES:
            return None
        with open(path, encoding="utf-8") as f:
            config = json.load(f)
    except (OSError, ValueError):
        return None
    return config if isinstance(config, dict) else None


def served_model_config(
    argv: List[str], kind: str, cwd: Optional[str], env: Dict[str, str], models: List[Dict[str, Any]]
) -> Optional[Dict[str, Any]]:
    """The summary of the served model's config.json with where it was found, or None (never raises)."""
    try:
        return _served_model_config(argv, kind, cwd, env, models)
    except Exception:  # noqa: BLE001 - a probe never fails for the sake of an optional summary
        return None


def _served_model_config(
    argv: List[str], kind: str, cwd: Optional[str], env: Dict[str, str], models: List[Dict[str, Any]]
) -> Optional[Dict[str, Any]]:
    found = model_arg(argv, kind)
    candidates: List[Tuple[str, str]] = [found] if found else []
    # /v1/models: vLLM and SGLang give the loaded path or id as `root` (the id may be --served-model-name).
    for m in models:
        for key in ("root", "id"):
            if isinstance(m.get(key), str) and m[key]:
                candidates.append((m[key], f"/v1/models {key}"))
    revision = _flag(argv, "--revision")
    caches = hub_caches(env, _flag(argv, "--download-dir"))
    # The agent's own environment as well: the server may have been started by another shell of this user.
    caches += [c for c in hub_caches(dict(os.environ), None) if c not in caches]
    for model, where in candidates:
        path = model if os.path.isabs(model) or not cwd else os.path.join(cwd, model)
        file: Optional[str]
        if os.path.isdir(path) and os.path.isfile(os.path.join(path, "config.json")):
            file, how = os.path.join(path, "config.json"), f"{where} (a folder)"
        elif model.count("/") == 1 and not model.startswith((".", "/")):
            file, how = cached_config(model, caches, revision), f"{where}, in the Hugging Face cache"
        else:
            continue
        config = read_config(file) if file else None
        if config is None:
            continue
        return {"model": model, "path": file, "found_by": how, **summarize(config)}
    return None
