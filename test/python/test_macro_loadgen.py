"""The macro load generator end to end against the simulator: workloads, prompts, worker processes, events."""
import http.server
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
AGENT = os.path.join(ROOT, "agent")
sys.path.insert(0, AGENT)

from infbench_agent import events as agent_events  # noqa: E402
from infbench_agent.macro.levels import build_plans  # noqa: E402
from infbench_agent.macro.prompts import PromptMaker  # noqa: E402


def run_macro(url, *args):
    out = subprocess.run(
        [sys.executable, "-m", "infbench_agent", "macro", "--url", url, *args], cwd=AGENT, capture_output=True, text=True, timeout=120
    )
    events = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    results = [e["result"] for e in events if e["type"] == "result"]
    if not results:
        raise AssertionError(f"no result event: {out.stdout[-1500:]} {out.stderr[-1500:]}")
    return results[0], events


class Prompts(unittest.TestCase):
    def test_prompts_differ_between_requests_and_runs_and_repeat_with_a_seed(self):
        a = PromptMaker("completions", "m", 64, 8, True, seed=1)
        b = PromptMaker("completions", "m", 64, 8, True, seed=2)
        self.assertNotEqual(a.text(0), a.text(1))
        self.assertNotEqual(a.text(0).split()[:4], b.text(0).split()[:4])
        self.assertEqual(a.text(5), PromptMaker("completions", "m", 64, 8, True, seed=1).text(5))
        self.assertEqual(len(a.text(3).split()), 64)

    def test_request_bodies_ask_for_streaming_usage_and_ignore_eos(self):
        body = json.loads(PromptMaker("chat", "m", 10, 7, True, seed=1).body(0))
        self.assertEqual(body["messages"][0]["role"], "user")
        self.assertEqual(body["max_completion_tokens"], 7)
        self.assertTrue(body["stream"] and body["stream_options"]["include_usage"] and body["ignore_eos"])

    def test_gamma_arrivals_follow_the_rate(self):
        import argparse
        import random

        args = argparse.Namespace(workers="1", streams_per_worker=96, burstiness=1.0, max_concurrency=None, duration=None)
        [plan] = build_plans(args, {"max_concurrency": None, "request_rate": 50.0}, 2000, 0, random.Random(7))
        gaps = [b - a for a, b in zip(plan["arrivals"], plan["arrivals"][1:])]
        self.assertAlmostEqual(sum(gaps) / len(gaps), 1 / 50, delta=0.002)
        bursty = build_plans(
            argparse.Namespace(**{**vars(args), "burstiness": 0.25}),
            {"max_concurrency": None, "request_rate": 50.0},
            2000,
            0,
            random.Random(7),
        )[0]
        bgaps = [b - a for a, b in zip(bursty["arrivals"], bursty["arrivals"][1:])]
        var = lambda xs: sum((x - sum(xs) / len(xs)) ** 2 for x in xs) / len(xs)  # noqa: E731
        self.assertGreater(var(bgaps), 2.5 * var(gaps))  # gamma shape 0.25: four times the variance of Poisson

    def test_levels_split_over_workers_keep_the_totals(self):
        import argparse
        import random

        args = argparse.Namespace(workers="3", streams_per_worker=96, burstiness=1.0, max_concurrency=None, duration=None)
        plans = build_plans(args, {"max_concurrency": 10, "request_rate": None}, 25, 100, random.Random(1))
        self.assertEqual([p["concurrency"] for p in plans], [4, 3, 3])
        ids = sorted(i for p in plans for i in p["ids"])
        self.assertEqual(ids, list(range(100, 125)))


class AgainstTheSimulator(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.proc = subprocess.Popen(
            [
                sys.executable,
                os.path.join(ROOT, "simulator", "vllm_sim.py"),
                "--port",
                "0",
                "--step-base-ms",
                "4",
                "--step-per-seq-ms",
                "0.1",
                "--prefill-per-token-ms",
                "0.001",
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        cls.url = json.loads(cls.proc.stdout.readline())["url"]

    @classmethod
    def tearDownClass(cls):
        cls.proc.terminate()
        cls.proc.wait(5)
        cls.proc.stdout.close()

    def test_chat_over_two_worker_processes_counts_exact_tokens(self):
        result, events = run_macro(
            self.url,
            "--api",
            "chat",
            "--concurrency",
            "6",
            "--requests",
            "12",
            "--input-len",
            "40",
            "--output-len",
            "5",
            "--workers",
            "2",
            "--warmup",
            "0",
        )
        [level] = result["levels"]
        self.assertEqual(level["completed"], 12)
        self.assertEqual(level["client_cpu"]["workers"], 2)
        self.assertEqual(level["total_output_tokens"], 60)
        # calibrated with /tokenize, the chat template's overhead included
        self.assertEqual(level["total_input_tokens"], 12 * 40)
        self.assertEqual(level["token_count"]["client_vs_usage_abs_diff"], 0, "the role-only chunk is no token")
        self.assertTrue(level["server_metrics"]["generation_tokens_match"])
        self.assertEqual(sum(1 for e in events if e["type"] == "macro.request"), 12)
        self.assertEqual(len({e["record"]["id"] for e in events if e["type"] == "macro.request"}), 12)
        for e in events:
            self.assertEqual(agent_events.problems(e), [], e)
        [server] = [e["server"] for e in events if e["type"] == "server"]
        self.assertEqual((server["kind"], server["simulated"], server["model"]), ("vllm", True, result["server"]["model"]))

    def test_a_worker_process_speaks_the_worker_messages_of_the_schema(self):
        import urllib.request

        with urllib.request.urlopen(f"{self.url}/v1/models", timeout=10) as r:
            model = json.load(r)["data"][0]["id"]
        job = {
            "plan": {"concurrency": 2, "ids": [0, 1, 2, 3], "duration": None, "id_base": 0, "id_stride": 1, "start_at": 0.0},
            "url": self.url,
            "path": "/v1/completions",
            "prompt": PromptMaker("completions", model, 8, 2, True, seed=1).to_json(),
            "request_timeout": 30.0,
            "api_key": None,
        }
        go = {"start_at": 0.0}
        self.assertEqual(agent_events.worker_message_problems("job", job), [])
        self.assertEqual(agent_events.worker_message_problems("go", go), [])
        proc = subprocess.run(
            [sys.executable, "-m", "infbench_agent", "macro", "--worker"],
            cwd=AGENT,
            timeout=60,
            input=json.dumps(job) + "\n" + json.dumps(go) + "\n",
            capture_output=True,
            text=True,
        )
        # The agent's own hello and done go around them (the coordinator reads only the worker messages).
        messages = [m for m in map(json.loads, proc.stdout.splitlines()) if "type" not in m]
        self.assertEqual([m["kind"] for m in messages], ["ready"] + ["record"] * 4 + ["end"], proc.stderr[-1500:])
        for m in messages:
            self.assertEqual(agent_events.worker_message_problems(m["kind"], m), [], m)
        self.assertTrue(all(m["record"]["ok"] for m in messages if m["kind"] == "record"))

    def test_request_rate_sends_on_schedule(self):
        result, _ = run_macro(
            self.url, "--request-rate", "80", "--requests", "40", "--input-len", "8", "--output-len", "2", "--seed", "3", "--warmup", "0"
        )
        [level] = result["levels"]
        self.assertEqual(level["request_rate"], 80.0)
        self.assertEqual(level["completed"], 40)
        lag = level["scheduling_lag_ms"]
        self.assertLess(lag["mean"], 5.0, f"requests left late: {lag}")
        self.assertGreater(level["duration"], 0.2)

    def test_prompts_file_sets_each_requests_output_length(self):
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
            f.write(json.dumps({"prompt": "one two three", "output_len": 3}) + "\n")
            f.write(json.dumps({"messages": [{"role": "user", "content": "four five"}], "output_len": 6}) + "\n")
        try:
            result, _ = run_macro(self.url, "--prompts-file", f.name, "--concurrency", "1", "--requests", "4", "--warmup", "0")
        finally:
            os.unlink(f.name)
        [level] = result["levels"]
        self.assertEqual(level["total_output_tokens"], 3 + 6 + 3 + 6)
        self.assertEqual(result["prompts"]["source"], f.name)

    def test_an_unreachable_server_is_an_actionable_error(self):
        out = subprocess.run(
            [sys.executable, "-m", "infbench_agent", "macro", "--url", "http://127.0.0.1:9"],
            cwd=AGENT,
            capture_output=True,
            text=True,
            timeout=60,
        )
        errors = [json.loads(line) for line in out.stdout.splitlines() if '"type":"error"' in line]
        self.assertEqual(errors[0]["code"], "server_unreachable")
        self.assertIn("curl http://127.0.0.1:9/v1/models", errors[0]["hint"])


class PlainServer(http.server.BaseHTTPRequestHandler):
    """Not vLLM: an OpenAI-style server on the standard library's HTTP/1.0 handler. It wants an API key,
    refuses vLLM's extra fields, ends streams by closing the connection, sends no usage, and has no
    /tokenize or /metrics; the load generator must still measure it."""

    protocol_version = "HTTP/1.0"

    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.headers.get("Authorization") != "Bearer sekret":
            self.send_error(401)
            return
        if self.path == "/v1/models":
            body = json.dumps({"object": "list", "data": [{"id": "plain", "object": "model", "owned_by": "someone"}]}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        else:
            self.send_error(404)

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.headers.get("Authorization") != "Bearer sekret" or self.path != "/v1/completions":
            self.send_error(401 if self.path == "/v1/completions" else 404)
            return
        if "stream_options" in body or "ignore_eos" in body:
            msg = json.dumps({"error": {"message": "Extra inputs are not permitted: stream_options", "code": 400}}).encode()
            self.send_response(400)
            self.send_header("Content-Length", str(len(msg)))
            self.end_headers()
            self.wfile.write(msg)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for i in range(body["max_tokens"]):
            time.sleep(0.005)
            self.wfile.write(b'data: {"choices":[{"index":0,"text":" t%d"}]}\r\n\r\n' % i)
            self.wfile.flush()
        self.wfile.write(b"data: [DONE]\r\n\r\n")


class PromptUsageOnly(http.server.BaseHTTPRequestHandler):
    """A server whose closing usage message holds prompt_tokens but no completion_tokens."""

    protocol_version = "HTTP/1.0"

    def log_message(self, *args):
        pass

    def do_GET(self):
        body = json.dumps({"object": "list", "data": [{"id": "p", "object": "model"}]}).encode()
        self.send_response(200 if self.path == "/v1/models" else 404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for i in range(3):
            self.wfile.write(b'data: {"choices":[{"index":0,"text":" t%d"}]}\n\n' % i)
            self.wfile.flush()
        self.wfile.write(b'data: {"choices":[],"usage":{"prompt_tokens":77}}\n\ndata: [DONE]\n\n')


class AServerWeBring(unittest.TestCase):
    def test_prompt_tokens_come_from_usage_even_without_completion_tokens(self):
        # lib/endpoint_request_func.py takes usage.prompt_tokens whenever the server sends it.
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), PromptUsageOnly)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            result, _ = run_macro(
                f"http://127.0.0.1:{server.server_address[1]}",
                "--concurrency",
                "2",
                "--requests",
                "4",
                "--output-len",
                "3",
                "--input-len",
                "10",
                "--no-tokenize",
                "--warmup",
                "0",
            )
        finally:
            server.shutdown()
            server.server_close()
        [level] = result["levels"]
        self.assertEqual(level["completed"], 4, level["errors"])
        self.assertEqual(level["total_input_tokens"], 4 * 77)
        self.assertEqual(level["token_count"]["input_source"], "usage")
        self.assertEqual(level["token_count"]["source"], "client")
        self.assertEqual(level["total_output_tokens"], 12)
        self.assertIn("max_concurrent_requests_1s_buckets", result["vllm_bench_serve"]["max_concurrent_requests"])

    def test_a_plain_openai_style_server_is_measured_with_client_counts(self):
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), PlainServer)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        url = f"http://127.0.0.1:{server.server_address[1]}"
        try:
            os.environ["INFBENCH_API_KEY"] = "sekret"
            result, events = run_macro(url, "--concurrency", "2", "--requests", "4", "--output-len", "6", "--input-len", "10")
        finally:
            os.environ.pop("INFBENCH_API_KEY", None)
            server.shutdown()
            server.server_close()
        [level] = result["levels"]
        self.assertEqual(level["completed"], 4, level["errors"])
        self.assertEqual(result["prompts"]["dropped_fields"], ["stream_options", "ignore_eos"])
        self.assertEqual(level["total_output_tokens"], 24)
        self.assertEqual(level["token_count"]["source"], "client")
        self.assertFalse(level["server_metrics"]["available"])
        self.assertFalse(result["server"]["simulated"])
        self.assertAlmostEqual(level["median_itl_ms"], 5.0, delta=4.0)
        self.assertTrue(any(e["type"] == "log" and "refused stream_options" in e["message"] for e in events))
        self.assertNotIn("sekret", json.dumps(result))

    def test_a_missing_api_key_is_an_actionable_error(self):
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), PlainServer)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            out = subprocess.run(
                [sys.executable, "-m", "infbench_agent", "macro", "--url", f"http://127.0.0.1:{server.server_address[1]}"],
                cwd=AGENT,
                capture_output=True,
                text=True,
                timeout=60,
                env={k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "INFBENCH_API_KEY")},
            )
        finally:
            server.shutdown()
            server.server_close()
        errors = [json.loads(line) for line in out.stdout.splitlines() if '"type":"error"' in line]
        self.assertEqual(errors[0]["code"], "unauthorized")
        self.assertIn("{0}", errors[0]["hint"])
        self.assertEqual(errors[0]["remedies"], [{"kind": "flag", "flag": "--api-key", "value": "KEY"}])


if __name__ == "__main__":
    unittest.main()


class ReadsBeforeParsing(unittest.TestCase):
    def test_a_finishing_stream_does_not_delay_the_stamps_of_streams_ready_beside_it(self):
        # Two streams whose whole responses are ready at once; building the first one's record takes 0.3 s.
        # Stamped before any parsing, the second stream's last token is read with the first, not 0.3 s later.
        import socket as socketlib
        from infbench_agent.http import Endpoint
        from infbench_agent.macro.client import Engine

        listener = socketlib.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(2)
        port = listener.getsockname()[1]
        sse = b"".join(
            b"%x\r\n%s\r\n" % (len(m), m)
            for m in [b'data: {"choices":[{"index":0,"text":" t"}]}\n\n'] * 3
            + [b'data: {"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":3}}\n\n', b"data: [DONE]\n\n"]
        )
        response = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" + sse + b"0\r\n\r\n"
        conns = []
        # The test says when to answer (once it has stopped polling), and the server says when it has.
        go, sent = threading.Event(), threading.Event()

        def serve():
            for _ in range(2):
                c, _ = listener.accept()
                c.recv(65536)
                conns.append(c)
            go.wait(5)
            for c in conns:
                c.sendall(response)
            sent.set()

        threading.Thread(target=serve, daemon=True).start()
        records = []

        def on_record(rec):
            records.append(rec)
            if len(records) == 1:
                time.sleep(0.3)

        engine = Engine(Endpoint(f"http://127.0.0.1:{port}"), "/v1/completions", 10.0, on_record)
        try:
            engine.start({"id": 0}, b"{}")
            engine.start({"id": 1}, b"{}")
            # Both whole responses sit in the client's receive buffers before the first poll that reads
            # them. The engine is polled (to send the requests) only until both came in; the server answers
            # after that, so no poll can read one response while the other is on its way. A send that
            # has returned is not yet a delivery (on a busy machine the loopback hand-over can run later,
            # in ksoftirqd), so the test then peeks at both sockets until each holds its whole response.
            deadline = time.monotonic() + 5
            while len(conns) < 2 and time.monotonic() < deadline:
                engine.poll(0.001)
            go.set()
            self.assertTrue(sent.wait(5), "the test server did not send its responses")
            socks = [st.sock for st in engine.active.values()]
            self.assertEqual(len(socks), 2)

            def buffered(sock):
                try:
                    return len(sock.recv(len(response) + 1, socketlib.MSG_PEEK))
                except BlockingIOError:
                    return 0

            while any(buffered(s) < len(response) for s in socks) and time.monotonic() < deadline:
                time.sleep(0.001)
            self.assertEqual([buffered(s) for s in socks], [len(response)] * 2, "the responses never all arrived")
            while len(records) < 2 and time.monotonic() < deadline:
                engine.poll(0.05)
        finally:
            engine.close()
            for c in conns:
                c.close()
            listener.close()
        self.assertEqual([r["ok"] for r in records], [True, True], [r.get("error") for r in records])
        ends = sorted(r["send"] + r["e2el"] for r in records)
        self.assertLess(ends[1] - ends[0], 0.15)
