"""The cluster collectives' agent side: the decode-step plan, and two "hosts" (two launchers on this
machine, as two SSH sessions would start them) meeting through torch.distributed's env:// rendezvous
with gloo on the CPU, checked event by event; a rank that dies is named by its own host.

Runs that need PyTorch use Debian's /usr/bin/python3 (python3-torch, CPU), skipped where it has none.
"""
import json
import math
import os
import signal
import subprocess
import unittest

from infbench_agent import events
from test_micro import has_torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
AGENT_DIR = os.path.join(ROOT, "agent")
TORCH_PYTHON = os.environ.get("INFBENCH_TORCH_PYTHON", "/usr/bin/python3")


def agent_env(extra=None):
    env = dict(os.environ)
    env["PYTHONPATH"] = AGENT_DIR
    # No GPU decides a CPU test: the real nvidia-smi stays out of PATH.
    env["PATH"] = "/usr/bin:/bin"
    env.pop("SSH_CONNECTION", None)
    env.update(extra or {})
    return env


def parse(stdout):
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def plan(*args, extra_env=None):
    proc = subprocess.run(
        [TORCH_PYTHON, "-m", "infbench_agent", "collective", "--plan", *args],
        capture_output=True,
        text=True,
        env=agent_env(extra_env),
        timeout=60,
    )
    found = parse(proc.stdout)
    for e in found:
        assert not events.problems(e), (e, events.problems(e))
    return proc.returncode, found


class PlanTest(unittest.TestCase):
    def test_kimi_on_eight_ranks_sizes_both_collectives_from_its_config(self):
        code, found = plan("--model", "kimi-k2.5", "--world-size", "8", "--m", "1,8,64")
        self.assertEqual(code, 0)
        p = found[-2]["result"]["plan"]
        # Kimi-K2.5: hidden 7168, top-8 experts, 61 layers of which the first is dense.
        self.assertEqual((p["hidden"], p["top_k"], p["layers"], p["moe_layers"]), (7168, 8, 61, 60))
        self.assertEqual([s["bytes"] for s in p["allreduce"]], [m * 7168 * 2 for m in (1, 8, 64)])
        # ceil(M / 8) tokens per rank x 8 experts x 7168 x 2 bytes: 1, 1 and 8 tokens.
        self.assertEqual([s["tokens_per_rank"] for s in p["alltoall"]], [1, 1, 8])
        self.assertEqual([s["bytes"] for s in p["alltoall"]], [t * 8 * 7168 * 2 for t in (1, 1, 8)])
        self.assertTrue(1024 <= p["port"] <= 65535)

    def test_a_dense_model_has_no_all_to_all(self):
        code, found = plan("--model", "llama-3-8b", "--world-size", "4", "--m", "1,4")
        self.assertEqual(code, 0)
        p = found[-2]["result"]["plan"]
        self.assertEqual((p["top_k"], p["moe_layers"], p["alltoall"]), (None, None, []))

    def test_the_address_is_the_one_the_ssh_session_came_in_on(self):
        code, found = plan("--world-size", "0", "--device", "cpu", extra_env={"SSH_CONNECTION": "10.0.0.9 52314 10.0.0.1 22"})
        self.assertEqual(code, 0)
        p = found[-2]["result"]["plan"]
        self.assertEqual((p["addr"], p["local_ranks"], p["device"]), ("10.0.0.1", 2, "cpu"))

    def test_busy_gpus_on_a_host_are_refused_before_anything_starts_there(self):
        fake_smi = os.path.join(ROOT, "test", "support", "fake-nvidia-smi")
        code, found = plan("--world-size", "0", extra_env={"PATH": fake_smi + os.pathsep + "/usr/bin:/bin"})
        self.assertEqual(code, 2)
        err = next(e for e in found if e["type"] == "error")
        self.assertEqual(err["code"], "gpus_busy")
        self.assertIn("VLLM::Worker_TP0", err["message"])
        code, found = plan("--world-size", "0", "--allow-busy", extra_env={"PATH": fake_smi + os.pathsep + "/usr/bin:/bin"})
        self.assertEqual(code, 0)
        self.assertEqual(found[-2]["result"]["plan"]["device"], "cuda")

    def test_no_model_and_no_hidden_size_says_what_to_pass(self):
        code, found = plan("--world-size", "4")
        self.assertEqual(code, 2)
        err = next(e for e in found if e["type"] == "error")
        self.assertEqual(err["code"], "no_model")
        self.assertIn({"kind": "flag", "flag": "--hidden"}, err["remedies"])


@unittest.skipUnless(has_torch(TORCH_PYTHON), f"{TORCH_PYTHON} has no torch")
class TwoHostsTest(unittest.TestCase):
    def start(self, node_rank, port, sizes, repeats):
        self.launched = getattr(self, "launched", [])
        self.launched.append(self._start(node_rank, port, sizes, repeats))
        return self.launched[-1]

    def _start(self, node_rank, port, sizes, repeats):
        args = [
            "--world-size",
            "4",
            "--node-rank",
            str(node_rank),
            "--rank-offset",
            str(2 * node_rank),
            "--local-ranks",
            "2",
        ]
        args += ["--master-addr", "127.0.0.1", "--master-port", str(port), "--device", "cpu", "--repeats", str(repeats)]
        args += ["--ar-sizes", sizes, "--a2a-sizes", sizes]
        return subprocess.Popen(
            [TORCH_PYTHON, "-m", "infbench_agent", "collective", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=agent_env(),
            # Its own process group, as the controller starts an agent: a failed test stops every rank with it.
            start_new_session=True,
        )

    def tearDown(self):
        for p in getattr(self, "launched", []):
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.communicate()

    def port(self):
        return plan("--world-size", "0", "--device", "cpu")[1][-2]["result"]["plan"]["port"]

    def test_all_reduce_and_all_to_all_across_and_within_hosts(self):
        port = self.port()
        head = self.start(0, port, "4096,65536", 2)
        other = self.start(1, port, "4096,65536", 2)
        out_head, _ = head.communicate(timeout=120)
        out_other, _ = other.communicate(timeout=120)
        self.assertEqual((head.returncode, other.returncode), (0, 0))
        head_events, other_events = parse(out_head), parse(out_other)
        for e in head_events + other_events:
            self.assertEqual(events.problems(e), [], e)
        points = [e for e in head_events if e["type"] == "micro.point"]
        # Only global rank 0 speaks for the collectives; the other host reports its part done.
        self.assertEqual([e for e in other_events if e["type"] == "micro.point"], [])
        seen = {(e["kind"], e["point"]["scope"], e["point"]["bytes"]) for e in points}
        want = {(k, s, b) for k in ("allreduce", "alltoall") for s in ("inter-node", "intra-node") for b in (4096, 65536)}
        self.assertEqual(seen, want)
        for e in points:
            p = e["point"]
            n = 4 if p["scope"] == "inter-node" else 2
            self.assertEqual((p["world_size"], p["nodes"]), (n, 2 if n == 4 else 1))
            algbw = p["bytes"] / p["us"] / 1e3
            factor = 2 * (n - 1) / n if e["kind"] == "allreduce" else (n - 1) / n
            self.assertTrue(math.isclose(p["busbw_gbps"], algbw * factor, rel_tol=1e-9))

    def test_a_killed_rank_is_named_by_its_host_and_every_rank_stops(self):
        port = self.port()
        sizes = ",".join(str(4096 * (i + 1)) for i in range(60))
        head = self.start(0, port, sizes, 5)
        other = self.start(1, port, sizes, 5)
        # Once the head prints its first point, the ranks are past the rendezvous and timing.
        first = ""
        while '"micro.point"' not in first:
            first = head.stdout.readline()
            self.assertNotEqual(first, "", "the head ended before its first point")
        victim = worker_with_rank(3)
        self.assertIsNotNone(victim, "rank 3's process is not there")
        os.kill(victim, signal.SIGKILL)
        out_other, _ = other.communicate(timeout=60)
        out_head, _ = head.communicate(timeout=60)
        err = next(e for e in parse(out_other) if e["type"] == "error")
        self.assertEqual(err["code"], "rank_died")
        self.assertRegex(err["message"], r"^Rank 3 \(local rank 1 on .*\) was killed by signal 9\.$")
        # The head's ranks lost their peer: a failure, not a death of their own.
        self.assertEqual(next(e for e in parse(out_head) if e["type"] == "error")["code"], "collective_failed")
        self.assertEqual((head.returncode, other.returncode), (2, 2))
        self.assertIsNone(worker_with_rank(0))
        self.assertIsNone(worker_with_rank(2))


def worker_with_rank(rank):
    """The PID of the collective worker whose environment says RANK=rank, if one runs."""
    out = subprocess.run(["pgrep", "-f", "collective --worker"], capture_output=True, text=True).stdout
    for pid in [int(x) for x in out.split()]:
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        if f"RANK={rank}".encode() in env:
            return pid
    return None


if __name__ == "__main__":
    unittest.main()
