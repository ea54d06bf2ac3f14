"""Macro phase: which levels a run visits, and the search for the highest load that meets the SLOs.

A sweep visits its loads in the order given; a search (--search concurrency|rate) starts at the first load and
doubles it while the SLOs are met (the bracket), then bisects between the highest load that met them and the
lowest that did not, until the two are one level apart (concurrency: 1 request; rate: 5% of the rate). Each
load runs --trials times (trial k's prompts are drawn from the run's --seed and request numbers no other trial
uses, so the trials differ and the seed repeats the whole run), and the verdict of a load is taken on the
intervals of its trials (macro/trials.py): a load whose interval straddles a limit is undecided, and the search
counts it as not shown to meet.
"""
from __future__ import annotations

import argparse
import math
from typing import Any, Dict, Iterator, List, Optional

from infbench_agent import events
from infbench_agent.macro.trials import Slo, figure_text, judge_all, trial_figures

# A rate search stops when the bracket is this narrow against its upper end.
RATE_RESOLUTION = 0.05
DEFAULT_MAX = {"concurrency": 1024, "rate": 256.0}


def load_text(mode: str, value: float) -> str:
    return f"c={int(value)}" if mode == "concurrency" else f"{value:g} req/s"


class SloSearch:
    """Bracket by doubling, then bisect; `next_value` says the next load, or None when the answer is found."""

    def __init__(self, mode: str, start: float, maximum: Optional[float]) -> None:
        self.mode = mode
        self.start = start
        self.maximum = float(maximum) if maximum else DEFAULT_MAX[mode]
        if self.maximum < start:
            raise ValueError(f"the search's maximum ({self.maximum:g}) is below its first load ({start:g})")
        # The highest load shown to meet every SLO, and the lowest that did not.
        self.lo: Optional[float] = None
        self.hi: Optional[float] = None
        self.bracket: Optional[List[float]] = None
        self.visited: List[dict] = []

    def next_value(self) -> Optional[float]:
        if not self.visited:
            return self.start
        if self.hi is None:
            last = self.visited[-1]["value"]
            if last >= self.maximum:
                return None
            nxt = min(self.maximum, last * 2)
            return float(int(nxt)) if self.mode == "concurrency" else nxt
        if self.lo is None:
            return None
        if self.mode == "concurrency":
            if self.hi - self.lo <= 1:
                return None
            return float((int(self.lo) + int(self.hi)) // 2)
        if self.hi - self.lo <= RATE_RESOLUTION * self.hi:
            return None
        return round((self.lo + self.hi) / 2, 3)

    def record(self, value: float, verdict: str) -> str:
        step = "bracket" if self.hi is None else "bisect"
        self.visited.append({"value": value, "verdict": verdict, "step": step})
        if verdict == "meets":
            self.lo = value if self.lo is None else max(self.lo, value)
        else:
            self.hi = value if self.hi is None else min(self.hi, value)
            if self.bracket is None:
                self.bracket = [self.lo if self.lo is not None else 0, value]
        return step


class LevelSchedule:
    """The loads a run visits, each `trials` times, fed back each trial's summary (`record`) so that the
    search can choose the next load and each load's last trial carries the trials' intervals and verdict."""

    def __init__(self, loads: List[dict], trials: int, slos: List[Slo], search: Optional[SloSearch], template: dict) -> None:
        self.loads, self.trials, self.slos, self.search, self.template = loads, max(1, trials), slos, search, template
        self.current: List[dict] = []
        self.verdicts: List[dict] = []

    def planned(self) -> List[dict]:
        """The loads known before the run (a search: its first and its largest), for sizing a dataset."""
        if self.search is None:
            return self.loads
        return [self.load(self.search.start), self.load(self.search.maximum)]

    def load(self, value: float) -> dict:
        key = "max_concurrency" if self.search and self.search.mode == "concurrency" else "request_rate"
        return {**self.template, key: int(value) if key == "max_concurrency" else value}

    def __iter__(self) -> Iterator[dict]:
        index = 0
        while True:
            if self.search is not None:
                value = self.search.next_value()
                if value is None:
                    return
                load = self.load(value)
            elif index < len(self.loads):
                load = self.loads[index]
            else:
                return
            index += 1
            self.current = []
            for k in range(self.trials):
                yield {**load, **({"trial": k + 1, "trials": self.trials} if self.trials > 1 else {})}

    def record(self, summary: dict) -> None:
        """One trial's final summary; the last trial of a load gets the intervals and the SLO verdict."""
        self.current.append(summary)
        if len(self.current) < self.trials:
            return
        figures = trial_figures(self.current)
        if self.trials > 1:
            summary["trial_stats"] = {
                k: {f: v[f] for f in ("n", "mean", "half_width", "cv", "values")} for k, v in figures.items() if v.get("n")
            }
        if not self.slos:
            return
        value = summary.get("request_rate") if summary.get("request_rate") is not None else summary.get("max_concurrency")
        mode = "rate" if summary.get("request_rate") is not None else "concurrency"
        verdict = judge_all(self.slos, figures)
        if summary.get("partial") or summary.get("cancelled"):
            verdict = {**verdict, "verdict": "undecided", "why": "the level was cut short"}
        load = float(value or 0)
        step = self.search.record(load, verdict["verdict"]) if self.search is not None else "sweep"
        verdict["step"] = step
        verdict["load"] = load_text(mode, load)
        verdict["value"] = value
        summary["slo"] = verdict
        self.verdicts.append(verdict)
        events.log(f"{verdict['load']} ({step}): {verdict_text(verdict)}")

    def result(self) -> Optional[dict]:
        """What the run found: the answer line, the bracket and every load's verdict."""
        if not self.slos:
            return None
        mode = self.search.mode if self.search else None
        out: Dict[str, object] = {
            "slos": [s.as_dict() for s in self.slos],
            "search": mode,
            "trials": self.trials,
            "visited": self.verdicts,
            "line": answer_line(self.slos, self.verdicts, self.search),
        }
        if self.search is not None:
            # Whole requests for a concurrency search (12, not 12.0).
            as_load = (lambda v: None if v is None else int(v)) if mode == "concurrency" else (lambda v: v)
            out.update(
                {
                    "max": as_load(self.search.maximum),
                    "bracket": [as_load(v) for v in self.search.bracket] if self.search.bracket else None,
                    "highest_meeting": as_load(self.search.lo),
                    "lowest_not_meeting": as_load(self.search.hi),
                    "resolution": 1 if mode == "concurrency" else f"{RATE_RESOLUTION:.0%} of the rate",
                }
            )
        return out


def verdict_text(v: dict) -> str:
    """`meets TTFT p99 812 ms ≤ 2 s and TPOT p99 41.2 ms ≤ 50 ms`, `breaks TPOT p99 (52.1 ms > 50 ms)`, or
    `spread too wide to decide on TPOT p99 (49 ± 3 ms against 50 ms)`."""
    sign = {"<=": "≤", ">=": "≥"}
    if v["verdict"] == "meets":
        return "meets " + " and ".join(f"{figure_text(j)} {sign[j['op']]} {limit(j)}" for j in v["slos"])
    if v.get("why"):
        return f"undecided: {v['why']}"
    if v["verdict"] == "breaks":
        broken = [j for j in v["slos"] if j["verdict"] == "breaks"]
        return "breaks " + " and ".join(f"{j['label']} ({figure_text(j)} against {limit(j)})" for j in broken)
    wide = [j for j in v["slos"] if j["verdict"] == "undecided"]
    return "spread too wide to decide on " + " and ".join(f"{j['label']} ({figure_text(j)} against {limit(j)})" for j in wide)


def limit(j: dict) -> str:
    return Slo(j["slo"], j["key"], j["op"], j["limit"], j["label"], j["unit"]).limit_text()


def objectives_text(slos: List[Slo]) -> str:
    sign = {"<=": "≤", ">=": "≥"}
    return " and ".join(f"{s.label} {sign[s.op]} {s.limit_text()}" for s in slos)


def answer_line(slos: List[Slo], verdicts: List[dict], search: Optional[SloSearch]) -> str:
    """One line: `c=24 meets TTFT p99 ≤ 2 s and TPOT p99 ≤ 50 ms; c=25 breaks TPOT p99 (…)`."""
    if not verdicts:
        return "no load finished: nothing was judged against the SLOs"
    wanted = objectives_text(slos)
    met = [v for v in verdicts if v["verdict"] == "meets"]
    best = max(met, key=lambda v: float(v["value"])) if met else None
    above = [v for v in verdicts if v["verdict"] != "meets" and (best is None or float(v["value"]) > float(best["value"]))]
    nearest = min(above, key=lambda v: float(v["value"])) if above else None

    if best is None:
        first = min(verdicts, key=lambda v: float(v["value"]))
        already = "already " if first["verdict"] == "breaks" else ": "
        return f"no load is shown to meet {wanted}: {first['load']} {already}{verdict_text(first)}".replace(" : ", ": ")
    line = f"{best['load']} meets {wanted}"
    if nearest is not None:
        line += f"; {nearest['load']}{' ' if nearest['verdict'] == 'breaks' else ': '}{verdict_text(nearest)}"
    elif search is not None:
        line += f"; the search stopped at its maximum ({best['load']}): raise --search-max to look further"
    else:
        line += " (the highest load run)"
    return line


def level_schedule(args: argparse.Namespace, concurrencies: List[int], rates: List[float], objectives: List[Slo]) -> LevelSchedule:
    """The loads to visit: the sweep as given, or a search for the highest load that meets --slo; each --trials times."""
    if args.trials < 1:
        raise events.AgentError(
            "bad_arguments", f"--trials must be at least 1, got {args.trials}", "set it to 1 or more: {0}", [events.flag("--trials", "3")]
        )
    if any(o.label == "goodput" for o in objectives) and not args.goodput:
        # vllm/benchmarks/serve.py counts a request as good when it meets every --goodput limit (ttft, tpot, e2el).
        raise events.AgentError(
            "bad_arguments",
            "a goodput objective needs the limits a good request meets",
            "give them with {0} and the objective with {1}",
            [events.flag("--goodput", '"ttft:2000 tpot:50"'), events.flag("--slo", '"goodput>=95%"')],
        )
    template_rate: Dict[str, Any] = {"max_concurrency": args.max_concurrency, "request_rate": None, "burstiness": args.burstiness}
    loads: List[Dict[str, Any]] = [{"max_concurrency": c, "request_rate": None} for c in concurrencies]
    loads = loads or [{**template_rate, "request_rate": r} for r in rates]
    if not args.search:
        return LevelSchedule(loads, args.trials, objectives, None, {})
    if not objectives:
        raise events.AgentError(
            "bad_arguments",
            "--search needs the objectives to meet",
            "give them with {0}",
            [events.flag("--slo", '"ttft_p99<=2000,tpot_p99<=50"')],
        )
    if args.search == "concurrency" and rates:
        raise events.AgentError("bad_arguments", "--search concurrency runs closed-loop levels, not --request-rate", "")
    if args.search == "rate" and not rates:
        rates = [1.0]
    start = float(concurrencies[0]) if args.search == "concurrency" else float(rates[0])
    if math.isinf(start):
        raise events.AgentError(
            "bad_arguments",
            "a rate search starts from a finite --request-rate",
            "start it from a finite rate: {0}",
            [events.flag("--request-rate", "1")],
        )
    try:
        search = SloSearch(args.search, start, args.search_max)
    except ValueError as exc:
        raise events.AgentError("bad_arguments", str(exc), "")
    template = {"max_concurrency": None, "request_rate": None} if args.search == "concurrency" else template_rate
    return LevelSchedule(loads, args.trials, objectives, search, template)
