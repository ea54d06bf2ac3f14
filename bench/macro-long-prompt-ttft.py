#!/usr/bin/env python3
"""The load generator's own share of TTFT at long prompts (50,000 and 128,000 tokens), against a paced server.

bench/paced-server.mjs counts a prompt's words as its tokens and keeps its own account of each request's TTFT:
from the body's end (and from the headers, the upload included) to its first token written. For each prompt length
the bench sends --requests requests one at a time (c=1), with two clients in turn:

- infbench: the agent's macro phase (`macro --concurrency 1 --input-len L`), its prompts calibrated by /tokenize;
- floor: one blocking socket in this script, the same bodies (the agent's PromptMaker), `sendall` and `recv`, no
  parse but a search for the first `data: `; what it reads above the server's account is the kernel's loopback
  and the server's reading of the upload, which no client avoids.

It prints each client's mean TTFT less the server's (from the body's end and from the headers); infbench's less the
floor's is the client's own overhead. Also the agent's scheduling lag (its send against the planned time, p99).

    python3 bench/macro-long-prompt-ttft.py                       # 50000,128000 tokens, 20 requests, 3 rounds
    python3 bench/macro-long-prompt-ttft.py --input-lens 128000 --requests 40 --rounds 5

Run from the repository root; needs node and python3 (standard library only).
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = "paced-test-server"


def http_json(url: str, method: str = "GET") -> dict:
    req = urllib.request.Request(url, method=method, data=b"" if method == "POST" else None)
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


def raise_priority() -> None:
    try:
        os.setpriority(os.PRIO_PROCESS, 0, -10)
    except OSError:
        pass


def run_ours(agent_dir: str, url: str, input_len: int, output_len: int, requests: int) -> dict:
    cmd = [sys.executable, "-m", "infbench_agent", "macro", "--url", url, "--concurrency", "1", "--requests", str(requests)]
    cmd += ["--input-len", str(input_len), "--output-len", str(output_len), "--warmup", "0", "--no-request-events"]
    cmd += ["--update-interval", "1000", "--workers", "1"]
    out = subprocess.run(cmd, cwd=agent_dir, capture_output=True, text=True, check=False)
    for line in out.stdout.splitlines():
        event = json.loads(line)
        if event["type"] == "result":
            [level] = event["result"]["levels"]
            lag = level.get("scheduling_lag_ms") or {}
            return {
                "completed": level["completed"],
                "ttft_ms": level["mean_ttft_ms"],
                "lag_p99_ms": lag.get("p99"),
                "lag_max_ms": lag.get("max"),
            }
    raise SystemExit(f"the agent gave no result:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")


def run_floor(url: str, bodies: list) -> dict:
    """The bodies one after another on one keep-alive connection, each stamped from its send (its connect, for the
    first) to the read that brought its first token, as the agent stamps."""
    host, port = url.split("//", 1)[1].rsplit(":", 1)
    head = f"POST /v1/completions HTTP/1.1\r\nhost: {host}:{port}\r\ncontent-type: application/json\r\ncontent-length: "
    ttfts = []
    sock = None
    buf = bytearray(1 << 20)
    for body in bodies:
        payload = (head + f"{len(body)}\r\n\r\n").encode() + body
        t0 = time.monotonic()
        if sock is None:
            sock = socket.create_connection((host, int(port)))
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.sendall(payload)
        got = b""
        first = None
        while not got.endswith(b"0\r\n\r\n"):
            n = sock.recv_into(buf)
            if not n:
                raise SystemExit("the paced server closed the connection")
            got += buf[:n]
            if first is None and b"data: " in got:
                first = time.monotonic()
        ttfts.append(1000 * (first - t0))  # type: ignore[operator]
    if sock is not None:
        sock.close()
    return {"completed": len(ttfts), "ttft_ms": statistics.fmean(ttfts), "lag_p99_ms": None, "lag_max_ms": None}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--input-lens", default="50000,128000", help="prompt tokens (words to the paced server)")
    p.add_argument("--requests", type=int, default=20, help="requests per client, prompt length and round")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--output-len", type=int, default=4)
    p.add_argument("--pace-ms", type=float, default=10.0)
    p.add_argument("--agent", default=os.path.join(ROOT, "agent"), help="the agent folder to measure")
    a = p.parse_args()
    sys.path.insert(0, os.path.abspath(a.agent))
    from infbench_agent.macro.prompts import PromptMaker

    lens = [int(x) for x in a.input_lens.split(",")]
    server = subprocess.Popen(
        ["node", os.path.join(ROOT, "bench", "paced-server.mjs"), "--pace-ms", str(a.pace_ms)],
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=raise_priority,
    )
    url = json.loads(server.stdout.readline())["url"]  # type: ignore[union-attr]
    print(
        f"host: {os.uname().machine}, {os.cpu_count()} CPUs, Python {sys.version.split()[0]}; paced server (Node) "
        f"{a.pace_ms:g} ms/token; c=1, {a.requests} requests of {a.output_len} output tokens per client, length and "
        f"round; load average at start {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    print(
        f"{'round':>5} {'tokens':>7} {'client':>8} {'body KB':>7} {'TTFT ms':>8} {'srv ms':>7} {'upload':>7} "
        f"{'-srv':>7} {'-srv hdr':>8} {'lag p99':>7} {'lag max':>7} {'load1':>5}"
    )
    gaps: dict = {}
    try:
        for rnd in range(1, a.rounds + 1):
            for n in lens:
                maker = PromptMaker("completions", MODEL, n, a.output_len, True, 1000 + rnd)
                bodies = [maker.body(i) for i in range(a.requests)]
                kb = statistics.fmean(len(b) for b in bodies) / 1024
                # In turn, the other first every other round.
                for name in ("infbench", "floor") if rnd % 2 else ("floor", "infbench"):
                    http_json(url + "/stats/reset", "POST")
                    time.sleep(0.3)
                    load1 = os.getloadavg()[0]
                    r = run_ours(a.agent, url, n, a.output_len, a.requests) if name == "infbench" else run_floor(url, bodies)
                    stats = http_json(url + "/stats")
                    gap = r["ttft_ms"] - stats["mean_sent_ttft_ms"]
                    gap_hdr = r["ttft_ms"] - stats["mean_sent_ttft_from_headers_ms"]
                    gaps.setdefault((n, name), []).append((gap, gap_hdr))
                    lag = "" if r["lag_p99_ms"] is None else f"{r['lag_p99_ms']:>7.2f} {r['lag_max_ms']:>7.2f}"
                    print(
                        f"{rnd:>5} {n:>7} {name:>8} {kb:>7.0f} {r['ttft_ms']:>8.3f} {stats['mean_sent_ttft_ms']:>7.3f} "
                        f"{stats['mean_upload_ms']:>7.3f} {gap:>+7.3f} {gap_hdr:>+8.3f} {lag or ' ' * 15} {load1:>5.2f}",
                        flush=True,
                    )
    finally:
        server.terminate()
        server.wait()
    print("\nthe client's own overhead: infbench's TTFT above the server's less the floor's, median over rounds (ms)")
    for n in lens:
        ours = [g for g, _ in gaps[(n, "infbench")]]
        floor = [g for g, _ in gaps[(n, "floor")]]
        own = [x - y for x, y in zip(ours, floor)]
        print(
            f"  {n:>7} tokens: infbench {statistics.median(ours):+.3f}, floor {statistics.median(floor):+.3f}, "
            f"own {statistics.median(own):+.3f} (rounds {', '.join(f'{x:+.3f}' for x in own)})"
        )
    print(
        "'srv ms' is the server's own mean TTFT from the body's end, 'upload' its mean time from the headers to the "
        "body's end; '-srv' the client's mean TTFT less the server's, '-srv hdr' less the server's from the headers. "
        "'lag' is the agent's scheduling lag (ms): its send against the planned time."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
