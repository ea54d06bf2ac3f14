"""Dispatches agent subcommands. Each phase lives in its own package; PyTorch is imported only inside the phases that need it."""
from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback

from typing import List

from infbench_agent import controller, events, options, version

# Each command's module, with `add_arguments(parser)` and `run(args) -> int`: its package's `command` module, but
# collective's, which lives beside micro's all-reduce.
COMMAND_MODULES = {
    "probe": "infbench_agent.probe.command",
    "macro": "infbench_agent.macro.command",
    "micro": "infbench_agent.micro.command",
    "profile": "infbench_agent.profile.command",
    "collective": "infbench_agent.micro.collective",
    "server": "infbench_agent.server.command",
}
COMMANDS = {name: COMMAND_MODULES[name] for name in version.COMMANDS}


def command_options(command: str) -> List[options.Option]:
    """Every flag of a command: the option table's rows, then those its own package defines (`own_options`: the
    macro workloads')."""
    module = importlib.import_module(COMMAND_MODULES[command])
    return [*options.options_of(command), *getattr(module, "own_options", list)()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="infbench-agent")
    parser.add_argument(
        "--heartbeat-timeout",
        type=float,
        default=None,
        metavar="S",
        help="stop when stdin carries no line for S seconds or closes (the controller keeps it alive)",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    modules = {}
    for name, module_name in COMMANDS.items():
        module = importlib.import_module(module_name)
        modules[name] = module
        module.add_arguments(sub.add_parser(name))
    args = parser.parse_args(argv)
    if args.heartbeat_timeout:
        controller.start(args.heartbeat_timeout)
    events.emit(
        events.HELLO,
        agent_version=events.AGENT_VERSION,
        command=args.command,
        pid=os.getpid(),
        python=sys.version.split()[0],
        executable=sys.executable,
    )
    try:
        code = int(modules[args.command].run(args) or 0)
    except events.AgentError as exc:
        events.error(exc.code, exc.message, exc.hint, exc.remedies)
        code = 2
    except KeyboardInterrupt:
        events.error("cancelled", "cancelled")
        code = 130
    except Exception as exc:  # noqa: BLE001 - report any crash as an event, with its traceback on stderr
        traceback.print_exc()
        events.error("crash", f"{type(exc).__name__}: {exc}", "see the agent's stderr in the run log")
        code = 1
    events.emit(events.DONE, ok=code == 0)
    return code
