"""Each macro level's GPU energy, as the agent sampled it, against nvidia-smi's own log over the same seconds.

    python3 bench/h200_power_compare.py EVIDENCE_DIR     (what bench/h200_power.sh wrote)

The agent's samples carry seconds from the run's start; the log carries wall-clock times. The two are lined up
where the agent's power readings reappear in the log (both read the driver's 100 ms power figure), then the log
is integrated (trapezoids) over each level's window and set beside the agent's energy and J/token.
"""

import datetime
import json
import os
import sys


def main(ev: str) -> None:
    run = json.load(open(os.path.join(ev, "macro.json")))
    log = []
    for line in open(os.path.join(ev, "nvidia-smi.csv")):
        stamp, _, power, clock = [x.strip() for x in line.split(",")]
        log.append((datetime.datetime.strptime(stamp, "%Y/%m/%d %H:%M:%S.%f").timestamp(), float(power), int(clock)))
    first = run["levels"][0]["gpu_telemetry"]["series"]
    readings = [s[2] for s in first]
    matched, at = max((sum(1 for i, p in enumerate(readings) if abs(log[o + i][1] - p) < 0.01), o) for o in range(len(log) - len(readings)))
    print(f"lined up: {matched} of {len(readings)} agent readings equal in the log")
    t0 = log[at][0] - first[0][0]
    for level in run["levels"]:
        g = level["gpu_telemetry"]
        start = t0 + g["series"][0][0] - 0.05
        points = [(t, p) for t, p, _ in log if start <= t <= start + g["window_s"]]
        energy = sum((b[0] - a[0]) * (a[1] + b[1]) / 2 for a, b in zip(points, points[1:]))
        clocks = [c for t, _, c in log if start <= t <= start + g["window_s"]]
        tokens = level["total_output_tokens"]
        print(
            f"c={level['max_concurrency']}: agent {g['energy_j']:.1f} J, {g['mean_power_w']:.1f} W mean, "
            f"{g['joules_per_output_token']:.4f} J/token; "
            f"nvidia-smi's log {energy:.1f} J, {sum(p for _, p in points) / len(points):.1f} W mean ({len(points)} samples), "
            f"{energy / tokens:.4f} J/token; SM clock {min(clocks)}-{max(clocks)} MHz"
        )


if __name__ == "__main__":
    main(sys.argv[1])
