"""Macro phase: the workloads — one module each in this package, found here. A module defines a Workload subclass
named WORKLOAD (macro/workloads/base.py); its flags join the macro command's (the option table's own rows stay in
options.py) and reach the controller through scripts/gen-agent-options.py. Adding a workload is adding its module."""
from __future__ import annotations

import argparse
import importlib
import pkgutil
from typing import Dict, List, Optional, Tuple, Type

from infbench_agent import events, options
from infbench_agent.macro.prompts import PromptSource
from infbench_agent.macro.workloads.base import Workload

_FOUND: Dict[str, Type[Workload]] = {}


def workloads() -> Dict[str, Type[Workload]]:
    """Every workload of the package by name, in the order they are offered (the default, random, first)."""
    if not _FOUND:
        found = []
        for module in pkgutil.iter_modules(__path__):
            if module.name == "base":
                continue
            cls = getattr(importlib.import_module(f"{__name__}.{module.name}"), "WORKLOAD", None)
            if cls is not None:
                found.append(cls)
        for cls in sorted(found, key=lambda c: (c.name != "random", c.claim_order, c.name)):
            _FOUND[cls.name] = cls
    return _FOUND


# The flags that choose a workload; each workload's own follow.
CHOOSING = (
    options.Option(
        "--dataset-name",
        "str",
        ("macro",),
        "where the prompts come from (default random; with --dataset-path alone, told from the file): "
        + "; ".join(f"{c.name}: {c.title}" for c in workloads().values()),
        choices=tuple(workloads()),
    ),
    options.Option(
        "--dataset-path",
        "str",
        ("macro",),
        "the dataset file on the server's host, e.g. ShareGPT_V3_unfiltered_cleaned_split.json",
        metavar="PATH",
    ),
)


# A remedy may name a workload's own flag.
events.WORKLOAD_REMEDY_FLAGS[:] = [o.flag for cls in workloads().values() for o in cls.options if o.flag not in events.REMEDY_FLAGS]


def option_rows() -> List[options.Option]:
    """The macro flags the workloads define: the choice of one, then each one's own."""
    return list(CHOOSING) + [o for cls in workloads().values() for o in cls.options]


def owner_of(option: options.Option) -> Optional[str]:
    return next((name for name, cls in workloads().items() if option in cls.options), None)


def told_from_file(path: str) -> str:
    """The workload whose file `path` is, from its first bytes."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            head = f.read(4096).lstrip()
    except OSError as exc:
        raise events.AgentError(
            "bad_prompts_file",
            f"cannot read the dataset file {path}: {exc.strerror}",
            "the path is read on the server's host; copy the file there first",
        )
    for name, cls in sorted(workloads().items(), key=lambda kv: kv[1].claim_order):
        if cls.takes_file and cls().claims(head):
            return name
    return "jsonl"


def choose(args: argparse.Namespace) -> Tuple[Workload, Optional[str]]:
    """The run's workload and file from --dataset-name, --dataset-path and --prompts-file, checked together as
    vllm/benchmarks/datasets.py's _ValidateDatasetArgs does (a generated workload takes no file), and no
    workload's own flag given to another."""
    path = args.dataset_path or args.prompts_file
    if args.dataset_path and args.prompts_file and args.dataset_path != args.prompts_file:
        raise events.AgentError("bad_arguments", "--prompts-file and --dataset-path name different files", "give one of them")
    name = args.dataset_name or ("jsonl" if args.prompts_file else told_from_file(path) if path else "random")
    if args.prompts_file and name != "jsonl":
        raise events.AgentError(
            "bad_arguments",
            f"--prompts-file is a JSONL of prompts, not --dataset-name {name}",
            f"for {name} pass {{0}} with {{1}}",
            [events.flag("--dataset-name", name), events.flag("--dataset-path", "FILE")],
        )
    workload = workloads()[name]()
    if path and not workload.takes_file:
        readers = [n for n, cls in workloads().items() if cls.takes_file]
        raise events.AgentError(
            "bad_arguments",
            f"{name} prompts take no file, got {path}",
            f"pass {{0}} with {{1}} (the workloads that read a file: {', '.join(readers)})",
            [events.flag("--dataset-name", "jsonl"), events.flag("--dataset-path", "FILE")],
        )
    if not path and workload.takes_file:
        raise events.AgentError(
            "bad_arguments",
            f"--dataset-name {name} needs --dataset-path FILE",
            "give its file on the server's host with {0}",
            [events.flag("--dataset-path", "FILE")],
        )
    for other, cls in workloads().items():
        if other == name:
            continue
        for o in cls.options:
            if o.flag != "--prompts-file" and getattr(args, o.dest, o.default) not in (o.default, None, 0, 0.0):
                raise events.AgentError(
                    "bad_arguments", f"{o.flag} applies to --dataset-name {other} only", f"this run's prompts are {name}"
                )
    workload.check(args, path)
    for o in workload.options:
        value = getattr(args, o.dest, None)
        if o.minimum is not None and isinstance(value, (int, float)) and value < o.minimum:
            raise events.AgentError("bad_arguments", f"{o.flag} must be at least {o.minimum:g}, got {value:g}", "")
    if "rate" not in workload.modes and (args.request_rate or args.search == "rate"):
        raise events.AgentError("bad_arguments", f"{name} runs at --concurrency levels, not request rates", "")
    if "concurrency" not in workload.modes and args.search == "concurrency":
        raise events.AgentError(
            "bad_arguments", f"{name} runs at request rates: search by rate", "pass {0}", [events.flag("--search", "rate")]
        )
    return workload, path


def source_from_json(d: dict) -> PromptSource:
    """A workload's prompt source as a worker process gets it (PromptSource.to_json names its workload)."""
    cls = workloads()[d["workload"]]
    return importlib.import_module(cls.__module__).source_from_json(d)
