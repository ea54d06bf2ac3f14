"""The agent's versions, in syntax any Python 3 parses: the entry point reads them before the rest of the
agent is imported, so that an interpreter older than MIN_PYTHON gets a clear answer instead of a SyntaxError.

AGENT_VERSION is the product's version (package.json); test/python/test_events.py fails when they differ.
"""
import json
import os
import sys
import time

SCHEMA_VERSION = 1
AGENT_VERSION = "0.1.0"
# The oldest Python the agent runs on; test/python/test_min_python.py runs probe and macro on it.
MIN_PYTHON = (3, 8)


COMMANDS = ("probe", "macro", "micro", "profile", "collective", "server")


def refuse_old_python(argv):
    """Says hello (so the controller sees which Python ran), then why the run cannot go on; returns the exit code."""

    def emit(record):
        record.update({"v": SCHEMA_VERSION, "t": round(time.time(), 6)})
        sys.stdout.write(json.dumps(record, separators=(",", ":")) + "\n")
        sys.stdout.flush()

    command = next((a for a in argv if a in COMMANDS), "")
    have = "%d.%d.%d" % sys.version_info[:3]
    need = "%d.%d" % MIN_PYTHON
    emit(
        {
            "type": "hello",
            "agent_version": AGENT_VERSION,
            "command": command,
            "pid": os.getpid(),
            "python": have,
            "executable": sys.executable,
        }
    )
    emit(
        {
            "type": "error",
            "code": "python_too_old",
            "message": "The agent needs Python %s or newer; %s is %s." % (need, sys.executable, have),
            "hint": 'Pass a newer Python there with {0} (or set the target\'s "python" setting).',
            "remedies": [{"kind": "flag", "flag": "--python"}],
        }
    )
    emit({"type": "done", "ok": False})
    return 2
