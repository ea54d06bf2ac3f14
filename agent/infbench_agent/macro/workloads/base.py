"""Macro phase: what a workload is — where a run's prompts come from, the flags that shape them, and what a level's
result says of them. Each workload is one module of this package; the package finds them (workloads/__init__.py)."""
from __future__ import annotations

import argparse
import random
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

from infbench_agent.http import Endpoint
from infbench_agent.options import Option


@dataclass
class Context:
    """What a workload may read while it prepares its prompts: the run's flags, the server and the planned levels."""

    args: argparse.Namespace
    endpoint: Endpoint
    model: str
    path: Optional[str]
    # The loads the run plans ({"max_concurrency"} or {"request_rate"}), and how many requests a load sends.
    levels: List[dict]
    requests_of: Callable[[Optional[int], Optional[float]], Optional[int]]


@dataclass
class Prepared:
    """A workload's prompts for a run: the items of a file (or None), the PromptMaker's options for prompts it makes,
    and what the result's `prompts` section says of them."""

    file_prompts: Optional[List[dict]] = None
    maker_options: Dict[str, Any] = field(default_factory=dict)
    info: Dict[str, Any] = field(default_factory=dict)


class Workload:
    """One kind of prompts. A subclass sets the class attributes and overrides what it does differently; one instance
    serves one run."""

    # Its --dataset-name, and how the front ends offer it.
    name = ""
    title = ""
    detail = ""
    # Its own flags (macro only): the run refuses them with another workload.
    options: Tuple[Option, ...] = ()
    # Whether it reads a file on the host (--dataset-path).
    takes_file = False
    # The loads it runs at: closed-loop concurrency, request rates, or both.
    modes: Tuple[str, ...] = ("concurrency", "rate")
    # When only --dataset-path is given, workloads are asked in this order whether the file is theirs.
    claim_order = 50

    def claims(self, head: str) -> bool:
        """Whether a file that starts with `head` (its first 4 KiB, stripped) is one of this workload's."""
        return False

    def check(self, args: argparse.Namespace, path: Optional[str]) -> None:
        """Refuses its own flags' bad values (an AgentError naming the flag)."""

    def loads(
        self, args: argparse.Namespace, path: Optional[str], concurrencies: List[int], rates: List[float]
    ) -> Tuple[List[int], List[float]]:
        """The run's loads: as given, unless the workload sets its own (a trace's own pace)."""
        return concurrencies, rates

    def requests(self, args: argparse.Namespace, planned: Optional[int], rate: Optional[float]) -> Optional[int]:
        """Requests of a level the run would plan `planned` for (None: a closed loop of seconds)."""
        return planned

    def period(self) -> int:
        """A level's request numbers start at a multiple of this: a workload whose n-th request is its n-th item
        keeps that order."""
        return 1

    def arrivals(self, total: int, rate: float, rng: random.Random) -> Optional[List[float]]:
        """A rate level's send times (seconds from its start), or None for vLLM's gamma arrivals."""
        return None

    def prepare(self, ctx: Context) -> Prepared:
        return Prepared()

    def level_meta(self, args: argparse.Namespace, prepared: Prepared) -> Dict[str, Any]:
        """What each level's result says of its prompts (the findings read it)."""
        return {"input_len": args.input_len}

    def level_extra(self, args: argparse.Namespace, total: Optional[int]) -> Tuple[Optional[int], Dict[str, Any]]:
        """A level's requests and what its meta adds, once the run knows its planned count (multi-turn: conversations)."""
        return total, {}
