"""Macro phase: the server under test — which model it serves and whether it is the project's simulator
(/v1/models), and its own token counters (/metrics) to cross-check the client's counts against."""
from __future__ import annotations

import json
from typing import Dict, List, Optional, Tuple

from infbench_agent import auth, events
from infbench_agent.http import BadResponse, Endpoint, simple_request
from infbench_agent.macro.metrics import json_reply, parse_prometheus_totals
from infbench_agent.simulator_mark import SIMULATOR_MARK


# Seconds /v1/models has to answer, the whole reply.
MODELS_TIMEOUT_S = 10.0


def discover(endpoint: Endpoint, url: str, model: Optional[str]) -> dict:
    try:
        status, raw = simple_request(endpoint, "GET", "/v1/models", timeout=MODELS_TIMEOUT_S)
    except OSError as exc:
        raise events.AgentError(
            "server_unreachable",
            f"Cannot reach the inference server at {url}: {exc}",
            f"Is it running and listening there? Try: curl {url}/v1/models on the host, or pass {{0}}",
            [events.flag("--url")],
        )
    if status in (401, 403):
        raise events.AgentError(
            "unauthorized",
            auth.unauthorized_message(f"{url}/v1/models", status, bool(endpoint.api_key)),
            auth.KEY_HINT[0].upper() + auth.KEY_HINT[1:],
            auth.KEY_REMEDIES,
        )
    if status != 200 and model is None:
        raise events.AgentError(
            "server_error",
            f"{url}/v1/models answered HTTP {status}",
            "Is this an OpenAI-compatible server (vLLM, SGLang)? Check {0}, or name the model with {1}",
            [events.flag("--url"), events.flag("--model")],
        )
    unreadable = ""
    try:
        reply = json_reply(raw, f"{url}/v1/models") if status == 200 else {}
        data = (reply.get("data") or []) if isinstance(reply, dict) else []
    except BadResponse as exc:
        data, unreadable = [], str(exc)
    if not isinstance(data, list):
        # {"data": 5}: no list of models to pick from (a named --model still runs).
        data = []
    entry = next((m for m in data if isinstance(m, dict) and (model is None or m.get("id") == model)), None)
    if model is None:
        if entry is None:
            raise events.AgentError(
                "no_model",
                unreadable or f"{url}/v1/models lists no model (it answered {raw[:120].decode('utf-8', 'replace')!r})",
                "Pass {0}, the name the server serves the model under",
                [events.flag("--model", "NAME")],
            )
        model = entry.get("id")
        if not isinstance(model, str) or not model:
            raise events.AgentError(
                "no_model",
                f"{url}/v1/models lists a model without a name: {json.dumps(entry)[:120]}",
                "Pass {0}",
                [events.flag("--model", "NAME")],
            )
    owned = entry.get("owned_by") if entry else None
    owned = owned if isinstance(owned, str) else None
    max_model_len = entry.get("max_model_len") if entry else None
    simulated = owned == SIMULATOR_MARK
    # /v1/models says no version; its owned_by names vLLM and SGLang (the simulator speaks vLLM's API).
    kind = "vllm" if owned == "vllm" or simulated else "sglang" if owned == "sglang" else "unknown"
    info = {
        "url": url,
        "kind": kind,
        "version": None,
        # The names the server chose are shown to the user: cleaned of control characters.
        "model": events.printable(model),
        "owned_by": events.printable(owned) if owned is not None else None,
        "simulated": simulated,
        "max_model_len": max_model_len if isinstance(max_model_len, int) and not isinstance(max_model_len, bool) else None,
    }
    if info["model"] != model:
        # Requests name the model as the server spells it; the run shows the cleaned name.
        info["request_model"] = model
    return info


def read_server_metrics(endpoint: Endpoint) -> Tuple[Optional[Dict[str, float]], Optional[int]]:
    """The server's token counters, and the status of the read (for the cross-check's note when there is
    nothing to compare)."""
    try:
        status, raw = simple_request(endpoint, "GET", "/metrics", timeout=5.0)
    except OSError:
        return None, None
    if status != 200:
        return None, status
    totals = parse_prometheus_totals(
        raw.decode("utf-8", "replace"),
        ["vllm:generation_tokens_total", "vllm:prompt_tokens_total", "sglang:generation_tokens_total", "sglang:prompt_tokens_total"],
    )
    return totals or None, status


def metrics_note(status: Optional[int]) -> str:
    """Why the server-side cross-check has nothing to read, and how to get it."""
    if status == 404:
        # SGLang mounts /metrics only with --enable-metrics (python/sglang/srt/entrypoints/http_server.py);
        # vLLM always serves it.
        return (
            "/metrics answered 404: SGLang serves it only when started with --enable-metrics (vLLM always does), "
            "so the token counts could not be cross-checked against the server's"
        )
    if status in (401, 403):
        return f"/metrics answered {status}: the server wants an API key there too (pass --api-key)"
    if status is None:
        return "/metrics did not answer"
    return "the server has no Prometheus /metrics with generation token counters"


def metrics_cross_check(before: Optional[dict], after: Optional[dict], records: List[dict], status: Optional[int] = 200) -> dict:
    client_out = sum((r.get("output_tokens") or 0) if r.get("ok") else (r.get("client_tokens") or 0) for r in records)
    client_in = sum(r.get("prompt_tokens") or 0 for r in records if r.get("ok"))
    if not before or not after:
        return {"available": False, "note": metrics_note(status), "metrics_status": status}
    gen_key = "vllm:generation_tokens_total" if "vllm:generation_tokens_total" in after else "sglang:generation_tokens_total"
    prompt_key = gen_key.replace("generation", "prompt")
    if gen_key not in before or gen_key not in after:
        # A counter unreadable in one of the two reads (no count, NaN): nothing to subtract.
        return {"available": False, "note": "/metrics had no readable generation token counter", "metrics_status": status}
    gen = after.get(gen_key, 0.0) - before.get(gen_key, 0.0)
    prompt = after.get(prompt_key, 0.0) - before.get(prompt_key, 0.0)
    return {
        "available": True,
        "server_generation_tokens": gen,
        "server_prompt_tokens": prompt,
        "client_output_tokens": client_out,
        "client_input_tokens": client_in,
        "generation_tokens_match": abs(gen - client_out) <= max(1.0, 0.001 * client_out),
    }
