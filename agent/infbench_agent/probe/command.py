"""`probe`: what is on this host and who serves at the URL, without disturbing anything.

Reports the Python and package versions (read from package metadata, never imported), the GPUs with
their memory and the processes holding them (nvidia-smi), the GPU topology, and the server at
--url: whether it answers, which server it is, which model it serves, and whether its profiler
endpoints are enabled. It never starts a profile: the endpoint is asked with OPTIONS, which runs no
handler (FastAPI answers 405 for a route that exists and 404 for one that does not).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
import urllib.parse
from typing import Any, Dict, List, Optional, Tuple

from infbench_agent import auth, events, http, options
from infbench_agent.probe import served_model
from infbench_agent.probe.argv import flag_value
from infbench_agent.simulator_mark import MIMIC_HEADER, SIMULATOR_MARK

ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")
PACKAGES = ["torch", "vllm", "sglang", "transformers", "triton", "flashinfer-python"]
# The only variables read from the server's environment: where its profiler writes, HOME for `~`, and
# where its Hugging Face cache is (the served model's config.json).
SERVER_ENV = (
    "VLLM_TORCH_PROFILER_DIR",
    "VLLM_TORCH_CUDA_PROFILE",
    "SGLANG_TORCH_PROFILER_DIR",
    "HOME",
    "HF_HOME",
    "HF_HUB_CACHE",
    "HUGGINGFACE_HUB_CACHE",
    "XDG_CACHE_HOME",
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    options.add_arguments(p, "probe")


def run(args: argparse.Namespace) -> int:
    result = collect(args.url, args.timeout, auth.resolve_api_key(args))
    events.emit(events.PROBE, result=result)
    events.emit(events.RESULT, result=result)
    return 0


def collect(url: str, timeout: float, api_key: Optional[str] = None) -> Dict[str, Any]:
    return {
        "host": socket.gethostname(),
        "platform": platform.platform(),
        "python": {"version": platform.python_version(), "executable": sys.executable, "implementation": platform.python_implementation()},
        "packages": package_versions(PACKAGES),
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "gpus": probe_gpus(timeout),
        "network": probe_network(),
        "server": probe_server(url, timeout, api_key),
    }


# NCCL's own defaults (docs.nvidia.com/deeplearning/nccl, "Environment Variables"): an InfiniBand or
# RoCE HCA when one is there (NCCL_IB_HCA picks), else sockets over interfaces other than lo and
# docker* (NCCL_SOCKET_IFNAME picks). These variables decide the path between hosts.
NCCL_NETWORK_ENV = ("NCCL_SOCKET_IFNAME", "NCCL_IB_HCA", "NCCL_IB_DISABLE", "NCCL_NET", "GLOO_SOCKET_IFNAME")


def _read(path: str) -> Optional[str]:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def probe_network(sys_class: str = "/sys/class") -> Dict[str, Any]:
    """The host's links to other hosts, as NCCL would choose among them: RDMA devices, then network interfaces."""
    rdma = []
    ib_root = os.path.join(sys_class, "infiniband")
    for dev in sorted(os.listdir(ib_root)) if os.path.isdir(ib_root) else []:
        ports_dir = os.path.join(ib_root, dev, "ports")
        for port in sorted(os.listdir(ports_dir)) if os.path.isdir(ports_dir) else []:
            base = os.path.join(ports_dir, port)
            rdma.append(
                {
                    "device": dev,
                    "port": int(port) if port.isdigit() else port,
                    "state": _read(os.path.join(base, "state")),
                    "rate": _read(os.path.join(base, "rate")),
                    "link_layer": _read(os.path.join(base, "link_layer")),
                }
            )
    interfaces = []
    net_root = os.path.join(sys_class, "net")
    for name in sorted(os.listdir(net_root)) if os.path.isdir(net_root) else []:
        speed = _read(os.path.join(net_root, name, "speed"))
        interfaces.append(
            {
                "name": name,
                "state": _read(os.path.join(net_root, name, "operstate")),
                "speed_mbps": int(speed) if speed and speed.lstrip("-").isdigit() and int(speed) > 0 else None,
                # What NCCL's socket transport leaves out unless NCCL_SOCKET_IFNAME says otherwise.
                "nccl_default": not (name == "lo" or name.startswith("docker")),
            }
        )
    return {"rdma": rdma, "interfaces": interfaces, "env": {k: os.environ[k] for k in NCCL_NETWORK_ENV if k in os.environ}}


def package_versions(names: List[str]) -> Dict[str, Optional[str]]:
    """Versions from installed metadata; importing torch or vllm would take seconds and may touch the GPU."""
    from importlib import metadata

    out: Dict[str, Optional[str]] = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


# ---------------------------------------------------------------------------------------------- GPUs


def run_nvidia_smi(args: List[str], timeout: float) -> Tuple[Optional[str], Optional[str]]:
    exe = shutil.which("nvidia-smi")
    if not exe:
        return None, "nvidia-smi is not on PATH: no NVIDIA driver here, or the container was started without GPUs (--gpus all)"
    try:
        proc = subprocess.run([exe, *args], capture_output=True, text=True, timeout=max(timeout, 10.0))
    except subprocess.TimeoutExpired:
        return None, f"nvidia-smi {' '.join(args)} did not answer within {max(timeout, 10.0):.0f} s"
    if proc.returncode != 0:
        return None, f"nvidia-smi {' '.join(args)} failed: {(proc.stderr or proc.stdout).strip()[:300]}"
    return proc.stdout, None


def number(text: str) -> Optional[float]:
    try:
        return float(text)
    except ValueError:
        return None  # "[N/A]", "[Not Supported]"


def parse_gpu_csv(text: str) -> List[Dict[str, Any]]:
    gpus = []
    for line in text.strip().splitlines():
        f = [c.strip() for c in line.split(",")]
        if len(f) < 7:
            continue
        used, total, util = number(f[3]), number(f[4]), number(f[5])
        gpus.append(
            {
                "index": int(f[0]),
                "name": f[1],
                "uuid": f[2],
                "memory_used_mib": used,
                "memory_total_mib": total,
                "utilization_pct": util,
                "driver_version": f[6],
            }
        )
    return gpus


def parse_apps_csv(text: str, uuid_to_index: Dict[str, int]) -> List[Dict[str, Any]]:
    apps = []
    for line in text.strip().splitlines():
        f = [c.strip() for c in line.split(",")]
        if len(f) < 4 or not f[1].isdigit():
            continue
        apps.append(
            {
                "gpu_uuid": f[0],
                "gpu_index": uuid_to_index.get(f[0]),
                "pid": int(f[1]),
                "process_name": f[2],
                "used_memory_mib": number(f[3]),
            }
        )
    return apps


def probe_gpus(timeout: float) -> Dict[str, Any]:
    text, err = run_nvidia_smi(
        ["--query-gpu=index,name,uuid,memory.used,memory.total,utilization.gpu,driver_version", "--format=csv,noheader,nounits"], timeout
    )
    if err:
        return {"available": False, "error": err, "devices": [], "processes": [], "topology": None}
    devices = parse_gpu_csv(text or "")
    apps_text, apps_err = run_nvidia_smi(
        ["--query-compute-apps=gpu_uuid,pid,process_name,used_memory", "--format=csv,noheader,nounits"], timeout
    )
    processes = parse_apps_csv(apps_text or "", {d["uuid"]: d["index"] for d in devices})
    topo, topo_err = run_nvidia_smi(["topo", "-m"], timeout)
    return {
        "available": True,
        "error": apps_err or topo_err,
        "devices": devices,
        "processes": processes,
        "topology": ANSI_ESCAPE.sub("", topo).rstrip() if topo else None,
    }


# -------------------------------------------------------------------------------------------- server


def json_of(body: Optional[bytes]) -> Any:
    """The reply's JSON, or None for one that is not JSON or nests past what Python's parser reads (a
    RecursionError would end the probe, not just this reply)."""
    try:
        return json.loads(body or b"")
    except (ValueError, RecursionError):
        return None


def shown(value: Any) -> Any:
    """A name the server chose (a model id, its owner, a version), cleaned of control characters to be shown."""
    return events.printable(value) if isinstance(value, str) else value


def probe_server(url: str, timeout: float, api_key: Optional[str] = None) -> Dict[str, Any]:
    base = url.rstrip("/")
    out: Dict[str, Any] = {
        "url": url,
        "reachable": False,
        "healthy": None,
        "error": None,
        "kind": "unknown",
        "kind_evidence": None,
        "simulated": False,
        "version": None,
        "models": [],
        "auth": {"required": False, "key_given": bool(api_key), "key_accepted": None, "status": None},
        "profiler": {"enabled": None, "kind": None, "evidence": None},
        "pid": None,
        "command_line": None,
        "cwd": None,
        "parallel": None,
    }

    def get(path: str, method: str = "GET") -> Tuple[Optional[int], Optional[bytes], Dict[str, str], Optional[str]]:
        return http.request(base + path, timeout, method, api_key)

    status, _, headers, err = get("/health")
    if status is None:
        out["error"] = (
            f"nothing answers at {url} ({err}). Is the server running, and is this the URL as seen from "
            f"this host (not from your laptop)?"
        )
        attach_process(out, url)
        out.pop("_environ", None)
        return out
    out["reachable"] = True
    # A 404 means the server has no /health endpoint (not vLLM or SGLang), not that it is unhealthy.
    out["healthy"] = None if status == 404 else status == 200
    server_header = headers.get("server", "")
    mimics = headers.get(MIMIC_HEADER, "")

    status, body, _, _ = get("/v1/models")
    if status in (401, 403):
        out["auth"].update(required=True, status=status, key_accepted=False if api_key else None)
        out["error"] = f"{auth.unauthorized_message(base + '/v1/models', status, bool(api_key))} To fix it, {auth.HOW_TO_GIVE_KEY}."
    elif status == 200 and api_key:
        # The key was accepted; whether the server needs it at all shows only in a request without it.
        bare_status, _, _, _ = http.request(base + "/v1/models", timeout, "GET", None)
        out["auth"].update(key_accepted=True)
        if bare_status in (401, 403):
            out["auth"].update(required=True, status=bare_status)
    models = json_of(body) if status == 200 else None
    if isinstance(models, dict) and isinstance(models.get("data"), list):
        for m in models["data"]:
            if isinstance(m, dict):
                out["models"].append(
                    {
                        "id": shown(m.get("id")),
                        "max_model_len": m.get("max_model_len"),
                        "owned_by": shown(m.get("owned_by")),
                        "root": m.get("root"),
                    }
                )

    status, body, _, _ = get("/version")
    version = json_of(body) if status == 200 else None
    if isinstance(version, dict) and "version" in version:
        out["version"] = events.printable(str(version["version"]))

    metrics_status, metrics_body, _, _ = get("/metrics")
    metrics = metrics_body.decode("utf-8", "replace") if metrics_status == 200 and metrics_body else ""
    out["metrics_status"] = metrics_status
    attach_process(out, url)
    argv = out["command_line"] or []
    cmdline = " ".join(argv)

    owned = " ".join(str(m.get("owned_by")) for m in out["models"])
    if SIMULATOR_MARK in owned or SIMULATOR_MARK in (out["version"] or "") or SIMULATOR_MARK in server_header:
        out["simulated"] = True
    if out["simulated"] and mimics:
        # The simulator's --mimic profile: it behaves as that server version (simulator/README.md).
        kind, _, mimic_version = mimics.partition(" ")
        out.update(
            kind=kind,
            version=mimic_version or None,
            mimic=mimics,
            kind_evidence=f"the inference-bench SIMULATOR mimicking {kind} {mimic_version} (not a real model)",
        )
    elif out["simulated"]:
        out.update(
            kind="vllm", kind_evidence="the inference-bench SIMULATOR (vLLM API): " "its /v1/models and /version say so; not a real model"
        )
    elif "vllm:" in metrics:
        out.update(kind="vllm", kind_evidence="/metrics has vllm:* metrics")
    elif "sglang:" in metrics:
        out.update(kind="sglang", kind_evidence="/metrics has sglang:* metrics")
    elif "sglang" in cmdline:
        out.update(kind="sglang", kind_evidence="the server's command line")
    elif "vllm" in cmdline:
        out.update(kind="vllm", kind_evidence="the server's command line")
    elif out["version"] is not None:
        out.update(kind="vllm", kind_evidence="/version answers as vLLM does")
    if out["kind"] in ("sglang", "unknown") and not (out["simulated"] and mimics and out["version"]):
        # SGLang has no /version; its version is in /get_server_info (renamed /server_info in newer releases).
        for path in ("/server_info", "/get_server_info"):
            status, body, _, _ = get(path)
            info = json_of(body) if status == 200 else None
            if isinstance(info, dict):
                if out["kind"] == "unknown":
                    out.update(kind="sglang", kind_evidence=f"{path} answers (SGLang)")
                out["version"] = out["version"] or (events.printable(str(info["version"])) if info.get("version") else None)
                break
            if status in (401, 403) and not out["auth"]["required"]:
                out["auth"].update(required=True, status=status)
    if out["auth"]["required"] and not out["auth"]["key_accepted"] and out["kind"] == "sglang" and out["error"] is None:
        out["error"] = f"SGLang answered HTTP {out['auth']['status']}: this server wants an API key. To fix it, {auth.HOW_TO_GIVE_KEY}."
    out["parallel"] = parallel_sizes(argv, out["kind"])
    config = served_model.served_model_config(argv, out["kind"], out["cwd"], out.get("_environ") or {}, out["models"])
    if config:
        out["model_config"] = config
    out["profiler"] = profiler_state(base, out, timeout, api_key)
    return out


def version_tuple(version: Optional[str]) -> Optional[Tuple[int, int]]:
    m = re.match(r"v?(\d+)\.(\d+)", version or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def profiler_config_from_argv(argv: List[str]) -> Dict[str, Any]:
    """vLLM's --profiler-config (JSON, `=JSON`, or the dotted `--profiler-config.KEY VALUE` form)."""
    cfg: Dict[str, Any] = {}
    for i, a in enumerate(argv):
        value = None
        if a == "--profiler-config" and i + 1 < len(argv):
            value = argv[i + 1]
        elif a.startswith("--profiler-config="):
            value = a.split("=", 1)[1]
        elif a.startswith("--profiler-config."):
            key, eq, v = a[len("--profiler-config.") :].partition("=")
            if not eq and i + 1 < len(argv):
                v = argv[i + 1]
            cfg[key.replace("-", "_")] = v
        if value:
            try:
                parsed = json.loads(value)
            except ValueError:
                continue
            if isinstance(parsed, dict):
                cfg.update(parsed)
    return cfg


def parallel_sizes(argv: List[str], kind: str) -> Optional[Dict[str, Any]]:
    """Tensor, pipeline and data parallel sizes from the server's flags, and the ranks that write traces.

    vLLM: every rank of every data-parallel engine writes a trace, because /start_profile reaches all DP
    engines (DPLBAsyncMPClient.call_utility_async in vllm/v1/engine/core_client.py broadcasts to each),
    so ranks = tp x pp x dp. SGLang: each scheduler writes `...-TP-<tp>...` (scheduler_profiler_mixin.py);
    with --enable-dp-attention the DP groups live inside the TP group (tp_size is the GPU count), else
    each DP replica has its own tp x pp.
    """

    def num(names: Tuple[str, ...]) -> Optional[int]:
        v = flag_value(argv, names)
        return int(v) if v is not None and v.isdigit() else None

    if kind == "sglang":
        tp = num(("--tp-size", "--tp", "--tensor-parallel-size"))
        pp = num(("--pp-size", "--pp", "--pipeline-parallel-size"))
        dp = num(("--dp-size", "--dp", "--data-parallel-size"))
        dp_attention = "--enable-dp-attention" in argv
    else:
        tp = num(("--tensor-parallel-size", "-tp", "--tp-size", "--tp", "--world-size"))
        pp = num(("--pipeline-parallel-size", "-pp", "--pp-size"))
        dp = num(("--data-parallel-size", "-dp", "--dp-size"))
        dp_attention = False
    if tp is None and pp is None and dp is None:
        return None
    ranks = (tp or 1) * (pp or 1) * (1 if dp_attention else (dp or 1))
    return {"tp": tp or 1, "pp": pp or 1, "dp": dp or 1, "dp_attention": dp_attention, "ranks": ranks}


def vllm_profiler_setup(argv: List[str], env: Dict[str, str], version: Optional[str]) -> Dict[str, Any]:
    """Which profiler a vLLM server runs and where its torch traces go, by its version's own rules.

    <= 0.12: the VLLM_TORCH_PROFILER_DIR / VLLM_TORCH_CUDA_PROFILE environment variables mount
    /start_profile (attach_router in vllm/entrypoints/serve/profile/api_router.py, api_server.py before).
    0.13-0.15: --profiler-config '{"profiler": "torch"|"cuda", "torch_profiler_dir": ...}' (PR #29912,
    vllm/config/profiler.py); the variables still work, deprecated. >= 0.16: the variables are gone
    (PR #33536): on those versions they mean nothing.
    """
    vt = version_tuple(version)
    cfg = profiler_config_from_argv(argv)
    env_counts = vt is None or vt < (0, 16)
    env_dir = env.get("VLLM_TORCH_PROFILER_DIR") if env_counts else None
    env_cuda = env.get("VLLM_TORCH_CUDA_PROFILE") not in (None, "", "0") if env_counts else False
    out: Dict[str, Any] = {"kind": None, "dir": None, "source": None, "ignored_env": None}
    if env.get("VLLM_TORCH_PROFILER_DIR") and not env_counts:
        out["ignored_env"] = (
            "VLLM_TORCH_PROFILER_DIR is set in the server's environment, but vLLM " f"{version} ignores it (removed in 0.16, PR #33536)"
        )
    if cfg.get("profiler") in ("torch", "cuda") and (vt is None or vt >= (0, 13)):
        out.update(kind=cfg["profiler"], source="--profiler-config")
        if cfg["profiler"] == "torch":
            out["dir"] = str(cfg.get("torch_profiler_dir") or "") or None
    # vllm/config/profiler.py (0.13-0.15): VLLM_TORCH_CUDA_PROFILE is read first, then the directory.
    elif env_cuda:
        out.update(kind="cuda", source="VLLM_TORCH_CUDA_PROFILE")
    elif env_dir:
        out.update(kind="torch", dir=env_dir, source="VLLM_TORCH_PROFILER_DIR")
    return out


def profiler_state(base: str, server: Dict[str, Any], timeout: float, api_key: Optional[str] = None) -> Dict[str, Any]:
    """Whether /start_profile would work, and with which profiler, judged without starting a profile."""
    argv = server["command_line"] or []
    env = server.get("_environ") or {}
    server.pop("_environ", None)
    if server["kind"] == "vllm" and not (server.get("simulated") and not server.get("mimic")):
        setup = vllm_profiler_setup(argv, env, server.get("version"))
        note = f"; {setup['ignored_env']}" if setup["ignored_env"] else ""
        if setup["kind"] == "cuda":
            return {
                "enabled": True,
                "kind": "cuda",
                "evidence": f"{setup['source']} selects vLLM's CUDA profiler: /start_profile works but writes no "
                f"torch trace (capture with nsys instead){note}",
            }
        if setup["kind"] == "torch":
            return {
                "enabled": True,
                "kind": "torch",
                "evidence": f"the server was started with {setup['source']} (torch, traces in {setup['dir']}){note}",
            }
        if setup["ignored_env"] and argv:
            return {
                "enabled": False,
                "kind": None,
                "evidence": f"{setup['ignored_env']}: restart it with "
                '--profiler-config \'{"profiler":"torch","torch_profiler_dir":"/abs/dir"}\'',
            }
    if server.get("simulated") and not server.get("mimic") and "--profiler-dir" in argv:
        return {"enabled": True, "kind": "torch", "evidence": "the simulator was started with --profiler-dir"}
    if server["kind"] == "sglang":
        return {
            "enabled": True,
            "kind": "torch",
            "evidence": "SGLang always serves /start_profile (traces go to SGLANG_TORCH_PROFILER_DIR or /tmp)",
        }
    status, _, _, err = http.request(base + "/start_profile", timeout, method="OPTIONS", api_key=api_key)
    if status in (200, 204, 405):
        return {"enabled": True, "kind": None, "evidence": f"/start_profile exists (OPTIONS answered {status})"}
    if status == 404:
        hint = (
            'start the server with --profiler-config \'{"profiler":"torch","torch_profiler_dir":"/abs/dir"}\''
            " (vLLM >= 0.13; before 0.13 set VLLM_TORCH_PROFILER_DIR=/abs/dir)"
            if server["kind"] == "vllm"
            else "start it with its profiler enabled"
        )
        vt = version_tuple(server.get("version"))
        if server["kind"] == "vllm" and vt is not None:
            hint = (
                'start the server with --profiler-config \'{"profiler":"torch","torch_profiler_dir":"/abs/dir"}\''
                if vt >= (0, 13)
                else f"set VLLM_TORCH_PROFILER_DIR=/abs/dir in the server's environment (vLLM {server['version']})"
            )
        if server.get("simulated") and not server.get("mimic"):
            hint = "start the simulator with --profiler-dir DIR"
        return {"enabled": False, "kind": None, "evidence": f"/start_profile answers 404: the profiler is off; {hint}"}
    return {"enabled": None, "kind": None, "evidence": f"could not tell ({err or f'OPTIONS answered {status}'})"}


# ------------------------------------------------------------------------------ the server's process


def is_local_host(host: str) -> bool:
    if host in ("localhost", "0.0.0.0", "::", "::1") or host.startswith("127."):
        return True
    try:
        mine = set(socket.gethostbyname_ex(socket.gethostname())[2])
        return socket.gethostbyname(host) in mine
    except OSError:
        return False


def listening_inodes(port: int) -> List[str]:
    inodes = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table, encoding="ascii") as f:
                next(f, None)
                for line in f:
                    cols = line.split()
                    if len(cols) > 9 and cols[3] == "0A" and int(cols[1].rsplit(":", 1)[1], 16) == port:
                        inodes.append(cols[9])
        except OSError:
            continue
    return inodes


def pid_holding(inodes: List[str]) -> Optional[int]:
    targets = {f"socket:[{i}]" for i in inodes}
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return None
    for pid in pids:
        fd_dir = f"/proc/{pid}/fd"
        try:
            for fd in os.listdir(fd_dir):
                try:
                    if os.readlink(f"{fd_dir}/{fd}") in targets:
                        return int(pid)
                except OSError:
                    continue
        except OSError:
            continue  # another user's process: not ours to read
    return None


def attach_process(out: Dict[str, Any], url: str) -> None:
    """The server's PID and command line, when it runs here and /proc lets us see it."""
    parsed = urllib.parse.urlsplit(url)
    host = parsed.hostname or "127.0.0.1"
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    if not is_local_host(host):
        return
    inodes = listening_inodes(port)
    pid = pid_holding(inodes) if inodes else None
    if pid is None:
        return
    out["pid"] = pid
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            # Redacted at once: the command line is shown and stored (--api-key, --hf-token, ...).
            out["command_line"] = auth.redact_argv([a.decode("utf-8", "replace") for a in f.read().split(b"\0") if a])
    except OSError:
        pass
    try:
        # Relative trace folders are relative to the server's working directory (vllm/config/profiler.py
        # applies abspath(expanduser()) in the server's process).
        out["cwd"] = os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        pass
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            pairs = [a.decode("utf-8", "replace").split("=", 1) for a in f.read().split(b"\0") if b"=" in a]
        out["_environ"] = {k: v for k, v in pairs if k in SERVER_ENV}
    except OSError:
        pass
