"""Reading and editing a server's command line: one place that knows the flag spellings vLLM and SGLang accept."""

from __future__ import annotations

from typing import List, Optional, Tuple


def flag_value(argv: List[str], names: Tuple[str, ...]) -> Optional[str]:
    """The value of the first of `names` on a command line (`--x V` or `--x=V`)."""
    for i, a in enumerate(argv):
        for n in names:
            if a == n and i + 1 < len(argv):
                return argv[i + 1]
            if a.startswith(n + "="):
                return a.split("=", 1)[1]
    return None


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
