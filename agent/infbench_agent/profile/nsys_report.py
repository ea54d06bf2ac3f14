"""Reads an Nsight Systems report exported to SQLite and names the NVTX module of every GPU kernel.

    python3 -m infbench_agent.profile.nsys_report REPORT.sqlite [--step-range REGEX] [--kineto FOLDER]

Writes one JSON object per line: a header, then every kernel, copy and memset in start order, each
with its decode step and its module path, then a summary. Standard library only (`sqlite3`).
With --kineto, writes the report as Kineto traces instead, which `infbench analyze` reads as it reads
a torch profile (the kernel categories, top kernels and launch statistics of the same steps).

The report must come from `nsys profile --trace=cuda,nvtx --cuda-graph-trace=node` and
`nsys export --type sqlite`. Nsight Systems 2025.3 writes (checked against real exports):
CUPTI_ACTIVITY_KIND_KERNEL / _MEMCPY / _MEMSET (start, end, deviceId, streamId, globalPid,
correlationId, graphNodeId; kernel names as StringIds ids in demangledName), CUPTI_ACTIVITY_KIND_RUNTIME
(start, globalTid, correlationId, nameId), NVTX_EVENTS (push/pop ranges, eventType 59, and start/end
ranges, eventType 60: start, end, text or textId, globalTid) and CUDA_GRAPH_NODE_EVENTS (start,
globalTid, graphNodeId, originalGraphNodeId).

Attribution:
- a kernel launched eagerly belongs to the innermost NVTX range open on its launching thread when the
  launch call (the runtime record of its correlationId) began;
- a kernel replayed from a CUDA graph carries the node of the instantiated graph (graphNodeId); that
  node's creation event names the node it was instantiated from (originalGraphNodeId), created during
  stream capture, and the kernel belongs to the innermost range open on the capturing thread then;
- a kernel with no such range is reported with module null: counted, never guessed.
Ranges whose text matches --step-range (by default vLLM's step annotations and `decode_step`) are steps, not
modules, and those of vLLM's steps that take new requests are prefill, not decode steps: a kernel's step is the step
range around its launch call (for a replayed kernel, its cudaGraphLaunch). Where the report has no
step range, each cudaGraphLaunch starts a step. Where the server's CUDA profiler switch ran
(cudaProfilerStart/Stop at /start_profile and /stop_profile), only launches between them count: the
report is recorded from the server's start, so that the ranges open while graphs were captured at
start-up are in it (`--capture-range=cudaProfilerApi` keeps the graph nodes but drops those ranges).

Memory holds the NVTX ranges of one thread at a time (a stack), one entry per launch call and per
captured graph node; kernels stream out as they are read.
"""
from __future__ import annotations

import argparse
import ast
import json
import os
import re
import sqlite3
import sys
import urllib.request
from typing import Any, Dict, Iterator, List, Optional, Tuple

SCHEMA_VERSION = 1
# The step ranges: vLLM's CUDA profiler mode wraps every engine step in an NVTX range named by its step
# annotation (vllm/v1/worker/gpu_worker.py annotate_profile; CudaProfilerWrapper.annotate_context_manager in
# vllm/profiler/wrapper.py is torch.cuda.nvtx.range): execute_new_N_cached_M (0.11-0.25),
# execute_context_N(T)_generation_M(T) (0.26+); and `decode_step`, this project's own loops' marker.
# Bounded counts ({1,9}): the pattern travels on as the Kineto step annotation, where unbounded quantifiers are refused.
DEFAULT_STEP_RANGE = (
    r"^(?:decode_step\b|execute_new_\d{1,9}_cached_\d{1,9}|execute_context_\d{1,9}\(\d{1,9}\)_generation_\d{1,9}\(\d{1,9}\))"
)
# A vLLM step that takes new requests runs their prefill: a step, so never a module, but not a decode step
# (its kernels count outside the decode steps, as the torch profile's breakdown keeps prefill apart).
PREFILL_STEP = re.compile(r"^(?:execute_new_[1-9]\d*_cached_|execute_context_[1-9]\d*\()")
# NVTX_EVENTS.eventType for ranges (ENUM_NSYS_EVENT_TYPE): NvtxPushPopRange, NvtxStartEndRange.
RANGE_EVENT_TYPES = (59, 60)
ACTIVITY_TABLES = (
    ("kernel", "CUPTI_ACTIVITY_KIND_KERNEL"),
    ("memcpy", "CUPTI_ACTIVITY_KIND_MEMCPY"),
    ("memset", "CUPTI_ACTIVITY_KIND_MEMSET"),
)
REQUIRED = {
    "CUPTI_ACTIVITY_KIND_KERNEL": (
        "start",
        "end",
        "deviceId",
        "streamId",
        "globalPid",
        "correlationId",
        "demangledName",
    ),
    "CUPTI_ACTIVITY_KIND_RUNTIME": ("start", "globalTid", "correlationId", "nameId"),
    "StringIds": ("id", "value"),
}
MODULE_TEXT = re.compile(r"^\{'Module': '([^']*)'")


class ReportError(Exception):
    """The file is not an Nsight Systems SQLite export this reader can use; the message says what to do."""


def module_name(text: str) -> str:
    """The module path of a range: SGLang's and vLLM's layerwise hooks write a dict {'Module': path, ...}."""
    m = MODULE_TEXT.match(text)
    if m:
        return m.group(1)
    if text.startswith("{") and "Module" in text:
        try:
            value = ast.literal_eval(text)
            if isinstance(value, dict) and isinstance(value.get("Module"), str):
                return value["Module"]
        except (ValueError, SyntaxError):
            pass
    return text


def _is_output_marker(text: str) -> bool:
    # The hooks push and pop an empty "(output)" range after each forward: never around a launch.
    return text.startswith("{") and "'Outputs'" in text and "'Inputs'" not in text


class NsysReport:
    def __init__(self, path: str, step_range: str = DEFAULT_STEP_RANGE) -> None:
        self.path = path
        try:
            # Read-only, so that a report being written elsewhere is never changed; the path quoted for the URI ('#', '?', spaces).
            self.db = sqlite3.connect(f"file:{urllib.request.pathname2url(os.path.abspath(path))}?mode=ro", uri=True)
            tables = {r[0] for r in self.db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        except sqlite3.DatabaseError as err:
            raise ReportError(
                f"{path} is not an SQLite database ({err}). Export the report with "
                f"`nsys export --type sqlite -o REPORT.sqlite REPORT.nsys-rep` and give the .sqlite file."
            ) from err
        self.tables = tables
        self.columns: Dict[str, List[str]] = {}
        for table in tables:
            self.columns[table] = [r[1] for r in self.db.execute(f'PRAGMA table_info("{table}")')]
        for table, cols in REQUIRED.items():
            if table not in tables:
                hint = (
                    "it holds no CUDA kernels: profile with --trace=cuda"
                    if table.startswith("CUPTI")
                    else "it is not an Nsight Systems export"
                )
                raise ReportError(f"{path} has no {table} table: {hint}.")
            missing = [c for c in cols if c not in self.columns[table]]
            if missing:
                raise ReportError(
                    f"{path}: {table} lacks the columns {', '.join(missing)}; this reader knows the exports of "
                    f"Nsight Systems 2025.3. Export again with that version, or report the version that wrote it."
                )
        self.step_re = re.compile(step_range)
        self.has_nvtx = "NVTX_EVENTS" in tables
        self.has_nodes = "CUDA_GRAPH_NODE_EVENTS" in tables
        self.graphed_without_nodes = False
        if "graphNodeId" in self.columns["CUPTI_ACTIVITY_KIND_KERNEL"] and not self.has_nodes:
            row = self.db.execute("SELECT 1 FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE graphNodeId IS NOT NULL LIMIT 1").fetchone()
            self.graphed_without_nodes = row is not None

    # --- NVTX sweep -------------------------------------------------------------------------------

    def _range_rows(self) -> str:
        text = "COALESCE(n.text, s.value)" if "textId" in self.columns.get("NVTX_EVENTS", []) else "n.text"
        join = "LEFT JOIN StringIds s ON s.id = n.textId" if "textId" in self.columns.get("NVTX_EVENTS", []) else ""
        types = ",".join(str(t) for t in RANGE_EVENT_TYPES)
        return (
            f"SELECT n.globalTid AS tid, n.start AS t, 0 AS kind, n.end AS e, {text} AS text, NULL AS key "
            f"FROM NVTX_EVENTS n {join} WHERE n.eventType IN ({types}) AND n.end IS NOT NULL"
        )

    def _sweep(self, points_sql: str) -> Iterator[Tuple[Any, int, Optional[str], Optional[int]]]:
        """For each point (tid, t, key), the innermost module range open on that thread then, and the step range's number."""
        sql = points_sql
        if self.has_nvtx:
            # Ranges sort before points of the same time (kind 0 < 1): a launch at a range's first tick is inside it.
            sql = f"{self._range_rows()} UNION ALL {points_sql}"
        sql += " ORDER BY tid, t, kind, e DESC"
        stack: List[Tuple[int, str]] = []
        step_stack: List[Tuple[int, Optional[int]]] = []
        tid = None
        for row_tid, t, kind, end, text, key in self.db.execute(sql):
            if row_tid != tid:
                tid = row_tid
                stack = []
                step_stack = []
            while stack and stack[-1][0] < t:
                stack.pop()
            while step_stack and step_stack[-1][0] < t:
                step_stack.pop()
            if kind == 0:
                text = text or ""
                if self.step_re.search(text):
                    self._steps_seen += 1
                    step_stack.append((end, None if PREFILL_STEP.match(text) else self._steps_seen - 1))
                elif not _is_output_marker(text):
                    stack.append((end, text))
                continue
            yield key, t, (module_name(stack[-1][1]) if stack else None), (step_stack[-1][1] if step_stack else None)

    # --- records ---------------------------------------------------------------------------------

    def records(self) -> Iterator[Dict[str, Any]]:
        self._steps_seen = 0
        pid_of_tid = "(r.globalTid >> 24)"
        # Every launch call that has a GPU activity: its module and step.
        launch_points = (
            "SELECT r.globalTid AS tid, r.start AS t, 1 AS kind, NULL AS e, NULL AS text, "
            f"({pid_of_tid} << 32) | r.correlationId AS key FROM CUPTI_ACTIVITY_KIND_RUNTIME r "
            "WHERE r.correlationId IN (" + " UNION ".join(f"SELECT correlationId FROM {t}" for _, t in self._activity_tables()) + ")"
        )
        graph_launches: Dict[int, bool] = {}
        graph_name_ids = [
            r[0] for r in self.db.execute("SELECT id FROM StringIds WHERE value LIKE 'cudaGraphLaunch%' OR value LIKE 'cuGraphLaunch%'")
        ]
        if graph_name_ids:
            ids = ",".join(str(i) for i in graph_name_ids)
            for (key,) in self.db.execute(
                f"SELECT ({pid_of_tid} << 32) | r.correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME r WHERE r.nameId IN ({ids})"
            ):
                graph_launches[key] = True
        launch: Dict[int, Tuple[Optional[str], Optional[int], int]] = {}
        for key, t, module, step in self._sweep(launch_points):
            launch[key] = (module, step, t)
        windows = self._profiler_windows()
        steps_from_ranges = self._steps_seen
        # Captured graph nodes: the ranges open when each was created.
        captured: Dict[int, Optional[str]] = {}
        original: Dict[int, int] = {}
        if self.has_nodes:
            for node, orig in self.db.execute(
                "SELECT graphNodeId, originalGraphNodeId FROM CUDA_GRAPH_NODE_EVENTS WHERE originalGraphNodeId IS NOT NULL"
            ):
                original[node] = orig
            node_points = (
                "SELECT globalTid AS tid, start AS t, 1 AS kind, NULL AS e, NULL AS text, graphNodeId AS key "
                "FROM CUDA_GRAPH_NODE_EVENTS WHERE originalGraphNodeId IS NULL"
            )
            self._steps_seen = 0
            for key, _t, module, _step in self._sweep(node_points):
                captured[key] = module
        step_source = "nvtx-range" if steps_from_ranges else ("graph-launch" if graph_launches else "none")
        yield {
            "type": "nsys-header",
            "version": SCHEMA_VERSION,
            "file": self.path,
            "stepSource": step_source,
            "stepRange": self.step_re.pattern,
            "nvtx": self.has_nvtx,
            "graphNodes": self.has_nodes,
            # The server's CUDA profiler switch (cudaProfilerStart/Stop) bounds the steps kept.
            "profilerWindows": len(windows),
            "exporter": self._meta("EXPORT_VERSION") or self._meta("NSYS_VERSION"),
            "devices": self._devices(),
        }
        counts = {
            "kernels": 0,
            "graphed": 0,
            "attributed": 0,
            "unattributed": 0,
            "outsideSteps": 0,
            "noLaunchRecord": 0,
            "noCaptureNode": 0,
            "replayedWithoutRange": 0,
        }
        steps_used = set()
        launch_steps: Dict[int, int] = {}
        for kind, row in self._activities():
            start, end, dev, stream, gpid, corr, node, name = row
            key = ((gpid >> 24) << 32) | corr if gpid is not None and corr is not None else None
            at_launch = launch.get(key) if key is not None else None
            graphed = node is not None
            if graphed:
                orig = original.get(node)
                module = captured.get(orig) if orig is not None else None
                if orig is None or orig not in captured:
                    counts["noCaptureNode"] += 1
            else:
                module = at_launch[0] if at_launch else None
            if at_launch is None:
                counts["noLaunchRecord"] += 1
            step = at_launch[1] if at_launch else None
            if windows and not (at_launch and any(a <= at_launch[2] <= b for a, b in windows)):
                step = None
            elif step_source == "graph-launch" and key is not None and key in graph_launches:
                step = launch_steps.setdefault(key, len(launch_steps))
            elif step_source == "graph-launch" and launch_steps:
                # An eager kernel after a replay (the sampler) joins that replay's step.
                step = len(launch_steps) - 1
            counts["kernels"] += 1
            counts["graphed"] += graphed
            counts["attributed" if module is not None else "unattributed"] += 1
            counts["outsideSteps"] += step is None
            if step is not None:
                steps_used.add(step)
                if graphed and module is None and original.get(node) in captured:
                    counts["replayedWithoutRange"] += 1
            yield {
                "type": kind,
                "start": start,
                "end": end,
                "name": name,
                "device": dev,
                "stream": stream,
                "pid": (gpid >> 24) & 0xFFFFFF if gpid is not None else None,
                "graphed": graphed,
                "correlation": corr,
                "step": step,
                "module": module,
            }
        yield {
            "type": "nsys-summary",
            **counts,
            "steps": len(steps_used),
        }

    def _profiler_windows(self) -> List[Tuple[int, float]]:
        """Times between cudaProfilerStart and cudaProfilerStop calls (any process: SGLang calls them on its first rank only)."""
        rows = self.db.execute(
            "SELECT r.start, s.value FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId "
            "WHERE s.value LIKE 'cudaProfilerStart%' OR s.value LIKE 'cudaProfilerStop%' OR s.value LIKE 'cuProfilerStart%' "
            "OR s.value LIKE 'cuProfilerStop%' ORDER BY r.start"
        ).fetchall()
        windows: List[Tuple[int, float]] = []
        opened: Optional[int] = None
        for t, name in rows:
            if "Start" in name:
                opened = t if opened is None else opened
            elif opened is not None:
                windows.append((opened, t))
                opened = None
        if opened is not None:
            windows.append((opened, float("inf")))
        return windows

    def _activity_tables(self) -> List[Tuple[str, str]]:
        return [(k, t) for k, t in ACTIVITY_TABLES if t in self.tables and "correlationId" in self.columns[t]]

    def _activities(self) -> Iterator[Tuple[str, Tuple[Any, ...]]]:
        parts = []
        for kind, table in self._activity_tables():
            cols = self.columns[table]
            node = "a.graphNodeId" if "graphNodeId" in cols else "NULL"
            if kind == "kernel":
                name = "(SELECT value FROM StringIds WHERE id = a.demangledName)"
            elif kind == "memcpy":
                name = (
                    "'Memcpy ' || COALESCE((SELECT label FROM ENUM_CUDA_MEMCPY_OPER WHERE id = a.copyKind), 'copy')"
                    if "ENUM_CUDA_MEMCPY_OPER" in self.tables and "copyKind" in cols
                    else "'Memcpy'"
                )
            else:
                name = "'Memset'"
            parts.append(
                f"SELECT '{kind}', a.start, a.end, a.deviceId, a.streamId, a.globalPid, a.correlationId, {node}, {name} FROM {table} a"
            )
        for row in self.db.execute(" UNION ALL ".join(parts) + " ORDER BY 2"):
            yield row[0], row[1:]

    def _meta(self, name: str) -> Optional[str]:
        for table in ("META_DATA_EXPORT", "META_DATA_CAPTURE"):
            if table in self.tables:
                row = self.db.execute(f"SELECT value FROM {table} WHERE name = ?", (name,)).fetchone()
                if row:
                    return str(row[0])
        return None

    def _devices(self) -> List[Dict[str, Any]]:
        if "TARGET_INFO_GPU" not in self.tables:
            return []
        return [{"id": r[0], "name": r[1]} for r in self.db.execute("SELECT id, name FROM TARGET_INFO_GPU ORDER BY id")]


KINETO_CAT = {"kernel": "kernel", "memcpy": "gpu_memcpy", "memset": "gpu_memset"}


def write_kineto(report: NsysReport, folder: str) -> List[str]:
    """The report as Chrome/Kineto traces, one per process, that the torch-profile analyzer reads as they are.

    Step ranges become user_annotation events, launch calls cuda_runtime events and GPU activity kernel,
    gpu_memcpy and gpu_memset events (pid the device, tid the stream) carrying the launch's correlation
    and, in args, the NVTX module the reader gave them. Returns the files written.
    """
    os.makedirs(folder, exist_ok=True)
    files: Dict[int, Any] = {}
    written: List[str] = []

    def emit(pid: int, event: Dict[str, Any]) -> None:
        f = files.get(pid)
        if f is None:
            path = os.path.join(folder, f"nsys-pid{pid}.trace.json")
            f = files[pid] = open(path, "w")
            written.append(path)
            f.write('{"schemaVersion": 1, "traceName": "nsys export", "traceEvents": [\n')
        else:
            f.write(",\n")
        f.write(json.dumps(event, separators=(",", ":")))

    windows = report._profiler_windows()
    in_window = lambda t: not windows or any(a <= t <= b for a, b in windows)  # noqa: E731
    try:
        if report.has_nvtx:
            for tid, start, _kind, end, text, _key in report.db.execute(report._range_rows()):
                # Decode steps only, as the reader counts them: a step that admits requests is prefill.
                if text and report.step_re.search(text) and not PREFILL_STEP.match(text) and in_window(start):
                    pid = (tid >> 24) & 0xFFFFFF
                    event = {"ph": "X", "cat": "user_annotation", "name": text, "pid": pid, "tid": tid & 0xFFFFFF}
                    emit(pid, {**event, "ts": start / 1000, "dur": (end - start) / 1000})
        tables = " UNION ".join(f"SELECT correlationId FROM {t}" for _, t in report._activity_tables())
        rows = report.db.execute(
            "SELECT r.globalTid, r.start, r.end, r.correlationId, s.value FROM CUPTI_ACTIVITY_KIND_RUNTIME r "
            f"JOIN StringIds s ON s.id = r.nameId WHERE r.correlationId IN ({tables})"
        )
        for tid, start, end, corr, name in rows:
            pid = (tid >> 24) & 0xFFFFFF
            event = {"ph": "X", "cat": "cuda_runtime", "name": re.sub(r"_v\d+$", "", name), "pid": pid, "tid": tid & 0xFFFFFF}
            emit(pid, {**event, "ts": start / 1000, "dur": (end - start) / 1000, "args": {"correlation": corr}})
        for r in report.records():
            if r["type"] not in KINETO_CAT or r["pid"] is None:
                continue
            args = {"correlation": r["correlation"], "device": r["device"], "stream": r["stream"], "nvtx module": r["module"]}
            event = {"ph": "X", "cat": KINETO_CAT[r["type"]], "name": r["name"], "pid": r["device"], "tid": r["stream"]}
            emit(r["pid"], {**event, "ts": r["start"] / 1000, "dur": (r["end"] - r["start"]) / 1000, "args": args})
    finally:
        for f in files.values():
            f.write("\n]}\n")
            f.close()
    return written


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m infbench_agent.profile.nsys_report", description=__doc__.split("\n\n")[0])
    p.add_argument("report", help="an Nsight Systems report exported to SQLite (nsys export --type sqlite)")
    p.add_argument(
        "--step-range",
        default=DEFAULT_STEP_RANGE,
        help=f"regular expression of the NVTX range that marks a decode step (default {DEFAULT_STEP_RANGE})",
    )
    p.add_argument("--kineto", metavar="FOLDER", help="write the report as Kineto traces (one per process) into FOLDER instead")
    a = p.parse_args(argv)
    try:
        report = NsysReport(a.report, a.step_range)
        if a.kineto:
            for path in write_kineto(report, a.kineto):
                sys.stdout.write(path + "\n")
            return 0
        out = sys.stdout
        for record in report.records():
            out.write(json.dumps(record, separators=(",", ":")))
            out.write("\n")
    except ReportError as err:
        sys.stderr.write(f"nsys_report: {err}\n")
        return 2
    except BrokenPipeError:
        return 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
