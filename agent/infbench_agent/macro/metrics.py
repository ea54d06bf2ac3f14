"""Serving metrics as `vllm bench serve` defines them, plus the stream parsing the load generator needs.

Definitions (notes: FIELD-FACTS "Serving metrics"): TTFT = first token-bearing SSE message minus send
time; ITL = gaps between later token-bearing messages, pooled over requests; E2EL = last token-bearing
message minus send time (the usage-only chunk is excluded); TPOT = (E2EL - TTFT) / (output_tokens - 1)
for output_tokens > 1; output tokens from `usage`, a client-side count only where usage is missing.
Throughputs divide by the duration from the first send to the last finish. Standard library only.
"""
from __future__ import annotations

import json
import math
import re
from typing import Any, Dict, Iterable, List, Optional, Sequence

from infbench_agent.http import BadResponse


# No model reads or writes this many tokens in one request (the longest context windows are around 10M):
# a usage count above it is a broken count, not a measurement.
MAX_PLAUSIBLE_TOKENS = 50_000_000


class SSEParser:
    """Splits a text/event-stream body into the payloads of its `data:` fields, across arbitrary chunking."""

    def __init__(self) -> None:
        # The bytes of an event not yet ended, as they came: joined only once its end arrives. Joined at every
        # read, a 10 MB message took 40 reads of copying and re-searching all that came before (0.9 s on a
        # loopback), so its stamp was late and TPOT read low.
        self._parts: List[bytes] = []

    def feed(self, data: bytes) -> List[str]:
        if self._parts:
            # Only the new bytes, and the three before them where an event's end may begin, can end the event.
            edge = self._parts[-1][-3:] + data[:3]
            if b"\n\n" not in data and b"\r\n\r\n" not in data and b"\n\n" not in edge and b"\r\n\r\n" not in edge:
                self._parts.append(data)
                return []
            self._parts.append(data)
            buf = b"".join(self._parts)
            self._parts = []
        else:
            buf = data
        # Positions into one buffer rather than re-slicing it per event: this runs once per token.
        out: List[str] = []
        pos = 0
        crlf = b"\r" in buf
        while True:
            # Events end with a blank line; servers use \n\n, some \r\n\r\n.
            i = buf.find(b"\n\n", pos)
            j = buf.find(b"\r\n\r\n", pos) if crlf else -1
            if i < 0 and j < 0:
                break
            if j >= 0 and (i < 0 or j < i):
                raw, pos = buf[pos:j], j + 4
            else:
                raw, pos = buf[pos:i], i + 2
            if raw.startswith(b"data: ") and b"\n" not in raw:
                # The usual event: one `data: ` line.
                out.append(raw[6:].rstrip(b"\r").decode("utf-8", "replace"))
                continue
            data_lines = []
            for line in raw.split(b"\n"):
                line = line.rstrip(b"\r")
                if line.startswith(b"data:"):
                    value = line[5:]
                    data_lines.append(value[1:] if value.startswith(b" ") else value)
            if data_lines:
                out.append(b"\n".join(data_lines).decode("utf-8", "replace"))
        rest = buf[pos:] if pos else buf
        if rest:
            self._parts.append(rest)
        return out

    @property
    def pending(self) -> bytes:
        return b"".join(self._parts)

    @property
    def idle(self) -> bool:
        """No part of an event held: the next bytes begin an event."""
        return not self._parts


def message_content(message: dict) -> Optional[str]:
    """The generated text a streamed completions or chat message carries ("" for none); None if it is no token
    message: its `choices` empty or missing (a usage-only message), or a chat stream's role-only opening.
    Raises BadResponse when the message is not shaped as one.

    A message with choices counts as a token message with its text empty too (a special token's), as
    vllm/benchmarks/lib/endpoint_request_func.py does (async_request_openai_completions and _chat_completions,
    at 02cfb534): it stamps TTFT or an ITL sample. One exception: vLLM counts the chat role-only message as
    well, which vLLM and SGLang send with the first token, but other servers send at once, before prefill,
    where vLLM's TTFT then reads ~0 ms. Here it carries no token; vLLM's extra ~0 ms ITL sample is left out.
    """
    choices = message.get("choices")
    if not choices:
        return None
    if not isinstance(choices, list):
        raise BadResponse(f"a stream message's `choices` is a {type(choices).__name__}, not a list: {str(choices)[:80]!r}")
    choice = choices[0]
    if not isinstance(choice, dict):
        raise BadResponse(f"a stream message's first choice is {json.dumps(choice)[:80]}, not an object")
    if "text" in choice:
        text = choice.get("text")
        if text is not None and not isinstance(text, str):
            raise BadResponse(f"a completions message's `text` is a {type(text).__name__}, not a string")
        return text or ""
    delta = choice.get("delta")
    if delta is None:
        return ""
    if not isinstance(delta, dict):
        raise BadResponse(f"a chat message's `delta` is {json.dumps(delta)[:80]}, not an object")
    out = ""
    for key in ("content", "reasoning_content", "reasoning"):
        part = delta.get(key)
        if part is None:
            continue
        if not isinstance(part, str):
            raise BadResponse(f"a chat message's `delta.{key}` is a {type(part).__name__}, not a string")
        out += part
        if key == "reasoning_content":
            break  # `reasoning` is the newer name of the same text
    if not out and "role" in delta and not delta.get("tool_calls"):
        return None  # the role-only opening
    return out


def usage_count(usage: dict, key: str) -> "tuple[Optional[int], Optional[str]]":
    """A token count from a server's answer (usage.completion_tokens, /tokenize's count): (count, None) for a
    usable one; (None, why) for one that cannot be a count of tokens; (None, None) when there is none."""
    value = usage.get(key)
    if value is None:
        return None, None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None, f"usage.{key} is {json.dumps(value)[:40]}, not a number"
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        return None, f"usage.{key} is {value!r}, not a whole number"
    if value < 0 or value > MAX_PLAUSIBLE_TOKENS:
        return None, f"usage.{key} is {value:.0f}, not a possible token count"
    return int(value), None


def percentile(sorted_values: Sequence[float], p: float) -> float:
    """Linear interpolation between closest ranks, as numpy.percentile's default (what vLLM reports)."""
    if not sorted_values:
        return float("nan")
    if len(sorted_values) == 1:
        return float(sorted_values[0])
    k = (len(sorted_values) - 1) * p / 100.0
    lo = math.floor(k)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (k - lo)


def percentile_key(p: float) -> str:
    """vLLM's spelling: 99 -> "p99", 99.9 -> "p99.9"."""
    return f"p{int(p)}" if float(p).is_integer() else f"p{p}"


def describe_ms(values_s: Iterable[float], name: str, percentiles: Sequence[float]) -> Dict[str, Optional[float]]:
    """mean_/median_/std_/pXX_ + name + _ms from samples in seconds (population std, as numpy.std)."""
    vals = sorted(v * 1000.0 for v in values_s)
    out: Dict[str, Optional[float]] = {}
    if not vals:
        out[f"mean_{name}_ms"] = None
        out[f"median_{name}_ms"] = None
        out[f"std_{name}_ms"] = None
        for p in percentiles:
            out[f"{percentile_key(p)}_{name}_ms"] = None
        return out
    mean = sum(vals) / len(vals)
    out[f"mean_{name}_ms"] = mean
    out[f"median_{name}_ms"] = percentile(vals, 50)
    out[f"std_{name}_ms"] = math.sqrt(sum((v - mean) ** 2 for v in vals) / len(vals))
    for p in percentiles:
        out[f"{percentile_key(p)}_{name}_ms"] = percentile(vals, p)
    return out


def request_tpot(record: dict) -> Optional[float]:
    out = record.get("output_tokens") or 0
    if not record.get("ok") or out <= 1 or record.get("ttft") is None:
        return None
    return (record["e2el"] - record["ttft"]) / (out - 1)


def meets_slos(record: dict, slos_ms: Dict[str, float]) -> bool:
    for key, limit in slos_ms.items():
        if key == "tpot":
            value = request_tpot(record)
            if value is None:
                value = 0.0  # vLLM counts a 1-token request's TPOT as 0 for goodput
        else:
            value = record.get(key)
        if value is None or value * 1000.0 > limit:
            return False
    return True


def parse_slos(text: Optional[str]) -> Dict[str, float]:
    """`ttft:500 tpot:50` (ms) -> {"ttft": 500.0, "tpot": 50.0}; the keys vLLM's --goodput accepts."""
    out: Dict[str, float] = {}
    if not text:
        return out
    for part in text.replace(",", " ").split():
        key, sep, value = part.partition(":")
        if not sep or key not in ("ttft", "tpot", "e2el"):
            raise ValueError(f"bad SLO {part!r}: use ttft:MS, tpot:MS or e2el:MS, for example 'ttft:500 tpot:50'")
        out[key] = float(value)
        if out[key] <= 0:
            raise ValueError(f"bad SLO {part!r}: the limit must be a positive number of milliseconds")
    return out


def summarize(records: Sequence[dict], percentiles: Sequence[float], slos_ms: Dict[str, float], started_at: Optional[float] = None) -> dict:
    """One load level's summary with vLLM's field names, from per-request records (times in seconds).

    `started_at` is when the level began (the origin of its planned arrivals): vLLM's benchmark_duration runs
    from before the first arrival's wait to the last response (vllm/benchmarks/serve.py, benchmark()).
    """
    ok = [r for r in records if r.get("ok")]
    failed = [r for r in records if not r.get("ok")]
    sends = [r["send"] for r in records if r.get("send") is not None]
    finishes = [r["finish"] for r in records if r.get("finish") is not None]
    start = min(sends) if sends else None
    if start is not None and started_at is not None:
        start = min(start, started_at)
    duration = (max(finishes) - start) if start is not None and finishes else 0.0
    # vllm/benchmarks/serve.py calculate_metrics: total_input sums outputs[i].prompt_len, which
    # lib/endpoint_request_func.py sets from usage.prompt_tokens when the server sends it (the dataset's
    # length otherwise); only successful requests count.
    total_in = sum(r.get("prompt_tokens") or 0 for r in ok)
    total_out = sum(r.get("output_tokens") or 0 for r in ok)
    tpots = [t for t in (request_tpot(r) for r in ok) if t is not None]
    itls = [x for r in ok for x in r.get("itl", ())]
    out: dict = {
        "completed": len(ok),
        "failed": len(failed),
        "duration": duration,
        "total_input_tokens": total_in,
        "total_output_tokens": total_out,
        "request_throughput": len(ok) / duration if duration > 0 else 0.0,
        "output_throughput": total_out / duration if duration > 0 else 0.0,
        "total_token_throughput": (total_in + total_out) / duration if duration > 0 else 0.0,
    }
    if slos_ms:
        good = sum(1 for r in ok if meets_slos(r, slos_ms))
        out["request_goodput"] = good / duration if duration > 0 else 0.0
        out["goodput_slos_ms"] = dict(slos_ms)
    out.update(describe_ms((r["ttft"] for r in ok if r.get("ttft") is not None), "ttft", percentiles))
    out.update(describe_ms(tpots, "tpot", percentiles))
    out.update(describe_ms(itls, "itl", percentiles))
    out.update(describe_ms((r["e2el"] for r in ok if r.get("e2el") is not None), "e2el", percentiles))
    # serve.py (newest, 009e6d4a): the exact peak of successful requests, each [start, start + latency).
    out["max_concurrent_requests"] = vllm_peak_concurrency(ok)
    tokens_1s, concurrent_1s = vllm_one_second_buckets(ok)
    out["max_output_tokens_per_s"] = tokens_1s
    # serve.py up to vLLM 0.28 (main of 2026-09-12) put the maximum over 1-second buckets under the same name.
    out["max_concurrent_requests_1s_buckets"] = concurrent_1s
    # What the client really held: every request, failed ones too, from its send until its response ended.
    out["peak_in_flight"] = peak_in_flight(records)
    reasons: Dict[str, int] = {}
    for r in failed:
        reasons[r.get("reason") or "error"] = reasons.get(r.get("reason") or "error", 0) + 1
    out["failures"] = reasons
    out["errors"] = [r.get("error") for r in failed[:5]]
    # One example per reason, so that each reason reads with its own cause.
    examples: Dict[str, str] = {}
    for r in failed:
        examples.setdefault(r.get("reason") or "error", str(r.get("error") or ""))
    out["failure_examples"] = examples
    lags = sorted(
        max(0.0, r["send"] - r["intended"]) * 1000.0 for r in records if r.get("intended") is not None and r.get("send") is not None
    )
    out["scheduling_lag_ms"] = {
        "mean": sum(lags) / len(lags) if lags else None,
        "p99": percentile(lags, 99) if lags else None,
        "max": lags[-1] if lags else None,
    }
    usage_missing = sum(1 for r in ok if r.get("usage_missing"))
    rejected = [r for r in ok if r.get("usage_problem")]
    prompt_estimated = sum(1 for r in ok if r.get("prompt_estimated"))
    discrepancy = sum(abs((r.get("client_tokens") or 0) - (r.get("output_tokens") or 0)) for r in ok)

    def source(missing: int, fallback: str) -> str:
        return "usage" if not missing else (fallback if missing == len(ok) else "mixed")

    out["token_count"] = {
        "source": source(usage_missing + len(rejected), "client"),
        "usage_missing": usage_missing,
        # Requests whose usage could not be true (not a count, fewer tokens than streamed, more than
        # max_tokens): their counts are the client's, and the first such usage says why.
        "usage_rejected": len(rejected),
        "usage_problem": rejected[0]["usage_problem"] if rejected else None,
        "client_vs_usage_abs_diff": discrepancy,
        # Without usage.prompt_tokens the prompt tokens are the prompt maker's calibrated estimate.
        "input_source": source(prompt_estimated, "estimate"),
    }
    return out


def vllm_peak_concurrency(ok: Sequence[dict]) -> int:
    """max_concurrent_requests as the newest vllm/benchmarks/serve.py computes it (calculate_metrics, at 009e6d4a):
    a sweep over successful requests, each the half-open [start, start + latency) with latency = E2EL, a
    departure before an arrival at the same instant."""
    edges = []
    for r in ok:
        if r.get("send") is not None and r.get("e2el") is not None:
            edges.append((r["send"], 1))
            edges.append((r["send"] + r["e2el"], -1))
    edges.sort()
    peak = cur = 0
    for _, d in edges:
        cur += d
        peak = max(peak, cur)
    return peak


def vllm_one_second_buckets(ok: Sequence[dict]) -> "tuple[float, int]":
    """(max_output_tokens_per_s, the older max_concurrent_requests) from vllm/benchmarks/serve.py's 1-second
    buckets counted from the first successful start (calculate_metrics at def9ce85, vLLM up to 0.28): a token
    message at start + ttft + the running sum of ITLs lands in bucket int(t - first start); a request counts
    in every bucket from int(start - first) to int(end - first), both included. The token count is of
    messages (one per token where servers stream one token a message), as vLLM's."""
    timed = [r for r in ok if r.get("send") is not None and r.get("ttft") is not None and r.get("e2el") is not None]
    if not timed:
        return 0.0, 0
    first = min(r["send"] for r in timed)
    n = int(math.ceil(max(r["send"] + r["e2el"] for r in timed) - first)) + 1
    tokens = [0] * n
    concurrent = [0] * n
    for r in timed:
        t = r["send"] + r["ttft"]
        times = [t]
        for gap in r.get("itl") or ():
            t += gap
            times.append(t)
        for t in times:
            b = int(t - first)
            if 0 <= b < n:
                tokens[b] += 1
        for b in range(int(r["send"] - first), min(n - 1, int(r["send"] + r["e2el"] - first)) + 1):
            concurrent[b] += 1
    return float(max(tokens)), max(concurrent)


def peak_in_flight(records: Sequence[dict]) -> int:
    edges = []
    for r in records:
        if r.get("send") is not None and r.get("finish") is not None:
            edges.append((r["send"], 1))
            edges.append((r["finish"], -1))
    edges.sort(key=lambda e: (e[0], e[1]))
    peak = cur = 0
    for _, d in edges:
        cur += d
        peak = max(peak, cur)
    return peak


# A sample's value in the Prometheus text format "is a float represented as required by Go's ParseFloat()
# function", NaN, +Inf and -Inf included (prometheus/docs, content/docs/instrumenting/exposition_formats.md).
# ParseFloat takes a sign and leading zeros ("+5" and "007" are 5 and 7, as Prometheus reads them) and hex
# floats; it refuses what Python's float() also takes: underscores between decimal digits ("1_000"), digits
# of other scripts ("\u0665"), surrounding spaces. Inf and NaN spellings are matched apart (any case, as Go).
_GO_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
_GO_HEX = re.compile(r"[+-]?0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+\Z")
_GO_SPECIAL = {
    "inf": math.inf,
    "+inf": math.inf,
    "-inf": -math.inf,
    "infinity": math.inf,
    "+infinity": math.inf,
    "-infinity": -math.inf,
    "nan": math.nan,
}


def prometheus_value(text: str) -> Optional[float]:
    """A sample value as Prometheus reads it (Go's ParseFloat), or None for text it would refuse."""
    if _GO_DECIMAL.match(text):
        return float(text)
    if _GO_HEX.match(text):
        return float.fromhex(text)
    return _GO_SPECIAL.get(text.lower())


def parse_prometheus_totals(text: str, names: Sequence[str]) -> Dict[str, float]:
    """Sums each named counter over its label sets in a Prometheus text exposition. A counter with a sample
    that is no count (not a number, NaN, infinite, negative) is left out whole: a sum with it would say
    "nan generated tokens", and one without it would count too few."""
    totals: Dict[str, float] = {}
    broken = set()
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name = line.split("{", 1)[0].split(" ", 1)[0]
        if name in names:
            # The value follows the name or the label set's closing brace; a timestamp may follow it.
            tail = line.rpartition("}")[2] if "{" in line else line[len(name) :]
            parts = tail.split()
            value = prometheus_value(parts[0]) if parts else None
            if value is None or not math.isfinite(value) or value < 0:
                broken.add(name)
                continue
            totals[name] = totals.get(name, 0.0) + value
    return {k: v for k, v in totals.items() if k not in broken}


def compact_record(record: dict) -> dict:
    """A per-request record for the event stream: milliseconds, no ITL list."""
    itl = record.get("itl") or []
    tpot = request_tpot(record)

    def ms(v: Optional[float]) -> Optional[float]:
        return None if v is None else round(v * 1000.0, 3)

    return {
        "id": record.get("id"),
        "ok": bool(record.get("ok")),
        "reason": record.get("reason"),
        "error": record.get("error"),
        "prompt_tokens": record.get("prompt_tokens"),
        "output_tokens": record.get("output_tokens"),
        "ttft_ms": ms(record.get("ttft")),
        "tpot_ms": ms(tpot),
        "e2el_ms": ms(record.get("e2el")),
        "itl_mean_ms": ms(sum(itl) / len(itl)) if itl else None,
        "itl_max_ms": ms(max(itl)) if itl else None,
        "lag_ms": (
            ms(max(0.0, record["send"] - record["intended"]))
            if record.get("intended") is not None and record.get("send") is not None
            else None
        ),
        # A multi-turn conversation's request: which conversation of the level, and which turn (1 = the first).
        **({"conversation": record.get("conversation"), "turn": record["turn"]} if record.get("turn") else {}),
    }


_DECODER = json.JSONDecoder()
TOO_DEEP = "over Python's recursion limit; no server's reply nests so"


def json_reply(raw: bytes, what: str) -> Any:
    """A server's JSON reply (/v1/models, /tokenize); BadResponse saying why for one that is not JSON, or that
    nests deeper than Python's parser reads (a RecursionError would end the run, not just this reply)."""
    try:
        return json.loads(raw)
    except RecursionError:
        raise BadResponse(f"{what} answered JSON nested too deeply to read ({TOO_DEEP}): {raw[:40]!r}")
    except ValueError as exc:
        raise BadResponse(f"{what} answered something that is not JSON ({exc}): {raw[:60]!r}")


def loads_or_none(text: str) -> Optional[dict]:
    """json.loads for one message, through the decoder's raw_decode: once per token, loads' own checks and
    whitespace matching cost more than the C scanner itself. Raises BadResponse for JSON nested past what
    Python's parser reads (its recursion limit)."""
    if text[:1].isspace():
        text = text.lstrip()
    try:
        value, end = _DECODER.raw_decode(text)
    except RecursionError:
        raise BadResponse(f"a message nests JSON deeper than the client reads ({TOO_DEEP}): {text[:40]!r}")
    except ValueError:
        return None
    if end != len(text) and text[end:].strip():
        return None
    return value if isinstance(value, dict) else None
