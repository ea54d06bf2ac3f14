"""Writes a generated file, or with --check says whether the file on disk is what its source gives."""
import os
import sys


def write_or_check(path: str, text: str, root: str, source: str, script: str) -> int:
    """`script --check`: 0 when `path` holds `text`, else 1 with how to regenerate it; otherwise writes it."""
    if "--check" in sys.argv:
        try:
            with open(path, encoding="utf-8") as f:
                same = f.read() == text
        except OSError:
            same = False
        if not same:
            print(f"{os.path.relpath(path, root)} differs from {source}: run `python3 {script}`", file=sys.stderr)
        return 0 if same else 1
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return 0
