"""Macro phase: repeated trials and service-level objectives.

A level run N times (--trials N) reports each figure as the mean over its trials, a 95% confidence interval
(Student's t with N - 1 degrees of freedom, the trials taken as independent draws of the level's figure) and
the coefficient of variation (sample standard deviation over the mean). An SLO (--slo) is judged on those
intervals: a load meets it when the whole interval is on the right side of the limit, breaks it when the whole
interval is on the wrong side, and is undecided (the spread too wide to decide) otherwise. With one trial the
figure is compared as it stands.
"""
from __future__ import annotations

import math
import re
from typing import Dict, List, Optional, Sequence

# Student's t 0.975 quantile for 1..30 degrees of freedom (two-sided 95%).
T_975 = (
    12.7062,
    4.3027,
    3.1824,
    2.7764,
    2.5706,
    2.4469,
    2.3646,
    2.3060,
    2.2622,
    2.2281,
    2.2010,
    2.1788,
    2.1604,
    2.1448,
    2.1314,
    2.1199,
    2.1098,
    2.1009,
    2.0930,
    2.0860,
    2.0796,
    2.0739,
    2.0687,
    2.0639,
    2.0595,
    2.0555,
    2.0518,
    2.0484,
    2.0452,
    2.0423,
)
Z_975 = 1.959964


def t_quantile_975(df: int) -> float:
    """Student's t 0.975 quantile; beyond 30 degrees of freedom the Cornish-Fisher expansion (error < 1e-4)."""
    if df < 1:
        raise ValueError("a confidence interval needs at least two trials")
    if df <= len(T_975):
        return T_975[df - 1]
    z = Z_975
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


def interval(values: Sequence[Optional[float]]) -> Optional[dict]:
    """Mean, 95% half-width, coefficient of variation and the trials' values; None without a value."""
    vals = [float(v) for v in values if isinstance(v, (int, float)) and math.isfinite(v)]
    if not vals:
        return None
    n = len(vals)
    mean = sum(vals) / n
    out = {"n": n, "mean": mean, "values": vals, "half_width": None, "cv": None, "sd": None}
    if n >= 2:
        sd = math.sqrt(sum((v - mean) ** 2 for v in vals) / (n - 1))
        out.update(sd=sd, half_width=t_quantile_975(n - 1) * sd / math.sqrt(n), cv=(sd / abs(mean)) if mean else None)
    return out


# The figures a trial summary repeats: every latency statistic vLLM reports, the throughputs and the goodput.
FIGURE = re.compile(r"^(mean|median|p\d+(?:\.\d+)?)_(ttft|tpot|itl|e2el)_ms$")
THROUGHPUTS = ("output_throughput", "request_throughput", "total_token_throughput", "request_goodput")


def trial_figures(summaries: Sequence[dict]) -> Dict[str, dict]:
    """Each figure's interval over the trials of one load (the level summaries of its trials)."""
    keys: List[str] = []
    for s in summaries:
        for k in s:
            if (FIGURE.match(k) or k in THROUGHPUTS) and k not in keys:
                keys.append(k)
    out: Dict[str, dict] = {}
    for k in keys:
        got = interval([s.get(k) for s in summaries])
        if got is not None:
            out[k] = got
    good = interval([good_share(s) for s in summaries])
    if good is not None:
        out["good_share"] = good
    return out


def good_share(summary: dict) -> Optional[float]:
    """The share of completed requests that met every --goodput SLO: vLLM's request_goodput over its
    request_throughput (both divide by the same duration)."""
    goodput, thr = summary.get("request_goodput"), summary.get("request_throughput")
    if not isinstance(goodput, (int, float)) or not isinstance(thr, (int, float)) or thr <= 0:
        return None
    return goodput / thr


# ---- SLOs


class Slo:
    """One objective: `ttft_p99<=2000` (ms), `tpot_mean<=50`, `goodput>=95%` (the share of requests meeting
    every --goodput SLO) or `goodput>=4` (request goodput, req/s)."""

    def __init__(self, text: str, key: str, op: str, limit: float, label: str, unit: str) -> None:
        self.text, self.key, self.op, self.limit, self.label, self.unit = text, key, op, limit, label, unit

    def as_dict(self) -> dict:
        return {"slo": self.text, "key": self.key, "op": self.op, "limit": self.limit, "label": self.label, "unit": self.unit}

    def limit_text(self) -> str:
        if self.unit == "ms":
            return f"{self.limit / 1000:g} s" if self.limit >= 1000 else f"{self.limit:g} ms"
        if self.unit == "%":
            return f"{self.limit * 100:g}%"
        return f"{self.limit:g} {self.unit}"


SLO_TERM = re.compile(r"^(ttft|tpot|itl|e2el|goodput)(?:_(p\d+(?:\.\d+)?|mean|median))?\s*(<=|>=)\s*([0-9.]+)\s*(ms|s|%)?$")
NAMES = {"ttft": "TTFT", "tpot": "TPOT", "itl": "ITL", "e2el": "E2EL"}


def parse_slo(text: Optional[str]) -> List[Slo]:
    """`ttft_p99<=2000,tpot_p99<=50,goodput>=95%` -> the objectives (latencies in ms, or with an s suffix)."""
    out: List[Slo] = []
    for part in (text or "").split(","):
        part = part.strip().lower()
        if not part:
            continue
        m = SLO_TERM.match(part)
        if not m:
            raise ValueError(
                f"bad SLO {part!r}: write METRIC_STAT<=MS (metric ttft, tpot, itl or e2el; stat p50, p90, p99, mean or "
                "median) or goodput>=PERCENT%, for example 'ttft_p99<=2000,tpot_p99<=50'"
            )
        metric, stat, op, value, unit = m.group(1), m.group(2), m.group(3), float(m.group(4)), m.group(5)
        if metric == "goodput":
            if op != ">=" or stat:
                raise ValueError(f"bad SLO {part!r}: goodput is held from below, for example goodput>=95%")
            if unit == "%":
                if not 0 < value <= 100:
                    raise ValueError(f"bad SLO {part!r}: a share of requests is above 0% and at most 100%")
                out.append(Slo(part, "good_share", ">=", value / 100.0, "goodput", "%"))
            else:
                out.append(Slo(part, "request_goodput", ">=", value, "goodput", "req/s"))
            continue
        if op != "<=":
            raise ValueError(f"bad SLO {part!r}: a latency is held from above, for example {metric}_p99<=2000")
        if unit == "%":
            raise ValueError(f"bad SLO {part!r}: a latency's limit is in ms (or s)")
        stat = stat or "p99"
        limit = value * 1000.0 if unit == "s" else value
        if not limit > 0:
            raise ValueError(f"bad SLO {part!r}: the limit must be above 0")
        out.append(Slo(part, f"{stat}_{metric}_ms", "<=", limit, f"{NAMES[metric]} {stat}", "ms"))
    return out


def percentiles_needed(slos: Sequence[Slo]) -> List[float]:
    """The percentiles the objectives name, so that the summaries report them."""
    out = []
    for s in slos:
        m = re.match(r"^p(\d+(?:\.\d+)?)_", s.key)
        if m:
            out.append(float(m.group(1)))
    return out


def judge(slo: Slo, figure: Optional[dict]) -> dict:
    """meets, breaks or undecided (the interval straddles the limit), with the figure that decided."""
    if figure is None:
        return {**slo.as_dict(), "verdict": "breaks", "why": "not measured (no request completed)"}
    mean, half = figure["mean"], figure.get("half_width") or 0.0
    low, high = mean - half, mean + half
    if slo.op == "<=":
        verdict = "meets" if high <= slo.limit else "breaks" if low > slo.limit else "undecided"
    else:
        verdict = "meets" if low >= slo.limit else "breaks" if high < slo.limit else "undecided"
    return {**slo.as_dict(), "verdict": verdict, "mean": mean, "half_width": figure.get("half_width"), "n": figure["n"]}


def judge_all(slos: Sequence[Slo], figures: Dict[str, dict]) -> dict:
    """A load's verdict on every objective: meets when all are met, breaks when any is broken, else undecided."""
    each = [judge(s, figures.get(s.key)) for s in slos]
    verdicts = {j["verdict"] for j in each}
    overall = "breaks" if "breaks" in verdicts else "undecided" if "undecided" in verdicts else "meets"
    return {"verdict": overall, "slos": each}


def figure_text(j: dict) -> str:
    """`TPOT p99 52.1 ms` or `TPOT p99 52.1 ± 1.3 ms` (a share as a percentage)."""
    if j.get("mean") is None:
        return f"{j['label']} {j.get('why', 'not measured')}"
    scale = 100.0 if j["unit"] == "%" else 1.0
    unit = "%" if j["unit"] == "%" else f" {j['unit']}"
    half = f" ± {j['half_width'] * scale:.3g}" if j.get("half_width") else ""
    return f"{j['label']} {j['mean'] * scale:.4g}{half}{unit}"
