"""Nsight Systems on the host: where `nsys` is, whether its importer can run, and the server's recipe under it.

    python3 -m infbench_agent.server.nsys [--nsys PATH]

prints, as one JSON object, every nsys found (the target's setting, PATH, the CUDA toolkit, Nsight
Systems installs, and the copy inside Nsight Compute installs), the one that would be used, its
version, the importer libraries it lacks and, where something is missing, how to get it.

`nsys_recipe` turns an adopted server recipe (server/command.py's shape: kind, argv, env, version) into the
same server started under `nsys profile`, recorded from its start, with the server's own switch that
makes /start_profile and /stop_profile call cudaProfilerStart/Stop (the reader keeps the steps between
them, profile/nsys_report.py) and its layerwise NVTX markers where the version has them:
- vLLM >= 0.13: --profiler-config '{"profiler":"cuda"}' (vllm/config/profiler.py); 0.12: the
  environment VLLM_TORCH_CUDA_PROFILE=1 (vllm/entrypoints/serve/profile/api_router.py); layer ranges
  with --enable-layerwise-nvtx-tracing (ObservabilityConfig.enable_layerwise_nvtx_tracing, hooks in
  vllm/utils/nvtx_pytorch_hooks.py) where the server's --help lists it.
- SGLang: /start_profile with "activities": ["CUDA_PROFILER"] (scheduler_profiler_mixin.py calls
  cudaProfilerStart on the first GPU's rank); layer ranges with --enable-layerwise-nvtx-marker
  (server_args.enable_layerwise_nvtx_marker; model_runner.py registers PytHooks with prefix "model").
It never bounds the capture with --capture-range=cudaProfilerApi: that keeps the graph nodes captured at
start-up but drops the NVTX ranges open while they were captured, and with them every replayed kernel's
module.
"""
from __future__ import annotations

import argparse
import ctypes
import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional, Tuple

from infbench_agent.probe import command as probe
from infbench_agent.probe.argv import drop_flag

IMPORTER_LIBS = ("libdw.so.1", "libelf.so.1", "libbz2.so.1.0")
# Where installs put nsys, in the order they are tried after the setting and PATH.
INSTALL_GLOBS: Tuple[Tuple[str, str], ...] = (
    ("CUDA toolkit", "usr/local/cuda*/bin/nsys"),
    ("CUDA toolkit", "usr/local/cuda*/nsight-systems-*/bin/nsys"),
    ("Nsight Systems install", "opt/nvidia/nsight-systems/*/bin/nsys"),
    ("Nsight Systems install", "opt/nvidia/nsight-systems-cli/*/bin/nsys"),
    ("Nsight Compute install", "opt/nvidia/nsight-compute/*/host/target-linux-x64/nsys"),
)
PROFILE_FLAGS = ("--trace=cuda,nvtx", "--cuda-graph-trace=node", "--sample=none", "--cpuctxsw=none", "--trace-fork-before-exec=true")
VLLM_NVTX_FLAG = "--enable-layerwise-nvtx-tracing"
SGLANG_NVTX_FLAG = "--enable-layerwise-nvtx-marker"
GET_NSYS = (
    "Install the Nsight Systems CLI (NVIDIA's CUDA apt repository: `apt-get install nsight-systems-cli`; or the "
    "package from developer.nvidia.com/nsight-systems), or set the target's nsys path to an nsys already there "
    "(an Nsight Compute install carries one under host/target-linux-x64/)."
)


def _version_key(path: str) -> Tuple[int, ...]:
    nums = re.findall(r"\d+", path)
    return tuple(int(n) for n in nums)


def candidates(setting: Optional[str] = None, path_env: Optional[str] = None, root: str = "/") -> List[Dict[str, str]]:
    """Every nsys found, best first: the setting, PATH, then installs (newest version first within each kind)."""
    out: List[Dict[str, str]] = []
    seen = set()

    def add(path: str, source: str) -> None:
        real = os.path.realpath(path)
        if real in seen or not (os.path.isfile(path) and os.access(path, os.X_OK)):
            return
        seen.add(real)
        out.append({"path": path, "source": source})

    if setting:
        add(setting, "setting")
    on_path = shutil.which("nsys", path=path_env if path_env is not None else os.environ.get("PATH", ""))
    if on_path:
        add(on_path, "PATH")
    for source, pattern in INSTALL_GLOBS:
        for path in sorted(glob.glob(os.path.join(root, pattern)), key=_version_key, reverse=True):
            add(path, source)
    return out


def nsys_version(path: str, timeout: float = 30.0) -> Optional[str]:
    """`nsys --version`'s number ("2025.3.1.0"), or None where it does not run."""
    try:
        done = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"version\s+([\d.]+)", done.stdout + done.stderr)
    return m.group(1) if m else None


def importer_of(nsys: str) -> Optional[str]:
    """nsys's importer, QdstrmImporter, beside it or in the install's host folder."""
    here = os.path.dirname(os.path.realpath(nsys))
    # Nsight Compute 2025.3 keeps nsys in host/target-linux-x64/ and the importer in host/linux-desktop-glibc_*-x64/.
    for path in [os.path.join(here, "QdstrmImporter")] + sorted(glob.glob(os.path.join(os.path.dirname(here), "*", "QdstrmImporter"))):
        if os.path.isfile(path):
            return path
    return None


def missing_importer_libs(nsys: Optional[str] = None, ld_library_path: Optional[str] = None) -> List[str]:
    """The libraries nsys's importer (QdstrmImporter) cannot load: without them no report is written.

    `ld_library_path` is the server's LD_LIBRARY_PATH ("" where it has none): `nsys profile` runs the
    importer at the end as its own child, in the environment the server was started with, not the agent's,
    so that is where the libraries must be found. None checks this process's own.
    `ldd` on the importer where both are there (it says what the importer itself lacks); else whether
    each library the importer is known to need is in those folders or loads in this process.
    """
    importer = importer_of(nsys) if nsys else None
    ldd = shutil.which("ldd")
    env = None
    if ld_library_path is not None:
        env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
        if ld_library_path:
            env["LD_LIBRARY_PATH"] = ld_library_path
    if importer and ldd:
        try:
            done = subprocess.run([ldd, importer], capture_output=True, text=True, timeout=30, env=env)
            return sorted({line.split("=>")[0].strip() for line in done.stdout.splitlines() if "not found" in line})
        except (OSError, subprocess.SubprocessError):
            pass
    folders = [d for d in (ld_library_path or "").split(":") if d]
    missing = []
    for name in IMPORTER_LIBS:
        if any(os.path.isfile(os.path.join(d, name)) for d in folders):
            continue
        try:
            ctypes.CDLL(name)
        except OSError:
            missing.append(name)
    return missing


def importer_advice(missing: List[str]) -> str:
    return (
        f"nsys's importer needs {', '.join(missing)}, which this host lacks: without them nsys records but writes no "
        "report (.qdstrm only). Install them (Debian/Ubuntu: `apt-get install libdw1 libelf1 libbz2-1.0`), or unpack those "
        "packages (`apt-get download libdw1 libelf1 libbz2-1.0`, `dpkg-deb -x`) into a folder and put it on the "
        "server's LD_LIBRARY_PATH."
    )


def discover(setting: Optional[str] = None, ld_library_path: Optional[str] = None) -> Dict[str, Any]:
    """The nsys to use and what it lacks; `ld_library_path`: the server's, where the importer will run (see missing_importer_libs)."""
    found = candidates(setting)
    result: Dict[str, Any] = {"found": found, "nsys": None, "version": None, "missingLibs": [], "advice": None}
    if setting and not any(c["source"] == "setting" for c in found):
        result["advice"] = f"The nsys set for this target ({setting}) is not an executable file here. " + GET_NSYS
        return result
    if not found:
        result["advice"] = (
            "Nsight Systems (nsys) was not found: looked on PATH, in /usr/local/cuda*/, /opt/nvidia/nsight-systems*/ "
            "and in Nsight Compute installs. " + GET_NSYS
        )
        return result
    result["nsys"] = found[0]["path"]
    result["version"] = nsys_version(found[0]["path"])
    result["missingLibs"] = missing_importer_libs(found[0]["path"], ld_library_path)
    result["importer"] = importer_of(found[0]["path"])
    if result["missingLibs"]:
        result["advice"] = importer_advice(result["missingLibs"])
    return result


def nsys_recipe(
    recipe: Dict[str, Any],
    nsys: str,
    report_base: str,
    help_text: Optional[str] = None,
    lib_dir: Optional[str] = None,
) -> Tuple[Dict[str, Any], List[str]]:
    """The recipe started under `nsys profile`, and what changed, in words (the exact command last).

    `help_text` is the server's `--help` output, where the caller has it: the layerwise NVTX flag is
    added only where it lists the flag. `lib_dir` goes first on LD_LIBRARY_PATH (the importer's libraries).
    """
    out = json.loads(json.dumps(recipe))
    argv: List[str] = list(out["argv"])
    env: Dict[str, str] = out.setdefault("env", {})
    words: List[str] = []
    if recipe.get("kind") == "sglang":
        if help_text is not None and SGLANG_NVTX_FLAG in help_text:
            if SGLANG_NVTX_FLAG not in argv:
                argv.append(SGLANG_NVTX_FLAG)
            words.append(f"{SGLANG_NVTX_FLAG} (layer and module ranges)")
        else:
            words.append(f"no layer ranges: this SGLang's --help does not list {SGLANG_NVTX_FLAG}")
        words.append('/start_profile will ask for {"activities": ["CUDA_PROFILER"]}')
        out["start_profile_body"] = {"activities": ["CUDA_PROFILER"]}
    else:
        vt = probe.version_tuple(recipe.get("version"))
        if vt is not None and vt < (0, 13):
            env["VLLM_TORCH_CUDA_PROFILE"] = "1"
            env.pop("VLLM_TORCH_PROFILER_DIR", None)
            words.append(f"VLLM_TORCH_CUDA_PROFILE=1 in its environment (vLLM {recipe.get('version')})")
        else:
            config = '{"profiler":"cuda"}'
            argv = drop_flag(argv, "--profiler-config") + ["--profiler-config", config]
            words.append(f"--profiler-config '{config}'")
        if help_text is not None and VLLM_NVTX_FLAG in help_text:
            if VLLM_NVTX_FLAG not in argv:
                argv.append(VLLM_NVTX_FLAG)
            words.append(f"{VLLM_NVTX_FLAG} (layer and module ranges)")
        else:
            words.append(f"no layer ranges: this vLLM's --help does not list {VLLM_NVTX_FLAG}")
    if lib_dir:
        env["LD_LIBRARY_PATH"] = lib_dir + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
        words.append(f"LD_LIBRARY_PATH starts with {lib_dir}")
    out["argv"] = [nsys, "profile", *PROFILE_FLAGS, "--force-overwrite=true", "-o", report_base, *argv]
    out["nsys_report"] = report_base + ".nsys-rep"
    words.append("command: " + " ".join(shlex.quote(a) for a in out["argv"]))
    return out, words


def export_argv(nsys: str, report: str) -> List[str]:
    """`nsys export` to SQLite, beside the report (REPORT.nsys-rep -> REPORT.sqlite)."""
    base = re.sub(r"\.(nsys-rep|qdrep)$", "", report)
    return [nsys, "export", "--type", "sqlite", "--force-overwrite=true", "-o", base + ".sqlite", report]


def server_help(recipe: Dict[str, Any], timeout: float = 120.0) -> Optional[str]:
    """The server's own `--help` text (vLLM: `--help=all`), run as its recipe runs, or None where it does not say.

    The command is the recipe's argv up to the subcommand or module that starts the server (`vllm serve`,
    `-m sglang.launch_server`, a script), so that the flags listed are those of that very install.
    """
    argv: List[str] = list(recipe.get("argv") or [])
    cut = None
    for i, a in enumerate(argv):
        if a == "serve" or a.endswith("launch_server") or a.endswith(".py"):
            cut = i + 1
            break
    if cut is None:
        return None
    flag = "--help=all" if recipe.get("kind") == "vllm" and argv[cut - 1] == "serve" else "--help"
    env = dict(os.environ)
    env.update(recipe.get("env") or {})
    try:
        done = subprocess.run(argv[:cut] + [flag], capture_output=True, text=True, timeout=timeout, cwd=recipe.get("cwd") or None, env=env)
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    return done.stdout + done.stderr


def status_fields(recipe: Dict[str, Any], setting: str, report_dir: str) -> Dict[str, Any]:
    """What `server status --nsys` adds: the recipe under nsys and its change in words, or why there is none.

    `setting` is the target's nsys path, or `auto` to look for one. The report goes into `report_dir`.
    """
    # The importer runs in the server's environment under nsys: its LD_LIBRARY_PATH decides, not the agent's.
    found = discover(None if setting == "auto" else setting, (recipe.get("env") or {}).get("LD_LIBRARY_PATH", ""))
    out: Dict[str, Any] = {"nsys": {k: found.get(k) for k in ("nsys", "version", "missingLibs", "importer")}}
    if not found["nsys"] or found["missingLibs"]:
        out["nsys_advice"] = found["advice"]
        return out
    os.makedirs(report_dir, exist_ok=True)
    base = os.path.join(report_dir, "infbench-nsys")
    changed, words = nsys_recipe(recipe, found["nsys"], base, server_help(recipe))
    out["nsys_recipe"], out["nsys_change"] = changed, words
    return out


def wait_settled(path: str, settle_s: float, timeout_s: float) -> int:
    """Waits until `path` exists and its size holds for `settle_s` (nsys writes the report as the server exits); its size."""
    deadline = time.monotonic() + timeout_s
    last, since = -1, time.monotonic()
    while True:
        size = os.path.getsize(path) if os.path.isfile(path) else -1
        if size != last:
            last, since = size, time.monotonic()
        elif size > 0 and time.monotonic() - since >= settle_s:
            return size
        if time.monotonic() > deadline:
            where = f"it is {size} bytes and still growing" if size >= 0 else "it was never written"
            raise FileNotFoundError(
                f"The Nsight Systems report {path} was not complete within {timeout_s:.0f} s of the server's stop ({where}). "
                "nsys writes it as the profiled server exits: see the server's log for nsys's own words (a missing importer library, "
                "a full disk)."
            )
        time.sleep(min(0.5, settle_s / 2 or 0.1))


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m infbench_agent.server.nsys", description=__doc__.split("\n\n")[0])
    p.add_argument("--nsys", help="the nsys to use, as the target's setting names it")
    a = p.parse_args(argv)
    result = discover(a.nsys)
    sys.stdout.write(json.dumps(result) + "\n")
    return 0 if result["nsys"] and not result["missingLibs"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
