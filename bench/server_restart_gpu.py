"""Stops a server that holds most of a GPU for micro, and starts it again, through the agent's own commands.

    python3 bench/server_restart_gpu.py [--hold-fraction 0.9] [--startup-seconds 20]

The "server" is the project's simulator (vLLM 0.16's API and start-up log) run inside a process that
first takes --hold-fraction of GPU 0's memory with PyTorch, as `vllm serve --gpu-memory-utilization 0.9`
leaves a GPU. The script then runs, with dist/agent.pyz (build it with `npm run build`):
server status (adopt) -> micro (refused: GPUs busy) -> server stop -> micro (measures) -> server start,
and prints GPU memory, the micro GEMM and the stop and start times at each step. Needs an NVIDIA GPU.
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
AGENT = os.path.join(ROOT, "dist", "agent.pyz")

HOLDER = """
import sys, torch
free, total = torch.cuda.mem_get_info(0)
held = torch.empty(int(float(sys.argv[1]) * total), dtype=torch.uint8, device="cuda:0")
sys.path.insert(0, sys.argv[2])
import vllm_sim
raise SystemExit(vllm_sim.main(sys.argv[3:]))
"""


def agent(*args: str) -> list:
    out = subprocess.run([sys.executable, AGENT, *args], capture_output=True, text=True)
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


def result(events: list) -> dict:
    return next((e["result"] for e in events if e["type"] == "result"), {})


def errors(events: list) -> list:
    return [e["code"] for e in events if e["type"] == "error"]


def gpu_used_gib() -> float:
    out = subprocess.run(
        ["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits", "-i", "0"], capture_output=True, text=True
    )
    return float(out.stdout.strip()) / 1024


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--hold-fraction", type=float, default=0.9)
    p.add_argument("--startup-seconds", type=float, default=20.0)
    a = p.parse_args()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    script = os.path.join(tempfile.mkdtemp(), "gpu_server.py")
    with open(script, "w") as f:
        f.write(HOLDER)
    argv = [sys.executable, script, str(a.hold_fraction), os.path.join(ROOT, "simulator"), "--mimic", "vllm-0.16", "--port", str(port)]
    argv += ["--startup-seconds", str(a.startup_seconds)]
    subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            if urllib.request.urlopen(url + "/health", timeout=2).status == 200:
                break
        except OSError:
            time.sleep(0.5)
    print(f"server up: GPU 0 {gpu_used_gib():.1f} GiB used")
    recipe = result(agent("server", "status", "--url", url))["recipe"]
    print(f"adopted: pid {recipe['identity']['pid']}, {' '.join(recipe['argv'][1:4])} ...")
    micro = ["micro", "--shape", "down=7168x256", "--m", "1,64", "--skip", "allreduce,launch", "--dtype", "bf16"]
    print(f"micro beside it: refused with {errors(agent(*micro))}")
    t = time.monotonic()
    stopped = agent(
        "server",
        "stop",
        "--url",
        url,
        "--pid",
        str(recipe["identity"]["pid"]),
        "--start-ticks",
        str(recipe["identity"]["start_ticks"]),
        "--argv-json",
        json.dumps(recipe["argv"]),
    )
    stop_s = time.monotonic() - t
    print(f"stopped in {stop_s:.1f} s {errors(stopped) or ''}: GPU 0 {gpu_used_gib():.1f} GiB used as the stop returned")
    # The driver frees an ended process's memory a moment later: how long until nvidia-smi shows it.
    while gpu_used_gib() > 1 and time.monotonic() - t < stop_s + 30:
        time.sleep(0.1)
    print(f"GPU 0 {gpu_used_gib():.1f} GiB used {time.monotonic() - t - stop_s:.1f} s after the stop returned")
    measured = agent(*micro)
    gemms = [e["point"] for e in measured if e["type"] == "micro.point" and e["kind"] == "gemm"]
    for g in gemms:
        print(f"micro with the GPU free: gemm {g.get('shape')} M={g.get('m')}: {g.get('us', 0):.1f} us, {g.get('tbps', 0):.2f} TB/s")
    started = agent("server", "start", "--url", url, "--recipe", json.dumps(recipe))
    r = result(started)
    pid = r["recipe"]["identity"]["pid"] if r.get("recipe") else None
    print(f"started again in {r.get('ready_s')} s (pid {pid}) {errors(started) or ''}: GPU 0 {gpu_used_gib():.1f} GiB used")
    again = result(agent("server", "status", "--url", url))["recipe"]
    print(f"same command line: {again['argv'] == recipe['argv']}")
    os.kill(again["identity"]["pid"], 15)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
