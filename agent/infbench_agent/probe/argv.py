"""Editing a server's command line: one place that knows the flag spellings vLLM and SGLang accept."""

from __future__ import annotations

from typing import List


def drop_flag(argv: List[str], name: str) -> List[str]:
    """argv without `name` (`--x V`, `--x=V`, and the dotted `--x.key V` forms)."""
    out: List[str] = []
    skip = False
    for a in argv:
        if skip:
            skip = False
            continue
        if a == name or (a.startswith(name + ".") and "=" not in a):
            skip = True
            continue
        if a.startswith(name + "=") or a.startswith(name + "."):
            continue
        out.append(a)
    return out
