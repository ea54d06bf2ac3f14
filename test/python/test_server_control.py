"""The `server` command: a recipe adopted from a real process (the simulator), stopped by pid and
identity only, started again detached with its start-up log followed to ready, and a start that fails;
the server put back as the same process: command line, folder, whole environment, and its stdout and
stderr where the user had sent them."""
import contextlib
import io
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import unittest.mock

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "agent"))

from infbench_agent import events  # noqa: E402
from infbench_agent.server import command as server  # noqa: E402
from infbench_agent.server import output as server_output  # noqa: E402
from infbench_agent.events import AgentError  # noqa: E402

SIM = os.path.join(ROOT, "simulator", "vllm_sim.py")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def quietly(fn, *args):
    """Runs fn with the agent's events captured; returns (its value, the events)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        value = fn(*args)
    seen = [json.loads(line) for line in out.getvalue().splitlines() if line.startswith("{")]
    for e in seen:
        assert not events.problems(e), events.problems(e)
    return value, seen


class ManagerTest(unittest.TestCase):
    def test_tells_a_service_a_container_and_a_plain_process_apart(self):
        self.assertEqual(server.manager_of("0::/system.slice/vllm.service\n"), {"kind": "systemd", "unit": "vllm.service"})
        docker = "0::/system.slice/docker-" + "a" * 64 + ".scope\n"
        self.assertEqual(server.manager_of(docker), {"kind": "docker", "container": "a" * 12})
        self.assertEqual(server.manager_of("12:memory:/docker/" + "b" * 64 + "\n")["kind"], "docker")
        self.assertEqual(server.manager_of("0::/machine.slice/libpod-" + "c" * 64 + ".scope\n")["kind"], "podman")
        # A login session, a user's own systemd, the inside of a container: a process the tool starts itself.
        self.assertEqual(server.manager_of("0::/user.slice/user-1000.slice/session-3.scope\n"), {"kind": "process"})
        self.assertEqual(server.manager_of("0::/user.slice/user-1000.slice/user@1000.service/app.slice/x.service\n"), {"kind": "process"})
        self.assertEqual(server.manager_of("0::/\n"), {"kind": "process"})


class ProfilerRecipeTest(unittest.TestCase):
    def recipe(self, kind, version, argv=None):
        return {"url": "http://127.0.0.1:8000", "argv": argv or ["vllm", "serve", "m"], "env": {}, "kind": kind, "version": version}

    def test_vllm_016_takes_the_profiler_config_with_a_bounded_capture(self):
        changed, words = server.profiler_recipe(self.recipe("vllm", "0.16.0"), "/t", delay=8, max_iterations=4)
        config = json.loads(changed["argv"][changed["argv"].index("--profiler-config") + 1])
        self.assertEqual(
            config,
            {"profiler": "torch", "torch_profiler_dir": "/t", "delay_iterations": 8, "max_iterations": 4, "ignore_frontend": True},
        )
        self.assertIn("--profiler-config", words)

    def test_vllm_before_013_takes_the_environment_variable(self):
        changed, words = server.profiler_recipe(self.recipe("vllm", "0.11.2"), "/t")
        self.assertEqual(changed["env"], {"VLLM_TORCH_PROFILER_DIR": "/t"})
        self.assertEqual(changed["argv"], ["vllm", "serve", "m"])

    def test_an_existing_profiler_config_is_replaced_not_doubled(self):
        argv = ["vllm", "serve", "m", "--profiler-config.profiler", "cuda", "--profiler-config={}"]
        changed, _ = server.profiler_recipe(self.recipe("vllm", "0.16.0", argv), "/t")
        self.assertEqual(changed["argv"][:3], ["vllm", "serve", "m"])
        self.assertEqual(sum(a.startswith("--profiler-config") for a in changed["argv"]), 1)

    def test_sglang_only_gets_its_trace_folder(self):
        changed, _ = server.profiler_recipe(self.recipe("sglang", "0.5.2"), "/t")
        self.assertEqual(changed["env"], {"SGLANG_TORCH_PROFILER_DIR": "/t"})


class StagesTest(unittest.TestCase):
    def test_reads_vllm_and_sglang_start_up_milestones(self):
        self.assertEqual(server.stage_of("INFO 10-06 12:00:31 [default_loader.py:272] Loading weights took 3.22 seconds"), "weights")
        self.assertEqual(server.stage_of("Capturing CUDA graphs (decode, FULL): 100%|##| 4/4"), "cuda_graphs")
        self.assertEqual(
            server.stage_of("[2025-05-02 16:14:33] Capture cuda graph begin. This can take up to several minutes."), "cuda_graphs"
        )
        self.assertEqual(server.stage_of("INFO:     Application startup complete."), "ready")
        self.assertIsNone(server.stage_of("INFO 10-06 12:00:31 [kv_cache_utils.py:1087] GPU KV cache size: 49,152 tokens"))


class LifecycleTest(unittest.TestCase):
    """A real process: the simulator, started with a short start-up, adopted, stopped and started again."""

    def setUp(self):
        self.cache = tempfile.mkdtemp(prefix="ib-server-cache-")
        os.environ["XDG_CACHE_HOME"] = self.cache
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.argv = [
            sys.executable,
            SIM,
            "--mimic",
            "vllm-0.16",
            "--port",
            str(self.port),
            "--startup-seconds",
            "0.5",
            "--api-key",
            "s3cret",
        ]
        self.procs = []

    def tearDown(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()

    def recipe_of_running(self):
        # Its output into a log file of its own, as a user's `> server.log 2>&1`: where a restart writes and is followed.
        with open(os.path.join(self.cache, "server.log"), "ab") as log:
            proc = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT)
        self.procs.append(proc)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            recipe = server.adopt(self.url)
            if recipe:
                return proc, recipe
            time.sleep(0.1)
        self.fail("the simulator did not listen")

    def test_adopts_stops_by_identity_and_starts_the_same_command_again(self):
        proc, recipe = self.recipe_of_running()
        self.assertEqual(recipe["identity"]["pid"], proc.pid)
        self.assertEqual(recipe["argv"][-1], "REDACTED", "the API key leaves the host redacted")
        self.assertEqual(recipe["manager"], {"kind": "process"})
        self.assertEqual(recipe["cwd"], os.getcwd())

        # Another start time under the same pid is another process: refused, nothing signalled.
        with self.assertRaises(AgentError) as refused:
            server.stop(self.url, proc.pid, recipe["identity"]["start_ticks"] + 1, recipe["argv"], 5)
        self.assertEqual(refused.exception.code, "server_identity_changed")
        self.assertIsNone(proc.poll())

        result, seen = quietly(server.stop, self.url, proc.pid, recipe["identity"]["start_ticks"], recipe["argv"], 5)
        self.assertEqual(proc.wait(5), 0, "SIGTERM let it end its own way")
        self.assertEqual(result["stopped_pid"], proc.pid)
        self.assertEqual([e["stage"] for e in seen if e["type"] == "server.state"], ["stopping", "stopped"])

        result, seen = quietly(server.start, recipe, 30, 2, "s3cret")
        started = result["recipe"]["identity"]["pid"]
        self.addCleanup(lambda: os.kill(started, 9) if server._alive(started) else None)
        stages = [e["stage"] for e in seen if e["type"] == "server.state"]
        self.assertEqual(stages[0], "starting")
        for stage in ("weights", "cuda_graphs", "api", "ready"):
            self.assertIn(stage, stages)
        self.assertTrue(any("Loading weights took" in e["line"] for e in seen if e["type"] == "server.log"))
        again = server.adopt(self.url)
        self.assertEqual(again["argv"], recipe["argv"], "started with the same command line, secret filled in on the host")
        self.assertEqual(again["identity"]["pid"], started)
        self.assertGreater(result["ready_s"], 0.5)
        # The next start of the same recipe is estimated from this one.
        self.assertEqual(server.last_start_s(recipe), result["ready_s"])
        quietly(server.stop, self.url, started, again["identity"]["start_ticks"], again["argv"], 5)
        self.assertFalse(server._alive(started))

    def test_stop_waits_for_the_servers_children_and_ends_one_that_outlives_it(self):
        # A server whose worker ignores SIGTERM and outlives it, holding what a GPU worker would hold.
        script = (
            "import socket, subprocess, sys, time\n"
            "s = socket.socket(); s.bind(('127.0.0.1', int(sys.argv[1]))); s.listen()\n"
            "subprocess.Popen([sys.executable, '-c', 'import signal, time; signal.signal(15, signal.SIG_IGN); time.sleep(120)'])\n"
            "time.sleep(120)\n"
        )
        proc = subprocess.Popen([sys.executable, "-c", script, str(self.port)])
        self.procs.append(proc)
        deadline = time.monotonic() + 20
        recipe = None
        while recipe is None or not server.descendants(proc.pid):
            self.assertLess(time.monotonic(), deadline, "the stand-in server did not come up")
            time.sleep(0.1)
            recipe = server.adopt(self.url)
        ((worker, _),) = server.descendants(proc.pid)
        _, seen = quietly(server.stop, self.url, proc.pid, recipe["identity"]["start_ticks"], recipe["argv"], 1)
        proc.wait(5)
        self.assertFalse(server._alive(worker), "the worker that ignored SIGTERM was ended after the bound")
        self.assertTrue(any(e["type"] == "log" and f"pid {worker}, a child of the server" in e["message"] for e in seen))

    def test_a_start_that_fails_says_the_log_tail(self):
        proc, recipe = self.recipe_of_running()
        quietly(server.stop, self.url, proc.pid, recipe["identity"]["start_ticks"], recipe["argv"], 5)
        proc.wait(5)
        bad = dict(recipe, argv=recipe["argv"] + ["--no-such-flag"])
        with self.assertRaises(AgentError) as failed:
            quietly(server.start, bad, 30, 2, "s3cret")
        self.assertEqual(failed.exception.code, "server_start_failed")
        self.assertIn("unrecognized arguments: --no-such-flag", failed.exception.message)


def process_as_seen(pid):
    """What a user compares of a process in /proc: command line, folder, environment (a set) and where fd 1 and 2 go."""
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        cmdline = f.read()
    with open(f"/proc/{pid}/environ", "rb") as f:
        environ = {e for e in f.read().split(b"\0") if e}
    return {
        "cmdline": cmdline,
        "cwd": os.readlink(f"/proc/{pid}/cwd"),
        "environ": environ,
        "fd1": os.readlink(f"/proc/{pid}/fd/1"),
        "fd2": os.readlink(f"/proc/{pid}/fd/2"),
    }


def site_environment(home):
    """A shell's environment of about 35 variables: a site's own settings, a secret, and what a login sets."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": home,
        "USER": os.environ.get("USER", "bench"),
        "LOGNAME": os.environ.get("USER", "bench"),
        "SHELL": "/bin/bash",
        "LANG": "C.UTF-8",
        "TERM": "xterm-256color",
        "SITE_SETTING": "abc",
        "SITE_QUEUE": "batch-7",
        "SITE_NOTE": "two words; and $dollars",
        "HF_TOKEN": "hf_" + "a1b2c3d4" * 4,
        "MODEL_STORE_URL": "https://reader:pa55word@store.example/models",
        "VLLM_LOGGING_LEVEL": "INFO",
        "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
        "OMP_NUM_THREADS": "4",
    }
    for i in range(18):
        env[f"LAB_VAR_{i:02d}"] = f"value {i}"
    return env


class ExactRestoreTest(unittest.TestCase):
    """The change a phase makes (stop, start a variant, put the original back) leaves the same process as the user started."""

    def setUp(self):
        self.cache = tempfile.mkdtemp(prefix="ib-server-cache-")
        os.environ["XDG_CACHE_HOME"] = self.cache
        self.folder = tempfile.mkdtemp(prefix="ib-user-server-")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.started = []

    def tearDown(self):
        for pid in self.started:
            if server._alive(pid):
                os.kill(pid, 9)

    def start_from_a_shell(self):
        # As a user types it in their own folder: `python3 -u sim ... > its-own.log 2>&1`, from a shell with its own environment.
        line = f"exec {sys.executable} -u {SIM} --mimic vllm-0.16 --port {self.port} --startup-seconds 0.3 > its-own.log 2>&1"
        shell = subprocess.Popen(["/bin/bash", "-c", line], cwd=self.folder, env=site_environment(self.folder), start_new_session=True)
        self.started.append(shell.pid)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            recipe = server.adopt(self.url)
            if recipe:
                return recipe
            time.sleep(0.1)
        self.fail("the simulator did not listen")

    def wait_ready(self, recipe):
        result, seen = quietly(server.start, recipe, 30, 2, None)
        self.started.append(result["recipe"]["identity"]["pid"])
        return result, seen

    def test_puts_back_the_same_command_line_folder_environment_and_log_file(self):
        recipe = self.start_from_a_shell()
        pid = recipe["identity"]["pid"]
        before = process_as_seen(pid)
        self.assertGreaterEqual(len(before["environ"]), 35)
        log = os.path.join(self.folder, "its-own.log")
        self.assertEqual(recipe["stdout"], {"kind": "file", "target": log, "path": log})
        self.assertEqual(recipe["stderr"], recipe["stdout"])
        self.assertTrue(recipe["env_complete"])
        self.assertEqual(recipe["env"]["SITE_SETTING"], "abc")
        # Secrets stay on the host: the recipe (kept in the workspace's run folder) carries none of them.
        self.assertEqual(recipe["env"]["HF_TOKEN"], "REDACTED")
        self.assertNotIn("pa55word", json.dumps(recipe))
        self.assertNotIn("a1b2c3d4", json.dumps(recipe))
        with open(log, "rb") as f:
            first_lines = f.read()

        quietly(server.stop, self.url, pid, recipe["identity"]["start_ticks"], recipe["argv"], 5)

        # A variant: the original environment plus its own change, writing to the same log.
        variant = json.loads(json.dumps(recipe))
        variant["env"]["VLLM_LOGGING_LEVEL"] = "DEBUG"
        variant["argv"] += ["--served-model-name", "variant"]
        result, seen = self.wait_ready(variant)
        variant_pid = result["recipe"]["identity"]["pid"]
        during = process_as_seen(variant_pid)
        self.assertEqual(during["environ"], (before["environ"] - {b"VLLM_LOGGING_LEVEL=INFO"}) | {b"VLLM_LOGGING_LEVEL=DEBUG"})
        self.assertEqual((during["fd1"], during["fd2"]), (before["fd1"], before["fd2"]))
        # Its start-up log was followed from the user's file, from where this start began.
        logged = [e["line"] for e in seen if e["type"] == "server.log"]
        self.assertTrue(any("Loading weights took" in line for line in logged))
        self.assertEqual(result["log_file"], log)
        quietly(server.stop, self.url, variant_pid, result["recipe"]["identity"]["start_ticks"], result["recipe"]["argv"], 5)

        result, _ = self.wait_ready(recipe)
        after = process_as_seen(result["recipe"]["identity"]["pid"])
        self.assertNotEqual(result["recipe"]["identity"]["pid"], pid)
        self.assertEqual(after["environ"] - before["environ"], set(), "no variable the original did not have")
        self.assertEqual(before["environ"] - after["environ"], set(), "every variable the original had")
        self.assertEqual(after, before)
        with open(log, "rb") as f:
            whole = f.read()
        self.assertTrue(whole.startswith(first_lines), "the user's earlier lines are kept: the log is appended to")
        self.assertEqual(whole.count(b"Loading weights took"), 3, "the original's, the variant's and the restored server's start-ups")

    def test_an_environment_over_the_argument_limit_is_put_back_through_the_agents_command(self):
        # A site that exports long settings (module systems' lists, a cluster's host lists): the recipe,
        # which carries every variable, passes Linux's 128 KiB limit on one argument.
        # (Each variable stays under that limit: Linux holds every environment string to it as well.)
        hosts = {f"SITE_HOSTS_{r}": ",".join(f"node{r}-{i:04d}.cluster.example" for i in range(1500)) for r in range(6)}
        self.assertGreater(sum(len(v) for v in hosts.values()), 131072)
        line = f"exec {sys.executable} -u {SIM} --mimic vllm-0.16 --port {self.port} --startup-seconds 0.3 >> its-own.log 2>&1"
        env = dict(site_environment(self.folder), **hosts)
        shell = subprocess.Popen(["/bin/bash", "-c", line], cwd=self.folder, env=env, start_new_session=True)
        self.started.append(shell.pid)
        deadline = time.monotonic() + 20
        recipe = None
        while recipe is None and time.monotonic() < deadline:
            recipe = server.adopt(self.url)
            time.sleep(0.1)
        self.assertIsNotNone(recipe, "the simulator did not listen")
        before = process_as_seen(recipe["identity"]["pid"])
        quietly(server.stop, self.url, recipe["identity"]["pid"], recipe["identity"]["start_ticks"], recipe["argv"], 5)
        text = json.dumps(recipe)
        cmd_env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "agent"))
        start = [sys.executable, "-m", "infbench_agent", "server", "start", "--url", self.url, "--start-timeout", "30"]
        # As one argument, the start cannot even be run.
        with self.assertRaises(OSError) as refused:
            subprocess.run(start + ["--recipe", text], env=cmd_env, capture_output=True, timeout=60)
        self.assertEqual(refused.exception.errno, 7)  # E2BIG
        # On stdin it is.
        proc = subprocess.run(start + ["--recipe-stdin"], input=text + "\n", env=cmd_env, capture_output=True, text=True, timeout=60)
        found = [json.loads(x) for x in proc.stdout.splitlines() if x.startswith("{")]
        result = next((e["result"] for e in found if e["type"] == "result"), None)
        self.assertIsNotNone(result, proc.stdout[-2000:] + proc.stderr[-2000:])
        pid = result["recipe"]["identity"]["pid"]
        self.started.append(pid)
        self.assertEqual(process_as_seen(pid), before)


class OutputTargetTest(unittest.TestCase):
    def target_of(self, **streams):
        proc = subprocess.Popen(["sleep", "30"], **streams)
        self.addCleanup(proc.wait)
        self.addCleanup(proc.kill)
        return proc, server_output.describe(proc.pid, 1)

    def test_a_pipe_names_its_reader_and_goes_to_the_tools_log_with_a_note(self):
        proc, out = self.target_of(stdout=subprocess.PIPE)
        self.assertEqual(out["kind"], "pipe")
        self.assertEqual(out["peer"].split(" ")[:2], ["pid", str(os.getpid())], "this test holds the pipe's other end")
        tool_log = os.path.join(tempfile.mkdtemp(), "tool.log")
        plan = server_output.plan(out, out, tool_log)
        plan.close()
        self.assertEqual(plan.follow, [(tool_log, 0)])
        self.assertEqual(plan.stderr, subprocess.STDOUT)
        self.assertIn(f"its stdout went to a pipe to pid {os.getpid()}", plan.notes[0])
        proc.stdout.close()

    def test_dev_null_stays_dev_null(self):
        _, out = self.target_of(stdout=subprocess.DEVNULL)
        self.assertEqual(out["kind"], "null")
        plan = server_output.plan(out, out, "/nonexistent/tool.log")
        self.assertEqual((plan.stdout, plan.stderr, plan.follow), (subprocess.DEVNULL, subprocess.DEVNULL, []))

    def test_a_socket_names_what_its_other_end_is_bound_to_and_journald_s_is_the_journal(self):
        path = os.path.join(tempfile.mkdtemp(), "stdout.sock")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(path)
        listener.listen()
        self.addCleanup(listener.close)
        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        client.connect(path)
        accepted, _ = listener.accept()
        self.addCleanup(accepted.close)
        _, out = self.target_of(stdout=client.fileno())
        client.close()
        self.assertEqual((out["kind"], out["peer"]), ("socket", path))
        # The same socket, were it journald's: the journal, put back through systemd-cat (which execs the server itself).
        journald = unittest.mock.patch.object(server_output, "JOURNAL_STDOUT", path)
        with journald:
            proc, out = self.target_of(stdout=accepted.fileno(), stderr=accepted.fileno())
        self.assertEqual(out["kind"], "socket", "the listener's own end is no stream to the journal")
        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        client.connect(path)
        self.addCleanup(client.close)
        self.addCleanup(listener.accept()[0].close)
        with journald:
            _, out = self.target_of(stdout=client.fileno(), stderr=client.fileno())
        self.assertEqual(out["kind"], "journal")
        with unittest.mock.patch.object(server_output.shutil, "which", lambda name: "/usr/bin/" + name):
            plan = server_output.plan(out, out, "/nonexistent/tool.log")
        self.assertEqual((plan.prefix, plan.follow), (["systemd-cat"], []))
        with unittest.mock.patch.object(server_output.shutil, "which", lambda name: None):
            plan = server_output.plan(out, out, os.path.join(tempfile.mkdtemp(), "tool.log"))
        plan.close()
        self.assertIn("systemd-cat is not installed here", plan.notes[0])

    def test_separate_files_for_stdout_and_stderr_are_each_appended_to(self):
        folder = tempfile.mkdtemp()
        with open(os.path.join(folder, "out.log"), "wb") as o, open(os.path.join(folder, "err.log"), "wb") as e:
            o.write(b"earlier\n")
            o.flush()
            proc, out = self.target_of(stdout=o, stderr=e)
        err = server_output.describe(proc.pid, 2)
        plan = server_output.plan(out, err, "/nonexistent/tool.log")
        plan.close()
        self.assertEqual(plan.follow, [(os.path.join(folder, "out.log"), 8), (os.path.join(folder, "err.log"), 0)])
        self.assertEqual(plan.notes, [])


if __name__ == "__main__":
    unittest.main()
