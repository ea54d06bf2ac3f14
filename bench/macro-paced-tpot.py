#!/usr/bin/env python3
"""TPOT accuracy of the macro load generator at many streams, against a paced server.

bench/paced-server.mjs (Node) gives every stream one token per --pace-ms and keeps its own account of
when it wrote each stream's first and last token. Each level sends one wave of `streams` requests of
--output-len tokens and prints the client's mean TPOT beside the server's (the true pace), the error
against it and against the 8-stream reading, the client's CPU per token and share of a core.

    python3 bench/macro-paced-tpot.py                      # levels 8,256,512, 3 rounds
    python3 bench/macro-paced-tpot.py --compare PY SCRIPT  # also run another client the same way, in turn

--compare runs `PY SCRIPT --url U --concurrency C --requests C --output-len N`, which must print one
JSON line with mean_tpot_ms, cpu_s and output_tokens (for example a rebuild of vLLM's own client).
Run from the repository root; needs node and python3 (standard library only).
"""
from __future__ import annotations

import argparse
import json
import os
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
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_ours(agent_dir: str, url: str, streams: int, output_len: int, workers: str) -> dict:
    cmd = [
        sys.executable,
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
        "32",
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
    out = subprocess.run(cmd, cwd=agent_dir, capture_output=True, text=True, check=False)
    for line in out.stdout.splitlines():
        event = json.loads(line)
        if event["type"] == "result":
            [level] = event["result"]["levels"]
            cpu = level["client_cpu"]
            return {
                "mean_tpot_ms": level["mean_tpot_ms"],
                "completed": level["completed"],
                "us_per_token": cpu["us_per_output_token"],
                "cpu_s": cpu["cpu_s"],
                "procs": cpu["workers"],
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
    p.add_argument("--pace-ms", type=float, default=20.0)
    p.add_argument("--workers", default="auto", help="our load generator's --workers")
    p.add_argument(
        "--agent",
        default=os.path.join(ROOT, "agent"),
        help="the agent folder to measure (default this checkout's), e.g. an older commit's for before/after",
    )
    p.add_argument("--compare", nargs=2, metavar=("PYTHON", "SCRIPT"), help="another client to run the same way")
    a = p.parse_args()
    levels = [int(x) for x in a.levels.split(",")]
    # The server at nice -10 where permitted: on a small shared host it must keep its pace whichever client runs
    # (the clients keep the default priority, both the same).
    server = subprocess.Popen(
        ["node", os.path.join(ROOT, "bench", "paced-server.mjs"), "--pace-ms", str(a.pace_ms)],
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=raise_priority,
    )
    url = json.loads(server.stdout.readline())["url"]
    clients = [("infbench", None)] + ([("other", a.compare)] if a.compare else [])
    print(
        f"host: {os.uname().machine}, {os.cpu_count()} CPUs, Python {sys.version.split()[0]}; paced server (Node) "
        f"{a.pace_ms:g} ms/token, {a.output_len} tokens per request, one wave per level; load average at start "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    print(
        f"{'round':>5} {'client':>9} {'streams':>7} {'TPOT ms':>8} {'server ms':>9} {'vs server':>9} {'vs 8':>7} "
        f"{'µs/tok':>7} {'CPU':>5} {'procs':>5} {'load1':>5} {'srv CPU':>7}"
    )
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
                    r = (
                        run_ours(a.agent, url, c, a.output_len, a.workers)
                        if other is None
                        else run_other(other[0], other[1], url, c, a.output_len)
                    )
                    wall = time.monotonic() - t0
                    srv_cpu = 100 * (cpu_of(server.pid) - s0) / wall
                    sent = http_json(url + "/stats")["mean_sent_tpot_ms"]
                    if c == min(levels):
                        at8[(rnd, name)] = r["mean_tpot_ms"]
                    base = at8.get((rnd, name))
                    err = 100 * (r["mean_tpot_ms"] - sent) / sent
                    vs8 = 100 * (r["mean_tpot_ms"] - base) / base if base else float("nan")
                    # CPU share over the streaming part: tokens / pace is the time one wave streams.
                    stream_s = a.output_len * a.pace_ms / 1000
                    label = "infbench" if other is None else os.path.basename(other[1]).rsplit(".", 1)[0][:9]
                    rows.append(
                        {"round": rnd, "client": label, "streams": c, "tpot": r["mean_tpot_ms"], "sent": sent, "err": err, "vs8": vs8}
                    )
                    print(
                        f"{rnd:>5} {label:>9} {c:>7} {r['mean_tpot_ms']:>8.3f} {sent:>9.3f} {err:>+8.2f}% {vs8:>+6.2f}% "
                        f"{r['us_per_token'] or 0:>7.1f} {100 * r['cpu_s'] / stream_s:>4.0f}% {r['procs']:>5} "
                        f"{load1:>5.2f} {srv_cpu:>6.0f}%",
                        flush=True,
                    )
    finally:
        server.terminate()
        server.wait()
    print("\nworst error against the server's own pace, per client and level (all rounds):")
    for name in sorted({r["client"] for r in rows}):
        for c in levels:
            errs = [r["err"] for r in rows if r["client"] == name and r["streams"] == c]
            print(f"  {name:>9} {c:>4} streams: {min(errs):+.2f} … {max(errs):+.2f}%")
    print(
        "'server ms' is the paced server's own TPOT (first to last token written); 'vs 8' compares with the same "
        "client's reading at the smallest level of that round. CPU is of one core over the wave's streaming time."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
