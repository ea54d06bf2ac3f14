#!/usr/bin/env python3
"""TPOT accuracy of the macro load generator at many streams, against a paced server.

bench/paced-server.mjs (Node) gives every stream one token per --pace-ms and keeps its own account of
when it wrote each stream's first and last token. Each level sends one wave of `streams` requests of
--output-len tokens and prints the client's mean TPOT beside the server's (the true pace), the error
against it and against the 8-stream reading, the client's CPU per token and share of a core, the client's
mean TTFT less the server's own (request received to first token written), and the server's own lag (its
p99 lateness against its schedule; "late" when it fell behind its pace, and then the level says little
about the client).

    python3 bench/macro-paced-tpot.py                      # levels 8,256,512, 3 rounds
    python3 bench/macro-paced-tpot.py --compare PY SCRIPT  # also run another client the same way, in turn
    python3 bench/macro-paced-tpot.py --levels 8192 --rounds 1 --pace-ms 1000 --output-len 60 --server-procs 2
    python3 bench/macro-paced-tpot.py --levels 512 --rounds 1 --profile DIR   # our client under cProfile

--compare runs `PY SCRIPT --url U --concurrency C --requests C --output-len N`, which must print one
JSON line with mean_tpot_ms, cpu_s and output_tokens (for example a rebuild of vLLM's own client).
Run from the repository root; needs node and python3 (standard library only).
"""
from __future__ import annotations

import argparse
import json
import os
import pstats
import resource
import subprocess
import sys
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def http_json(url: str, method: str = "GET") -> dict:
    req = urllib.request.Request(url, method=method, data=b"" if method == "POST" else None)
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


def raise_priority() -> None:
    try:
        os.setpriority(os.PRIO_PROCESS, 0, -10)
    except OSError:
        pass


def cpu_of(pid: int) -> float:
    """CPU seconds of a process and its children (the paced server's worker processes)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    total = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            children = [int(x) for x in f.read().split()]
    except OSError:
        children = []
    for child in children:
        try:
            total += cpu_of(child)
        except OSError:
            pass
    return total


def run_ours(
    agent_dir: str, url: str, streams: int, output_len: int, workers: str, profile: str | None = None, input_len: int = 32
) -> dict:
    # Under cProfile (--profile) the agent's main thread is profiled into that file; its CPU per token then
    # includes the profiler's own cost, so only the shares between functions mean anything.
    cmd = (
        [sys.executable]
        + (["-m", "cProfile", "-o", profile] if profile else [])
        + [
            "-m",
            "infbench_agent",
            "macro",
            "--url",
            url,
            "--concurrency",
            str(streams),
            "--requests",
            str(streams),
            "--input-len",
            str(input_len),
            "--output-len",
            str(output_len),
            "--warmup",
            "0",
            "--no-request-events",
            "--update-interval",
            "1000",
            "--workers",
            workers,
        ]
    )
    # Voluntary context switches (how often the client slept waiting for a read) and the kernel's share of its CPU:
    # the whole process, its start-up too, and the children it reaped (its workers, nvidia-smi where there is one).
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(cmd, cwd=agent_dir, capture_output=True, text=True, check=False)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    sleeps = r1.ru_nvcsw - r0.ru_nvcsw
    system = r1.ru_stime - r0.ru_stime
    whole = system + r1.ru_utime - r0.ru_utime
    for line in out.stdout.splitlines():
        event = json.loads(line)
        if event["type"] == "result":
            [level] = event["result"]["levels"]
            cpu = level["client_cpu"]
            return {
                "mean_tpot_ms": level["mean_tpot_ms"],
                "mean_ttft_ms": level.get("mean_ttft_ms"),
                "completed": level["completed"],
                "us_per_token": cpu["us_per_output_token"],
                "cpu_s": cpu["cpu_s"],
                "procs": cpu["workers"],
                "sleeps_per_token": sleeps / level["total_output_tokens"] if level.get("total_output_tokens") else None,
                "system_share": system / whole if whole else None,
            }
    raise SystemExit(f"the agent gave no result:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")


def run_other(python: str, script: str, url: str, streams: int, output_len: int) -> dict:
    out = subprocess.run(
        [python, script, "--url", url, "--concurrency", str(streams), "--requests", str(streams), "--output-len", str(output_len)],
        capture_output=True,
        text=True,
        check=False,
    )
    try:
        r = json.loads(out.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        raise SystemExit(f"{script} printed no JSON:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    return {
        "mean_tpot_ms": r["mean_tpot_ms"],
        "mean_ttft_ms": r.get("mean_ttft_ms"),
        "completed": r["completed"],
        "cpu_s": r["cpu_s"],
        "procs": 1,
        "us_per_token": 1e6 * r["cpu_s"] / r["output_tokens"] if r.get("output_tokens") else None,
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--levels", default="8,256,512")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--output-len", type=int, default=150)
    p.add_argument("--input-len", type=int, default=32, help="our client's prompt tokens (words to the paced server)")
    p.add_argument("--pace-ms", type=float, default=20.0)
    p.add_argument("--workers", default="auto", help="our load generator's --workers")
    p.add_argument(
        "--agent",
        default=os.path.join(ROOT, "agent"),
        help="the agent folder to measure (default this checkout's), e.g. an older commit's for before/after",
    )
    p.add_argument("--compare", nargs=2, metavar=("PYTHON", "SCRIPT"), help="another client to run the same way")
    p.add_argument("--server-procs", type=int, default=1, help="the paced server's processes (its --procs)")
    p.add_argument("--late-bound-ms", type=float, default=2.0, help="the paced server is late past this p99 lateness")
    p.add_argument("--profile", metavar="DIR", help="run our client under cProfile, one file per level and round in DIR")
    a = p.parse_args()
    if a.profile:
        os.makedirs(a.profile, exist_ok=True)
    levels = [int(x) for x in a.levels.split(",")]
    # The server at nice -10 where permitted: on a small shared host it must keep its pace whichever client runs
    # (the clients keep the default priority, both the same).
    server = subprocess.Popen(
        [
            "node",
            os.path.join(ROOT, "bench", "paced-server.mjs"),
            "--pace-ms",
            str(a.pace_ms),
            "--procs",
            str(a.server_procs),
            "--late-bound-ms",
            str(a.late_bound_ms),
        ],
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=raise_priority,
    )
    url = json.loads(server.stdout.readline())["url"]
    clients = [("infbench", None)] + ([("other", a.compare)] if a.compare else [])
    print(
        f"host: {os.uname().machine}, {os.cpu_count()} CPUs, Python {sys.version.split()[0]}; paced server (Node) "
        f"{a.pace_ms:g} ms/token in {a.server_procs} process{'es' if a.server_procs > 1 else ''}, {a.input_len} prompt and "
        f"{a.output_len} output tokens per request, one wave per level; load average at start "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    print(
        f"{'round':>5} {'client':>9} {'streams':>7} {'TPOT ms':>8} {'server ms':>9} {'vs server':>9} {'vs 8':>7} "
        f"{'µs/tok':>7} {'CPU':>5} {'procs':>5} {'sleeps':>6} {'sys':>4} {'load1':>5} {'srv CPU':>7} {'TTFT-srv':>8} {'srv lag p99':>11}"
    )
    profiles = []
    at8: dict = {}
    rows = []
    try:
        for rnd in range(1, a.rounds + 1):
            for c in levels:
                for name, other in clients:
                    http_json(url + "/stats/reset", "POST")
                    time.sleep(0.3)
                    load1 = os.getloadavg()[0]
                    s0, t0 = cpu_of(server.pid), time.monotonic()
                    prof = os.path.join(os.path.abspath(a.profile), f"infbench-{c}-r{rnd}.prof") if a.profile else None
                    r = (
                        run_ours(a.agent, url, c, a.output_len, a.workers, prof, a.input_len)
                        if other is None
                        else run_other(other[0], other[1], url, c, a.output_len)
                    )
                    wall = time.monotonic() - t0
                    srv_cpu = 100 * (cpu_of(server.pid) - s0) / wall
                    stats = http_json(url + "/stats")
                    sent = stats["mean_sent_tpot_ms"]
                    # The client's mean TTFT less the server's own (request received to first token written), ms.
                    ttft_gap = r["mean_ttft_ms"] - stats["mean_sent_ttft_ms"] if r.get("mean_ttft_ms") is not None else float("nan")
                    lag = f"{stats['late_p99_ms']:.2f}{'' if stats['on_time'] else ' late'}"
                    if prof and other is None:
                        profiles.append(prof)
                    if c == min(levels):
                        at8[(rnd, name)] = r["mean_tpot_ms"]
                    base = at8.get((rnd, name))
                    err = 100 * (r["mean_tpot_ms"] - sent) / sent
                    vs8 = 100 * (r["mean_tpot_ms"] - base) / base if base else float("nan")
                    # CPU share over the streaming part: tokens / pace is the time one wave streams.
                    stream_s = a.output_len * a.pace_ms / 1000
                    label = "infbench" if other is None else os.path.basename(other[1]).rsplit(".", 1)[0][:9]
                    sleeps = f"{r['sleeps_per_token']:.2f}" if r.get("sleeps_per_token") is not None else "-"
                    system = f"{100 * r['system_share']:.0f}%" if r.get("system_share") is not None else "-"
                    rows.append(
                        {
                            "round": rnd,
                            "client": label,
                            "streams": c,
                            "tpot": r["mean_tpot_ms"],
                            "sent": sent,
                            "err": err,
                            "vs8": vs8,
                            "on_time": stats["on_time"],
                        }
                    )
                    print(
                        f"{rnd:>5} {label:>9} {c:>7} {r['mean_tpot_ms']:>8.3f} {sent:>9.3f} {err:>+8.2f}% {vs8:>+6.2f}% "
                        f"{r['us_per_token'] or 0:>7.1f} {100 * r['cpu_s'] / stream_s:>4.0f}% {r['procs']:>5} {sleeps:>6} {system:>4} "
                        f"{load1:>5.2f} {srv_cpu:>6.0f}% {ttft_gap:>+8.3f} {lag:>11}",
                        flush=True,
                    )
    finally:
        server.terminate()
        server.wait()
    print("\nworst error against the server's own pace, per client and level (all rounds):")
    for name in sorted({r["client"] for r in rows}):
        for c in levels:
            errs = [r["err"] for r in rows if r["client"] == name and r["streams"] == c]
            late = sum(1 for r in rows if r["client"] == name and r["streams"] == c and not r["on_time"])
            note = f" ({late} of them with the server behind its pace)" if late else ""
            print(f"  {name:>9} {c:>4} streams: {min(errs):+.2f} … {max(errs):+.2f}%{note}")
    print(
        "'server ms' is the paced server's own TPOT (first to last token written); 'vs 8' compares with the same "
        "client's reading at the smallest level of that round. CPU is of one core over the wave's streaming time. "
        "'sleeps' is our client's voluntary context switches per output token (about one wake-up each), 'sys' the "
        "kernel's share of its CPU (the whole process and the children it reaped). "
        "'TTFT-srv' is the client's mean TTFT less the server's own (ms); 'srv lag p99' how late the server wrote "
        f"its tokens against its schedule (ms; 'late' past {a.late_bound_ms:g} ms: the server fell behind)."
    )
    for prof in profiles:
        print(f"\n{os.path.basename(prof)}: the client's main thread, top 25 by own time")
        pstats.Stats(prof, stream=sys.stdout).sort_stats("tottime").print_stats(25)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
