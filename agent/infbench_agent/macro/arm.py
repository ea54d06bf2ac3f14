"""Macro phase: what every driver of a plan does first (the closed and open loops in drive.py, the
multi-turn conversations in conversations.py), in a module of its own so that neither imports the other for it."""
from __future__ import annotations

import time
from typing import Callable

from infbench_agent.macro.client import Engine


def arm(plan: dict, engine: Engine, record: Callable[[dict], None]) -> None:
    """Hands the engine the plan's record callback and its bound on a silent stream (it travels in the plan, to
    worker processes too), then waits for the plan's start."""
    engine.on_record = record
    if plan.get("stall_timeout"):
        engine.stall_timeout = plan["stall_timeout"]
    start_at = plan["start_at"]
    while time.monotonic() < start_at:
        time.sleep(min(0.01, max(0.0, start_at - time.monotonic())))
