"""`server`: the inference server's recipe, and stopping and starting it on the user's word.

    server status --url U [--profiler-dir DIR]   adopt the recipe of the process serving U (and the
                                                 same recipe with the profiler on, for its version)
    server stop --url U --pid P --start-ticks T  stop exactly that process, after checking it is it
    server start --url U --recipe JSON           start a recipe detached, stream its log until ready

The controller asks the user before calling stop or start; this module never decides to. A process is
identified by its pid and its start time (field 22 of /proc/<pid>/stat), and its command line is
compared with the recipe's: a pid reused by another process is never signalled, and nothing is
matched by name. The recipe is the whole process as it ran: its command line, folder, every variable of
its environment, and where its stdout and stderr went (server/output.py), so that putting it back gives
the same process. Secret values (--api-key, *_TOKEN, a password in a URL) leave the host redacted; the
real values stay in a file only the user can read under the agent's cache folder, for the next start.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import pwd
import re
import signal
import subprocess
import sys
import time
import urllib.parse
from typing import Any, Dict, List, Optional, Tuple

from infbench_agent import auth, events, http, options
from infbench_agent.probe import command as probe
from infbench_agent.server import output as server_output
from infbench_agent.probe.argv import drop_flag
from infbench_agent.events import AgentError

# Start-up milestones in the server's log. vLLM: "Loading weights took %.2f seconds"
# (vllm/model_executor/model_loader/default_loader.py), "Capturing CUDA graphs" (its tqdm bar) and
# "Graph capturing finished in %.0f secs, took %.2f GiB" (vllm/v1/worker/gpu_model_runner.py),
# "Starting vLLM API server" (vllm/entrypoints/openai/api_server.py), uvicorn's "Application startup
# complete.". SGLang: "Load weight begin", "Capture cuda graph begin"
# (python/sglang/srt/model_executor/model_runner.py), "The server is fired up and ready to roll!"
# (python/sglang/srt/entrypoints/http_server.py).
STAGES: Tuple[Tuple[str, "re.Pattern[str]"], ...] = (
    ("weights", re.compile(r"Loading weights took|Loading safetensors checkpoint shards|Starting to load model|Load weight begin")),
    ("cuda_graphs", re.compile(r"Capturing CUDA graphs|Graph capturing finished|Capture cuda graph begin")),
    ("api", re.compile(r"Starting vLLM API server|Uvicorn running on")),
    ("ready", re.compile(r"Application startup complete|The server is fired up and ready to roll")),
)

LOG_TAIL_LINES = 20


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=options.SERVER_ACTIONS)
    # Every option, the API key's included, from the agent's one table (options.py).
    options.add_arguments(parser, "server")


def _on_signal(signum, frame) -> None:  # noqa: ANN001 - signal handler signature
    raise KeyboardInterrupt(f"signal {signum}")


def run(args: argparse.Namespace) -> int:
    # Cancel (SIGTERM from the controller, SIGHUP from a dropped session) ends a start like Ctrl-C:
    # the half-started server is stopped on the way out.
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGHUP, _on_signal)
    api_key = auth.resolve_api_key(args)
    if args.action == "status":
        result = status(
            args.url, args.timeout, api_key, args.profiler_dir, args.profile_delay_iterations, args.profile_max_iterations, args.nsys
        )
    elif args.action == "stop":
        if args.pid is None or args.start_ticks is None or args.argv_json is None:
            raise AgentError("bad_arguments", "server stop needs --pid, --start-ticks and --argv-json (from server status).")
        result = stop(args.url, args.pid, args.start_ticks, json.loads(args.argv_json), args.stop_timeout)
    else:
        # Read after the API key: the key, when given on stdin, is its first line.
        text = sys.stdin.readline() if args.recipe_stdin else args.recipe
        if not text or not text.strip():
            raise AgentError("bad_arguments", "server start needs --recipe or --recipe-stdin (JSON, from server status).")
        result = start(json.loads(text), args.start_timeout, args.timeout, api_key)
    events.emit(events.RESULT, result=result)
    return 0


# ------------------------------------------------------------------------------ adopting the recipe


def cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    path = os.path.join(base, "inference-bench", "server")
    os.makedirs(path, mode=0o700, exist_ok=True)
    return path


def start_ticks(pid: int) -> Optional[int]:
    """The process's start time in clock ticks since boot: with the pid, who it is (a reused pid differs)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: fields are counted after its last ')'.
    fields = text[text.rfind(")") + 2 :].split()
    return int(fields[19]) if len(fields) > 19 else None


def raw_argv(pid: int) -> Optional[List[str]]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [a.decode("utf-8", "replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return None


def raw_env(pid: int) -> Optional[Dict[str, str]]:
    """Every variable of the process's environment, as it was started with it; None where /proc does not let us read it.

    All of them: a site's own settings are as much the server's as VLLM_*. Bytes that are not UTF-8 are
    kept as surrogate escapes, so that a start gives the same bytes back (os.fsencode).
    """
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            pairs = [os.fsdecode(a).split("=", 1) for a in f.read().split(b"\0") if b"=" in a]
    except OSError:
        return None
    return {k: v for k, v in pairs}


def process_user(pid: int) -> Optional[str]:
    try:
        uid = os.stat(f"/proc/{pid}").st_uid
        return pwd.getpwuid(uid).pw_name
    except (OSError, KeyError):
        return None


def manager_of(cgroup_text: str) -> Dict[str, str]:
    """How the process is run, from /proc/<pid>/cgroup: a systemd service, a container, or a plain process.

    A process in a container seen from inside it has the cgroup `/` (the common case: the agent runs in
    the server's container) and is a plain process to us. Seen from the host, Docker's cgroup is
    `docker-<id>.scope` (systemd driver) or `/docker/<id>`, Podman's `libpod-<id>.scope`.
    """
    for line in cgroup_text.splitlines():
        path = line.split(":", 2)[-1]
        m = re.search(r"docker-([0-9a-f]{12,64})\.scope|/docker/([0-9a-f]{12,64})", path)
        if m:
            return {"kind": "docker", "container": (m.group(1) or m.group(2))[:12]}
        m = re.search(r"libpod-([0-9a-f]{12,64})\.scope|/libpod_parent/libpod-([0-9a-f]{12,64})", path)
        if m:
            return {"kind": "podman", "container": (m.group(1) or m.group(2))[:12]}
        # A user's login session or their own systemd instance is not a service the server belongs to.
        m = re.search(r"/system\.slice/(?:.*/)?([^/]+\.service)$", path)
        if m:
            return {"kind": "systemd", "unit": m.group(1)}
    return {"kind": "process"}


def read_manager(pid: int) -> Dict[str, str]:
    try:
        with open(f"/proc/{pid}/cgroup") as f:
            return manager_of(f.read())
    except OSError:
        return {"kind": "process"}


def _secrets_path(url: str) -> str:
    port = urllib.parse.urlsplit(url).port or 80
    return os.path.join(cache_dir(), f"secrets-{port}.json")


def keep_secrets(url: str, argv: List[str], env: Dict[str, str]) -> None:
    """The real values behind the recipe's REDACTED ones, kept on this host only (mode 0600).

    A variable is kept here whenever its redacted form differs from its value (a secret name, a token, a
    password in a URL): the recipe carries only the redacted form, and a start gives back the real one.
    """
    flags: Dict[str, str] = {}
    for i, a in enumerate(argv):
        if a.startswith("-") and "=" in a:
            name, value = a.split("=", 1)
            if auth.is_secret_name(name):
                flags[name] = value
        elif a.startswith("-") and auth.is_secret_name(a) and i + 1 < len(argv):
            flags[a] = argv[i + 1]
    # Any other argument with a secret inside (a URL's password, a token): its redacted form maps to it.
    args = {r: a for r, a in zip(auth.redact_argv(argv), argv) if r != a and r != auth.REDACTED}
    redacted_env = auth.redact_env(env)
    secret_env = {k: v for k, v in env.items() if redacted_env[k] != v}
    if not flags and not secret_env and not args:
        return
    path = _secrets_path(url)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump({"flags": flags, "env": secret_env, "args": args}, f)


def fill_secrets(recipe: Dict[str, Any]) -> Tuple[List[str], Dict[str, str]]:
    """The recipe's argv and env with the kept real values in place of REDACTED."""
    argv, env = list(recipe["argv"]), dict(recipe.get("env") or {})
    if auth.REDACTED not in json.dumps([argv, env]):
        return argv, env
    try:
        with open(_secrets_path(recipe["url"])) as f:
            kept = json.load(f)
    except (OSError, ValueError):
        kept = {}
    flags, kept_env, args = kept.get("flags") or {}, kept.get("env") or {}, kept.get("args") or {}
    missing: List[str] = []
    for i, a in enumerate(argv):
        if a == auth.REDACTED and i > 0:
            value = flags.get(argv[i - 1])
            argv[i] = value if value is not None else a
            if value is None:
                missing.append(argv[i - 1])
        elif a.endswith("=" + auth.REDACTED) and a.startswith("-"):
            name = a.split("=", 1)[0]
            value = flags.get(name)
            argv[i] = f"{name}={value}" if value is not None else a
            if value is None:
                missing.append(name)
        elif auth.REDACTED in a:
            value = args.get(a)
            argv[i] = value if value is not None else a
            if value is None:
                missing.append(f"argument {i}")
    for k, v in env.items():
        if auth.REDACTED in v:
            if k in kept_env:
                env[k] = kept_env[k]
            else:
                missing.append(k)
    if missing:
        raise AgentError(
            "server_secret_missing",
            f"The recipe's secret values ({', '.join(missing)}) are not kept on this host: they were read from the "
            "running server when its recipe was adopted, and that record is gone.",
            "Write them into the recipe you start (the recipe setting), or start the server yourself once.",
        )
    return argv, env


def adopt(url: str) -> Optional[Dict[str, Any]]:
    """The recipe of the process listening on the URL's port here, or None where there is none we can see."""
    found: Dict[str, Any] = {"pid": None, "command_line": None, "cwd": None}
    probe.attach_process(found, url)
    pid = found["pid"]
    argv = raw_argv(pid) if pid else None
    if not pid or not argv:
        return None
    env = raw_env(pid)
    keep_secrets(url, argv, env or {})
    ticks = start_ticks(pid)
    manager = read_manager(pid)
    return {
        "url": url,
        "argv": auth.redact_argv(argv),
        "cwd": found.get("cwd"),
        "env": auth.redact_env(env or {}),
        # The whole environment as the process had it (recipes adopted before kept a chosen few variables).
        "env_complete": env is not None,
        "user": process_user(pid),
        "manager": manager,
        "kind": "unknown",
        "version": None,
        "identity": {"pid": pid, "start_ticks": ticks} if ticks is not None else None,
        "stdout": server_output.describe(pid, 1, manager["kind"]),
        "stderr": server_output.describe(pid, 2, manager["kind"]),
    }


def profiler_recipe(recipe: Dict[str, Any], trace_dir: str, delay: int = 0, max_iterations: int = 0) -> Tuple[Dict[str, Any], str]:
    """The recipe with the torch profiler on, as the server's version takes it, and the change in words.

    vLLM >= 0.13: --profiler-config (vllm/config/profiler.py: profiler, torch_profiler_dir, and in the
    newest delay_iterations, max_iterations, ignore_frontend, which keeps the API server's untracked
    trace out of a bounded capture); before 0.13: VLLM_TORCH_PROFILER_DIR (probe.vllm_profiler_setup).
    SGLang always serves /start_profile: only SGLANG_TORCH_PROFILER_DIR is set, for where traces go.
    """
    out = json.loads(json.dumps(recipe))
    argv = [a for a in out["argv"]]
    env = out["env"]
    if recipe["kind"] == "sglang":
        env["SGLANG_TORCH_PROFILER_DIR"] = trace_dir
        return out, f"SGLANG_TORCH_PROFILER_DIR={trace_dir} in its environment"
    vt = probe.version_tuple(recipe.get("version"))
    # The simulator without --mimic takes its own flag (it says so at /start_profile).
    if recipe.get("simulated_plain"):
        argv = drop_flag(argv, "--profiler-dir") + ["--profiler-dir", trace_dir]
        out["argv"] = argv
        return out, f"--profiler-dir {trace_dir}"
    if vt is not None and vt < (0, 13):
        env["VLLM_TORCH_PROFILER_DIR"] = trace_dir
        return out, f"VLLM_TORCH_PROFILER_DIR={trace_dir} in its environment (vLLM {recipe['version']})"
    config: Dict[str, Any] = {"profiler": "torch", "torch_profiler_dir": trace_dir}
    if delay or max_iterations:
        if vt is None or vt >= (0, 16):
            config.update(delay_iterations=delay, max_iterations=max_iterations, ignore_frontend=True)
        elif max_iterations:
            config["max_iterations"] = max_iterations
    argv = drop_flag(argv, "--profiler-config") + ["--profiler-config", json.dumps(config, separators=(",", ":"))]
    out["argv"] = argv
    return out, f"--profiler-config '{json.dumps(config, separators=(',', ':'))}'"


def status(
    url: str,
    timeout: float,
    api_key: Optional[str],
    trace_dir: Optional[str],
    delay: int,
    max_iterations: int,
    nsys: Optional[str] = None,
) -> Dict[str, Any]:
    server = probe.probe_server(url, timeout, api_key)
    recipe = adopt(url)
    result: Dict[str, Any] = {
        "action": "status",
        "recipe": recipe,
        "running": bool(server["reachable"]),
        "server": server,
        # The environment a command typed on this host starts with (this agent's, from the same login), so
        # that a start can be shown as that shell would run it: the variables it sets and unsets.
        "shell_env": auth.redact_env(dict(os.environ)),
    }
    if recipe is None:
        why = (
            "no process here listens on its port"
            if not server["reachable"]
            else "the process serving it is not visible from this host (another container or user)"
        )
        events.log(f"No recipe adopted for {url}: {why}.", "warn")
        return result
    recipe["kind"], recipe["version"] = server["kind"], server["version"]
    if server.get("simulated") and not server.get("mimic"):
        recipe["simulated_plain"] = True
    result["estimate_s"] = last_start_s(recipe)
    if trace_dir == "auto":
        trace_dir = os.path.join(cache_dir(), "traces", time.strftime("%Y%m%d-%H%M%S"))
    if trace_dir:
        changed, change = profiler_recipe(recipe, trace_dir, delay, max_iterations)
        result["profiler_recipe"], result["profiler_change"] = changed, change
    if nsys:
        from infbench_agent.server import nsys as nsys_host

        result.update(nsys_host.status_fields(recipe, nsys, os.path.join(cache_dir(), "nsys", time.strftime("%Y%m%d-%H%M%S"))))
    return result


# -------------------------------------------------------------------------------------------- stop


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            # A zombie has ended; only its parent's wait is missing.
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def descendants(pid: int) -> List[Tuple[int, int]]:
    """The process's children, grandchildren, ... as (pid, start ticks), from the parent pid in /proc/<p>/stat."""
    parents: Dict[int, List[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        parents.setdefault(ppid, []).append(int(name))
    found: List[Tuple[int, int]] = []
    todo = list(parents.get(pid, []))
    while todo:
        child = todo.pop()
        ticks = start_ticks(child)
        if ticks is not None:
            found.append((child, ticks))
        todo += parents.get(child, [])
    return found


def wait_children(children: List[Tuple[int, int]], deadline: float) -> None:
    """Waits for the server's children to end with it; after the bound, SIGKILL to those still the same processes."""
    while any(_alive(p) and start_ticks(p) == t for p, t in children) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = [(p, t) for p, t in children if _alive(p) and start_ticks(p) == t]
    for p, t in left:
        events.log(f"pid {p}, a child of the server, outlived it: SIGKILL", "warn")
        os.kill(p, signal.SIGKILL)
    kill_deadline = time.monotonic() + 5
    while any(_alive(p) for p, _ in left) and time.monotonic() < kill_deadline:
        time.sleep(0.05)


def check_identity(pid: int, ticks: int, argv: List[str]) -> None:
    now_ticks = start_ticks(pid)
    now_argv = raw_argv(pid)
    if now_ticks is None or now_argv is None:
        raise AgentError("server_identity_changed", f"Process {pid} is gone: the server stopped or was restarted since it was adopted.")
    if now_ticks != ticks or auth.redact_argv(now_argv) != argv:
        raise AgentError(
            "server_identity_changed",
            f"Process {pid} is not the server adopted: "
            + (
                "it started at another time (the pid was reused, or the server restarted)"
                if now_ticks != ticks
                else "its command line differs"
            )
            + ". Nothing was stopped.",
            "Look at the server again (infbench server status) and stop it from that.",
        )


def stop(url: str, pid: int, ticks: int, argv: List[str], stop_timeout: float) -> Dict[str, Any]:
    check_identity(pid, ticks, argv)
    manager = read_manager(pid)
    began = time.monotonic()
    if manager["kind"] == "systemd":
        command = ["systemctl", "stop", manager["unit"]]
        events.emit(events.SERVER_STATE, stage="stopping", message=" ".join(command))
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            raise AgentError(
                "server_manual",
                f"`{' '.join(command)}` failed: {(done.stderr or done.stdout).strip()[:300]}",
                f"Run it yourself with the rights it needs (sudo {' '.join(command)}); the tool waits for the port to close.",
            )
    elif manager["kind"] in ("docker", "podman"):
        command = [manager["kind"], "stop", manager["container"]]
        raise AgentError(
            "server_manual",
            f"The server runs in {manager['kind']} container {manager['container']}, which the tool does not drive.",
            f"Run `{' '.join(command)}` on the host yourself.",
        )
    else:
        events.emit(events.SERVER_STATE, stage="stopping", message=f"SIGTERM to pid {pid}")
    # vLLM's engine core and GPU workers are its children: the GPUs are free only once they have ended too.
    children = descendants(pid)
    if manager["kind"] == "process":
        os.kill(pid, signal.SIGTERM)
    deadline = began + stop_timeout
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    if _alive(pid):
        # Only after the bound, and only the same process (its identity checked once more).
        if start_ticks(pid) == ticks:
            events.log(f"pid {pid} did not end {stop_timeout:.0f} s after SIGTERM: SIGKILL", "warn")
            os.kill(pid, signal.SIGKILL)
        kill_deadline = time.monotonic() + 10
        while _alive(pid) and time.monotonic() < kill_deadline:
            time.sleep(0.1)
        if _alive(pid):
            raise AgentError("server_stop_failed", f"pid {pid} is still there after SIGKILL (a process stuck in the kernel?).")
    wait_children(children, max(deadline, time.monotonic() + 10))
    port = urllib.parse.urlsplit(url).port or 80
    port_deadline = time.monotonic() + 30
    while probe.listening_inodes(port) and time.monotonic() < port_deadline:
        time.sleep(0.2)
    elapsed = time.monotonic() - began
    events.emit(events.SERVER_STATE, stage="stopped", message=f"pid {pid} ended after {elapsed:.1f} s", elapsed_s=round(elapsed, 3))
    return {"action": "stop", "recipe": None, "running": False, "stopped_pid": pid, "elapsed_s": round(elapsed, 3)}


# ------------------------------------------------------------------------------------------- start


def recipe_key(recipe: Dict[str, Any]) -> str:
    """Which starts count as the same recipe (for the estimate): argv, cwd and env, not the process."""
    text = json.dumps([recipe["argv"], recipe.get("cwd"), sorted((recipe.get("env") or {}).items())])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _history_path() -> str:
    return os.path.join(cache_dir(), "starts.json")


def last_start_s(recipe: Dict[str, Any]) -> Optional[float]:
    try:
        with open(_history_path()) as f:
            value = json.load(f).get(recipe_key(recipe))
    except (OSError, ValueError):
        return None
    return float(value) if isinstance(value, (int, float)) else None


def remember_start(recipe: Dict[str, Any], seconds: float) -> None:
    try:
        with open(_history_path()) as f:
            history = json.load(f)
    except (OSError, ValueError):
        history = {}
    history[recipe_key(recipe)] = round(seconds, 3)
    with open(_history_path(), "w") as f:
        json.dump(history, f)


def stage_of(line: str) -> Optional[str]:
    for stage, pattern in STAGES:
        if pattern.search(line):
            return stage
    return None


def _ready(base: str, timeout: float, api_key: Optional[str]) -> bool:
    health, _, _, _ = http.request(base + "/health", timeout, api_key=api_key)
    if health != 200:
        return False
    models, _, _, _ = http.request(base + "/v1/models", timeout, api_key=api_key)
    return models == 200


def start(recipe: Dict[str, Any], start_timeout: float, timeout: float, api_key: Optional[str]) -> Dict[str, Any]:
    manager = recipe.get("manager") or {"kind": "process"}
    me = pwd.getpwuid(os.getuid()).pw_name
    if recipe.get("user") and recipe["user"] != me and manager["kind"] == "process":
        raise AgentError(
            "server_manual",
            f"The server ran as {recipe['user']}; the agent runs as {me} and cannot start it as that user.",
            "Connect as that user, or start the server yourself with the recipe's command.",
        )
    if manager["kind"] != "process" and manager["kind"] != "systemd":
        raise AgentError(
            "server_manual",
            f"The server runs in {manager['kind']} container {manager.get('container')}, which the tool does not drive.",
            f"Run `{manager['kind']} start {manager.get('container')}` yourself (or recreate it with the changed flags).",
        )
    argv, env = fill_secrets(recipe)
    base = recipe["url"].rstrip("/")
    port = urllib.parse.urlsplit(recipe["url"]).port or 80
    if probe.listening_inodes(port):
        raise AgentError("server_start_failed", f"Something already listens on port {port}: the server was not started twice.")
    estimate = last_start_s(recipe)
    log_file = os.path.join(cache_dir(), f"server-{port}-{time.strftime('%Y%m%d-%H%M%S')}.log")
    began = time.monotonic()
    if manager["kind"] == "systemd":
        # Changed flags go through a drop-in; the unit's own file is left as it was.
        raise AgentError(
            "server_manual",
            f"The server is the systemd unit {manager['unit']}.",
            f"Run `sudo systemctl start {manager['unit']}` (a changed command line goes in `sudo systemctl edit {manager['unit']}` "
            "as ExecStart=); the tool waits for the server to answer.",
        )
    # Its stdout and stderr where they went before: the user's own log file (appended), /dev/null, the journal.
    try:
        output = server_output.plan(recipe.get("stdout"), recipe.get("stderr"), log_file)
    except OSError as e:
        raise AgentError(
            "server_start_failed", f"The server was not started: {e}.", "Check that the file is still there and writable by this user."
        ) from e
    for note in output.notes:
        events.log(f"server output: {note}", "warn" if note.endswith("goes to " + log_file) else "info")
    try:
        # A session of its own: the server outlives this agent, its SSH session and a Cancel of the run.
        proc = subprocess.Popen(
            output.prefix + argv,
            cwd=recipe.get("cwd") or None,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=output.stdout,
            stderr=output.stderr,
            start_new_session=True,
        )
    finally:
        output.close()
    log_where = output.where
    ticks = start_ticks(proc.pid)
    # Said at once: a controller whose agent is killed mid-start (a dropped connection) can still stop this one by its identity.
    events.emit(
        events.SERVER_STATE,
        stage="starting",
        message=f"pid {proc.pid}: {' '.join(recipe['argv'][:3])} … (log {log_where})",
        estimate_s=estimate,
        **({"identity": {"pid": proc.pid, "start_ticks": ticks}} if ticks is not None else {}),
    )
    tail: List[str] = []
    # The start-up log read from the files it writes, each from where this start began (the user's earlier lines are not its).
    offsets = dict(output.follow)
    partials = {path: b"" for path in offsets}

    def follow_log() -> None:
        nonlocal tail
        lines: List[bytes] = []
        for path in offsets:
            try:
                with open(path, "rb") as f:
                    f.seek(offsets[path])
                    chunk = f.read()
            except OSError:
                # Moved away under it (a log rotation): what it writes next is not ours to find.
                chunk = b""
            offsets[path] += len(chunk)
            split = (partials[path] + chunk).split(b"\n")
            partials[path] = split.pop()
            lines += split
        for raw in lines:
            line = raw.decode("utf-8", "replace").rstrip("\r")
            tail = (tail + [line])[-LOG_TAIL_LINES:]
            stage = stage_of(line)
            if stage:
                events.emit(events.SERVER_LOG, line=line, stage=stage)
                events.emit(
                    events.SERVER_STATE,
                    stage=stage,
                    message=line.strip()[:200],
                    elapsed_s=round(time.monotonic() - began, 3),
                    estimate_s=estimate,
                )
            else:
                events.emit(events.SERVER_LOG, line=line)

    next_check = 0.0
    try:
        while True:
            follow_log()
            code = proc.poll()
            if code is not None:
                # What it wrote between the last read and its exit: the lines that say why.
                follow_log()
                events.emit(events.SERVER_STATE, stage="failed", message=f"exited with code {code}")
                raise AgentError(
                    "server_start_failed",
                    f"The server exited with code {code} while starting. "
                    + (
                        "Its log's last lines:\n" + "\n".join(tail[-LOG_TAIL_LINES:])
                        if offsets
                        else f"Its output goes to {log_where}, as before."
                    ),
                    f"The whole log is {log_where} on the host." if offsets else "Run its command by hand on the host to see why it ended.",
                )
            now = time.monotonic()
            if now >= next_check:
                next_check = now + 0.5
                if _ready(base, timeout, api_key):
                    break
            if now - began > start_timeout:
                _end_started(proc)
                raise AgentError(
                    "server_start_timeout",
                    f"The server did not answer /health and /v1/models within {start_timeout:.0f} s; it was stopped. Last lines:\n"
                    + "\n".join(tail),
                    f"The whole log is {log_where} on the host.",
                )
            time.sleep(0.1)
    except KeyboardInterrupt:
        # Cancelled mid-start: the half-started server is ours, so it goes; the controller puts the original back.
        _end_started(proc)
        raise
    ready_s = time.monotonic() - began
    remember_start(recipe, ready_s)
    adopted = dict(recipe)
    adopted["identity"] = {"pid": proc.pid, "start_ticks": ticks} if ticks is not None else None
    # What /proc says it runs once ready, which a stop checks: a script (a wrapper such as a site's nsys, through
    # its shebang's interpreter or `env`) reads as its interpreter and the script, not as the recipe's argv.
    seen = raw_argv(proc.pid)
    if seen and auth.redact_argv(seen) != recipe["argv"]:
        adopted["argv"] = auth.redact_argv(seen)
        events.log(f"pid {proc.pid} reads as {' '.join(adopted['argv'][:3])} … (a script started through its interpreter)", "debug")
    events.emit(events.SERVER_STATE, stage="ready", message=f"ready after {ready_s:.1f} s (pid {proc.pid})", elapsed_s=round(ready_s, 3))
    return {
        "action": "start",
        "recipe": adopted,
        "running": True,
        "log_file": log_where,
        "ready_s": round(ready_s, 3),
        "estimate_s": estimate,
    }


def _end_started(proc: "subprocess.Popen[bytes]") -> None:
    """Stops a server this agent started (its own child, so its pid is certain)."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)
