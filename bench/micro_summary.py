"""Prints the figures of a micro run: its events.jsonl (or the agent's stdout saved to a file).

Usage: python3 bench/micro_summary.py RUN/events.jsonl [...]
Checks each GEMM against first principles: the memory-bound time is bytes / measured copy bandwidth.
"""
import json
import sys


def main(paths):
    for path in paths:
        points, result = [], None
        with open(path, encoding="utf-8") as f:
            for line in f:
                try:
                    e = json.loads(line)
                except ValueError:
                    continue
                if e.get("type") == "micro.point":
                    points.append(e["point"])
                elif e.get("type") == "result":
                    result = e["result"]
                elif e.get("type") in ("log", "error") and e.get("level", "error") in ("warn", "error"):
                    print(f"  [{e.get('level', 'error')}] {e.get('message')}")
        print(f"== {path}")
        if result:
            d = result["device"]
            model = (result.get("model") or {}).get("name")
            print(f"device {d['name']} torch {d['torch']}  model {model} TP={result['tp']}  kernel {result['kernel']['label']}")
        peak = {p["what"]: p for p in points if p["kind"] == "peak"}
        bw = peak.get("copy", {}).get("tbps")
        for p in peak.values():
            print(f"peak {p['what']:6s} {p['us']:10.1f} us  " + (f"{p['tbps']:.2f} TB/s" if "tbps" in p else f"{p['tflops']:.0f} TFLOP/s"))
        print(
            f"{'shape':24s} {'M':>4s} {'N':>6s} {'K':>6s} {'us':>9s} {'TB/s':>6s} {'%bw':>5s} "
            f"{'TFLOP/s':>8s} {'%flop':>6s} {'bytes/bw us':>11s}"
        )
        for p in (p for p in points if p["kind"] == "gemm"):
            floor = p["bytes"] / bw / 1e6 if bw else float("nan")
            print(
                f"{p['shape']:24s} {p['m']:4d} {p['n']:6d} {p['k']:6d} {p['us']:9.2f} {p['tbps']:6.2f} {p['pct_peak_bw'] or 0:5.0f} "
                f"{p['tflops']:8.1f} {p['pct_peak_flops'] or 0:6.1f} {floor:11.2f}"
            )
        for p in (p for p in points if p["kind"] == "launch"):
            print(
                f"launch {p['mode']:5s} {p['us_per_kernel']:.2f} us/kernel wall, gpu {p.get('gpu_us_per_kernel', float('nan')):.2f}, "
                f"cpu {p['cpu_us_per_launch']:.3f} us/launch"
            )
        for p in (p for p in points if p["kind"] == "allreduce"):
            print(
                f"allreduce {p['backend']} n={p['world_size']} {p['mode']:5s} {p['bytes']:>10d} B {p['us']:9.2f} us "
                f"algbw {p['algbw_gbps']:8.2f} GB/s busbw {p['busbw_gbps']:8.2f} GB/s {p.get('source', '')} "
                f"{'M=' + str(p['m']) if p.get('m') else ''}"
            )
        for fail in (result or {}).get("failures", []):
            print(f"FAILED {fail['message']}")


if __name__ == "__main__":
    main(sys.argv[1:])
