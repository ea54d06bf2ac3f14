"""The macro load generator against a server that answers badly: malformed messages, chunk sizes and headers,
usage counts that cannot be true, a stream that stalls. Each bad answer fails its own request (with its
reason) or loses only its usage; every level still runs to the end and measures the good requests right."""
import http.server
import json
import math
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
AGENT = os.path.join(ROOT, "agent")
sys.path.insert(0, AGENT)

from infbench_agent.macro.client import Engine  # noqa: E402
from infbench_agent.http import BadResponse, ChunkedDecoder, Endpoint  # noqa: E402
from infbench_agent.macro.metrics import message_content  # noqa: E402
from test_macro_loadgen import run_macro as run_agent_macro  # noqa: E402


def token(text):
    return {"choices": [{"index": 0, "text": text}]}


def usage(completion, prompt=5):
    return '{"choices":[],"usage":{"prompt_tokens":%s,"completion_tokens":%s}}' % (prompt, completion)


GOOD = [token(" a"), token(" b"), token(" c"), token(" d")]

# Each case: the SSE messages a request gets (dicts are sent as JSON, strings as they are), and how many
# token messages the server generated for it (what its /metrics counts). The prompt names the case.
CASES = {
    "good": (GOOD + [usage(4)], 4),
    "choices_string": ([token(" a"), '{"choices":"abc"}'], 1),
    "choices_object": ([token(" a"), '{"choices":{"text":"x"}}'], 1),
    "choices_null": ([token(" a"), '{"choices":[null]}'], 1),
    "delta_string": ([token(" a"), '{"choices":[{"delta":"x"}]}'], 1),
    "usage_string": (GOOD + [usage('"4"', '"5"')], 4),
    "usage_infinite": (GOOD + [usage("1e999")], 4),
    "usage_ten_times": (GOOD + [usage(40)], 4),
    "usage_negative": (GOOD + [usage(-15)], 4),
    "usage_30_digits": (GOOD + [usage("123456789012345678901234567890")], 4),
    # A special token streams as empty text: still a token message (TTFT, ITL), and usage counts it.
    "empty_text": ([token(" a"), token(" b"), token(""), token(" d"), usage(4)], 4),
}
# Cases answered below by hand: a bad chunk-size line, a bad Content-Length, a stream that goes silent.
RAW_CASES = {"chunk_size_zz": 1, "content_length_abc": 0, "stalls": 2}
# What a hostile server writes to drive the user's terminal: set the window title (OSC 0 ... BEL), clear the
# screen (CSI 2J), a C1 CSI, and a bidi override that reorders what follows.
TERMINAL = "\x1b]0;PWNED-TITLE\x07 the engine died \x1b[2J\x9b31m\u202eevil\x00"
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
# JSON nested past Python's recursion limit (its parser raises RecursionError, not ValueError).
NESTED = b"[" * 100000 + b"]" * 100000
# Cases of the sweeps below, answered by hand, not part of the all-cases level above.
EXTRA_CASES = {
    # An HTTP 500 whose body, and an SSE error whose message, carry terminal controls.
    "terminal_500",
    "terminal_sse_error",
    # Headers at one byte per 0.2 s: bytes keep coming, never a token.
    "trickle_headers",
    # An SSE stream of keep-alive comments every 0.2 s and no token.
    "keepalive_pings",
    # usage.prompt_tokens of 999,999 for a prompt of a few tokens.
    "prompt_usage_absurd",
    # usage.prompt_tokens of 300 each, a count a request of that size could hold, where /metrics counts 5.
    "prompt_usage_high",
    # Stalls the first time it is asked, answers well after.
    "stalls_once",
    # A message nested past the parser's limit.
    "nested_message",
}


class HostileServer(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    generated = 0
    # Prompt tokens its /metrics counts: 5 a completion request.
    prompted = 0
    # Whether /metrics answers a chunked body with a bad chunk-size line.
    bad_metrics = False
    # Bodies of /v1/models and /tokenize, and the text of /metrics' counter value (None: the count).
    models_body = b'{"data": 5}'
    tokenize_body = b'{"count":1e999}'
    metrics_value = None
    # Prompts seen, for a case that answers differently the second time.
    seen = set()
    lock = threading.Lock()

    def log_message(self, *args):
        pass

    def count(self, n):
        with self.lock:
            HostileServer.generated += n

    def count_prompt(self):
        with self.lock:
            HostileServer.prompted += 5

    def send_raw(self, data):
        try:
            self.wfile.write(data)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up on a bad answer and closed the connection

    def chunk(self, text):
        data = ("data: %s\n\n" % text).encode()
        self.send_raw(b"%x\r\n%s\r\n" % (len(data), data))

    def start_stream(self):
        self.close_connection = True
        self.send_raw(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n")

    def do_GET(self):
        self.close_connection = True
        if self.path == "/v1/models":
            body = self.models_body
        elif self.path == "/metrics" and self.bad_metrics:
            self.start_stream()
            self.send_raw(b"zz\r\nvllm:generation_tokens_total 1\n\r\n0\r\n\r\n")
            return
        elif self.path == "/metrics":
            value = self.metrics_value or str(HostileServer.generated)
            body = b"vllm:generation_tokens_total %s\nvllm:prompt_tokens_total %d\n" % (value.encode(), HostileServer.prompted)
        else:
            self.send_error(404)
            return
        self.send_raw(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body))

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path == "/tokenize":
            self.close_connection = True
            reply = self.tokenize_body
            self.send_raw(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(reply), reply))
            return
        self.count_prompt()
        # A prompt that names no case (a random one) gets the good answer.
        case = body["prompt"] if body["prompt"] in CASES or body["prompt"] in RAW_CASES or body["prompt"] in EXTRA_CASES else "good"
        if case in EXTRA_CASES:
            self.extra_case(case)
            return
        if case == "content_length_abc":
            self.close_connection = True
            self.send_raw(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: abc\r\nConnection: close\r\n\r\n")
            self.send_raw(b"data: [DONE]\n\n")
            return
        self.start_stream()
        if case == "chunk_size_zz":
            self.count(1)
            self.chunk(json.dumps(token(" a")))
            self.send_raw(b"zz\r\ndata: [DONE]\n\n\r\n0\r\n\r\n")
            return
        if case == "stalls":
            self.count(2)
            self.chunk(json.dumps(token(" a")))
            self.chunk(json.dumps(token(" b")))
            # Silent until the client gives up and closes the connection.
            self.rfile.read(1)
            return
        messages, generated = CASES[case]
        self.count(generated)
        for m in messages:
            time.sleep(0.01)
            self.chunk(m if isinstance(m, str) else json.dumps(m))
        self.chunk("[DONE]")
        self.send_raw(b"0\r\n\r\n")

    def extra_case(self, case):
        self.close_connection = True
        if case == "terminal_500":
            body = json.dumps({"error": {"message": TERMINAL, "type": "InternalServerError"}}).encode()
            self.send_raw(b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body))
            return
        if case == "trickle_headers":
            for byte in b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nX-Padding: " + b"x" * 10000:
                if self.closed_by_client(bytes([byte])):
                    return
                time.sleep(0.2)
            return
        self.start_stream()
        if case == "terminal_sse_error":
            self.count(1)
            self.chunk(json.dumps(token(" a")))
            self.chunk(json.dumps({"error": {"message": TERMINAL, "code": 500}}))
        elif case == "keepalive_pings":
            while not self.closed_by_client(b"9\r\n: ping\n\n\r\n"):
                time.sleep(0.2)
            return
        elif case in ("prompt_usage_absurd", "prompt_usage_high"):
            self.count(4)
            for m in GOOD:
                self.chunk(json.dumps(m))
            self.chunk(usage(4, prompt=999999 if case == "prompt_usage_absurd" else 300))
        elif case == "stalls_once":
            with self.lock:
                first = case not in HostileServer.seen
                HostileServer.seen.add(case)
            self.count(1)
            self.chunk(json.dumps(token(" a")))
            if first:
                self.rfile.read(1)
                return
            for m in GOOD[1:]:
                self.count(1)
                self.chunk(json.dumps(m))
            self.chunk(usage(4))
        elif case == "nested_message":
            self.chunk(NESTED.decode())
        self.chunk("[DONE]")
        self.send_raw(b"0\r\n\r\n")

    def closed_by_client(self, data):
        try:
            self.wfile.write(data)
            self.wfile.flush()
            return False
        except (BrokenPipeError, ConnectionResetError):
            return True


def strings(value):
    """Every string in an event, keys too."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from strings(v)


def serve(handler):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def run_macro(url, prompts, *args):
    """Runs the macro phase with a prompts file of (prompt, output_len), or random prompts for none."""
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        for prompt, output_len in prompts:
            f.write(json.dumps({"prompt": prompt, "output_len": output_len}) + "\n")
    try:
        file_args = ["--prompts-file", f.name] if prompts else []
        return run_agent_macro(url, *file_args, "--warmup", "0", *args)
    finally:
        os.unlink(f.name)


class AHostileServer(unittest.TestCase):
    def setUp(self):
        HostileServer.generated = HostileServer.prompted = 0
        HostileServer.seen = set()
        self.server, self.url = serve(HostileServer)

    def tearDown(self):
        self.server.shutdown()
        self.server.server_close()

    def test_every_level_completes_with_bad_answers_failed_by_reason_and_good_ones_measured(self):
        cases = list(CASES) + list(RAW_CASES)
        n = len(cases)
        result, events = run_macro(
            self.url,
            [(c, 4) for c in cases],
            "--model",
            "hostile",
            "--concurrency",
            f"{n},5",
            "--requests",
            str(n),
            "--stall-timeout",
            "2",
        )
        self.assertEqual(len(result["levels"]), 2, result.get("stopped"))
        requests = [e for e in events if e["type"] == "macro.request"]
        for level in result["levels"]:
            self.assertEqual(level["failures"], {"bad_response": 6, "stalled": 1}, level["failure_examples"])
            self.assertEqual(level["completed"], 1 + 1 + 5)  # good, empty_text and the five lying usages
            # Each good request streamed 4 tokens; a usage that cannot be true gives way to that count.
            self.assertEqual(level["total_output_tokens"], 4 * level["completed"])
            self.assertEqual(level["token_count"]["usage_rejected"], 5)
            self.assertTrue(level["server_metrics"]["generation_tokens_match"], level["server_metrics"])
            self.assertIn("sent no token for", level["failure_examples"]["stalled"])
        by_reason = {}
        for e in requests:
            by_reason.setdefault(e["record"]["reason"], []).append(e["record"])
        errors = " | ".join(r["error"] for r in by_reason["bad_response"])
        for what in ("`choices` is a str", "`choices` is a dict", "first choice is null", '`delta` is "x"', "zz", "Content-Length 'abc'"):
            self.assertIn(what, errors)
        for r in by_reason[None]:
            self.assertEqual(r["output_tokens"], 4, r)
            # Four token messages, so TPOT = (E2EL - TTFT) / 3 is exactly the request's mean ITL.
            self.assertAlmostEqual(r["tpot_ms"], r["itl_mean_ms"], delta=0.002)
        # The user learns what went wrong and how to look at a raw answer.
        warnings = [e["message"] for e in events if e["type"] == "log" and e["level"] == "warn"]
        self.assertTrue(any("6 request(s) got an answer that is no OpenAI stream" in w and "curl -N" in w for w in warnings), warnings)
        # Nothing that cannot be true is reported: decode speed follows the streamed gaps.
        for level in result["levels"]:
            self.assertAlmostEqual(level["mean_tpot_ms"], level["mean_itl_ms"], delta=0.01)
            self.assertLess(level["output_throughput"], 4 * n / 0.01)

    def test_worker_processes_fail_the_same_bad_answers_and_stall_on_the_same_bound(self):
        cases = list(CASES) + list(RAW_CASES)
        result, _ = run_macro(
            self.url,
            [(c, 4) for c in cases],
            "--model",
            "hostile",
            "--concurrency",
            "4",
            "--requests",
            str(2 * len(cases)),
            "--workers",
            "2",
            "--stall-timeout",
            "2",
        )
        [level] = result["levels"]
        self.assertEqual(level["client_cpu"]["workers"], 2)
        self.assertEqual(level["failures"], {"bad_response": 12, "stalled": 2})
        self.assertEqual((level["completed"], level["total_output_tokens"]), (14, 56))
        self.assertEqual(level["token_count"]["usage_rejected"], 10)

    def test_a_usage_the_servers_own_metrics_contradict_takes_the_streamed_count(self):
        # Four tokens streamed of the eight allowed, usage claims eight; /metrics counts the four.
        CASES["usage_double"] = (GOOD + [usage(8)], 4)
        try:
            result, events = run_macro(self.url, [("usage_double", 8)], "--model", "hostile", "--concurrency", "2", "--requests", "4")
        finally:
            del CASES["usage_double"]
        [level] = result["levels"]
        self.assertEqual(level["completed"], 4)
        self.assertEqual(level["total_output_tokens"], 16)
        self.assertEqual(level["token_count"]["usage_rejected"], 4)
        self.assertIn("/metrics counted 16", level["token_count"]["usage_problem"])
        self.assertTrue(level["server_metrics"]["generation_tokens_match"])
        self.assertTrue(any(e["type"] == "log" and "could not be true" in e["message"] for e in events))

    def test_a_frozen_server_stops_the_level_after_two_stalls_in_a_row_not_one_per_request(self):
        result, events = run_macro(
            self.url, [("stalls", 4)], "--model", "hostile", "--concurrency", "1,2", "--requests", "5", "--stall-timeout", "2"
        )
        progress = [e["message"] for e in events if e["type"] == "progress"]
        self.assertTrue(any(re.fullmatch(r"c=1: 0 of 5 requests done after \d+ s", m) for m in progress), progress)
        [level] = result["levels"]
        # Two requests stalled in a row while nothing else streamed: the other three are not sent to wait out 2 s each.
        self.assertEqual((level["failures"], level["num_prompts"]), ({"stalled": 2}, 5))
        self.assertIn("after its last token (2 tokens received)", level["failure_examples"]["stalled"])
        warnings = [e["message"] for e in events if e["type"] == "log" and e["level"] == "warn"]
        self.assertTrue(any("stalled one after another, none completing between them" in w for w in warnings), warnings)
        # A server that stalls every request would stall the next level too: the run stops, saying so.
        [error] = [e for e in events if e["type"] == "error"]
        self.assertEqual(error["code"], "server_stalled")
        self.assertEqual([r["flag"] for r in error["remedies"]], ["--stall-timeout", "--request-timeout"])

    def test_a_usage_apart_from_the_stream_with_nothing_to_settle_it_is_kept_and_named(self):
        # Four tokens streamed of the eight allowed, usage claims eight, and /metrics cannot be read: eight
        # tokens a request is possible (several tokens a message), so usage stands, as vLLM takes it, with a warning.
        CASES["usage_double"] = (GOOD + [usage(8)], 4)
        HostileServer.bad_metrics = True
        try:
            result, events = run_macro(self.url, [("usage_double", 8)], "--model", "hostile", "--concurrency", "2", "--requests", "4")
        finally:
            del CASES["usage_double"]
            HostileServer.bad_metrics = False
        [level] = result["levels"]
        self.assertEqual((level["total_output_tokens"], level["token_count"]["usage_rejected"]), (32, 0))
        warnings = [e["message"] for e in events if e["type"] == "log" and e["level"] == "warn"]
        self.assertTrue(any("usage counted 32 output tokens and the stream 16 token messages" in w for w in warnings), warnings)

    def test_a_tokenize_count_and_a_metrics_body_that_cannot_be_true_leave_the_run_measuring(self):
        HostileServer.bad_metrics = True
        try:
            result, events = run_macro(self.url, [], "--model", "hostile", "--concurrency", "2", "--requests", "4", "--output-len", "4")
        finally:
            HostileServer.bad_metrics = False
        [level] = result["levels"]
        self.assertEqual((level["completed"], level["total_output_tokens"]), (4, 16))
        self.assertFalse(result["prompts"]["calibration"]["calibrated"])
        self.assertEqual(level["server_metrics"]["note"], "/metrics did not answer")

    def test_a_model_list_that_is_no_list_is_an_actionable_error(self):
        out = subprocess.run(
            [sys.executable, "-m", "infbench_agent", "macro", "--url", self.url],
            cwd=AGENT,
            capture_output=True,
            text=True,
            timeout=60,
        )
        errors = [json.loads(line) for line in out.stdout.splitlines() if '"type":"error"' in line]
        self.assertEqual(errors[0]["code"], "no_model", out.stdout[-1500:] + out.stderr[-1500:])
        self.assertEqual(errors[0]["remedies"], [{"kind": "flag", "flag": "--model", "value": "NAME"}])

    def test_server_text_that_would_drive_a_terminal_reaches_no_event_raw(self):
        # The model id, an HTTP 500 body and an SSE error all carry ESC, BEL, NUL, a C1 CSI and a bidi override.
        HostileServer.models_body = json.dumps({"data": [{"id": "m" + TERMINAL, "owned_by": TERMINAL}]}).encode()
        try:
            result, events = run_macro(
                self.url, [("terminal_500", 4), ("terminal_sse_error", 4), ("good", 4)], "--concurrency", "3", "--requests", "3"
            )
        finally:
            HostileServer.models_body = b'{"data": 5}'
        [level] = result["levels"]
        self.assertEqual(level["failures"], {"http_500": 1, "server_error_in_stream": 1}, level["failure_examples"])
        raw = [t for e in events for t in strings(e) if CONTROL.search(t)]
        self.assertEqual(raw, [])
        # Still readable: the words stand, each control character shows as U+FFFD.
        self.assertIn("\ufffd]0;PWNED-TITLE\ufffd the engine died \ufffd[2J", level["failure_examples"]["http_500"])
        self.assertIn("PWNED-TITLE", level["failure_examples"]["server_error_in_stream"])
        self.assertIn("PWNED-TITLE", result["server"]["model"])
        # The requests still name the model as the server spells it (the good one completed).
        self.assertEqual(level["completed"], 1)

    def test_headers_a_byte_at_a_time_stall_at_the_bound_not_the_request_timeout(self):
        started = time.monotonic()
        result, events = run_macro(
            self.url,
            [("trickle_headers", 4)],
            "--model",
            "hostile",
            "--concurrency",
            "1",
            "--requests",
            "1",
            "--stall-timeout",
            "2",
            "--request-timeout",
            "120",
        )
        self.assertLess(time.monotonic() - started, 60)
        [level] = result["levels"]
        self.assertEqual(level["failures"], {"stalled": 1})
        self.assertRegex(
            level["failure_examples"]["stalled"], r"sent no token for 2 s waiting for its first token \(0 tokens received, though \d+ bytes"
        )

    def test_keepalive_pings_are_no_tokens_and_the_warm_up_says_how_long_it_waits(self):
        started = time.monotonic()
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl") as f:
            f.write(json.dumps({"prompt": "keepalive_pings", "output_len": 4}) + "\n")
            f.flush()
            out = subprocess.run(
                [sys.executable, "-m", "infbench_agent", "macro", "--url", self.url, "--model", "hostile", "--prompts-file", f.name]
                + ["--warmup", "1", "--concurrency", "1", "--requests", "1", "--stall-timeout", "3", "--request-timeout", "120"],
                cwd=AGENT,
                capture_output=True,
                text=True,
                timeout=90,
            )
        events = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
        self.assertLess(time.monotonic() - started, 60)
        progress = [e["message"] for e in events if e["type"] == "progress" and e.get("label") == "warm-up"]
        self.assertTrue(any(re.fullmatch(r"warm-up: 0 of 1 requests done after [12] s", m) for m in progress), progress)
        [error] = [e for e in events if e["type"] == "error"]
        self.assertEqual(error["code"], "warmup_failed", out.stdout[-2000:])
        self.assertRegex(error["message"], r"sent no token for 3 s waiting for its first token \(0 tokens received, though \d+ bytes")

    def test_a_stall_that_hits_one_request_at_c1_fails_that_request_and_the_level_goes_on(self):
        result, events = run_macro(
            self.url,
            [("stalls_once", 4), ("good", 4)],
            "--model",
            "hostile",
            "--concurrency",
            "1",
            "--requests",
            "4",
            "--stall-timeout",
            "2",
        )
        [level] = result["levels"]
        self.assertEqual((level["failures"], level["completed"]), ({"stalled": 1}, 3))
        self.assertNotIn("stopped", result)
        self.assertEqual([e for e in events if e["type"] == "error"], [])
        warnings = [e["message"] for e in events if e["type"] == "log" and e["level"] == "warn"]
        self.assertFalse(any("level stopped" in w for w in warnings), warnings)

    def test_a_prompt_usage_no_prompt_of_the_request_could_hold_takes_the_clients_count(self):
        result, events = run_macro(self.url, [("prompt_usage_absurd", 4)], "--model", "hostile", "--concurrency", "1", "--requests", "2")
        [level] = result["levels"]
        self.assertEqual((level["completed"], level["token_count"]["usage_rejected"]), (2, 2))
        self.assertLess(level["total_input_tokens"], 100)
        self.assertEqual(level["total_output_tokens"], 8)
        self.assertIn("usage.prompt_tokens is 999999, more than a prompt sent in a", level["token_count"]["usage_problem"])
        warnings = [e["message"] for e in events if e["type"] == "log" and e["level"] == "warn"]
        self.assertTrue(any("usage could not be true for 2 request(s) (usage.prompt_tokens is 999999" in w for w in warnings), warnings)

    def test_a_prompt_usage_the_servers_own_metrics_contradict_takes_the_clients_count(self):
        result, events = run_macro(self.url, [("prompt_usage_high", 4)], "--model", "hostile", "--concurrency", "2", "--requests", "4")
        [level] = result["levels"]
        self.assertEqual((level["completed"], level["token_count"]["usage_rejected"]), (4, 4))
        self.assertLess(level["total_input_tokens"], 100)
        self.assertIn("/metrics counted 20 prompt tokens in all", level["token_count"]["usage_problem"])
        warnings = [e["message"] for e in events if e["type"] == "log" and e["level"] == "warn"]
        self.assertTrue(any("usage could not be true for 4 request(s) (usage.prompt_tokens is 300" in w for w in warnings), warnings)

    def test_json_nested_past_the_parsers_limit_is_a_malformed_reply_not_a_crash(self):
        HostileServer.models_body = b'{"data":' + NESTED + b"}"
        try:
            out = subprocess.run(
                [sys.executable, "-m", "infbench_agent", "macro", "--url", self.url], cwd=AGENT, capture_output=True, text=True, timeout=60
            )
        finally:
            HostileServer.models_body = b'{"data": 5}'
        [error] = [json.loads(line) for line in out.stdout.splitlines() if '"type":"error"' in line]
        self.assertEqual(error["code"], "no_model", out.stderr[-1500:])
        self.assertIn("/v1/models answered JSON nested too deeply to read", error["message"])
        self.assertNotIn("RecursionError", out.stderr)
        # /tokenize and a stream message nested as deep: calibration is skipped, the message fails its request.
        HostileServer.tokenize_body = NESTED
        try:
            result, events = run_macro(self.url, [], "--model", "hostile", "--concurrency", "1", "--requests", "2", "--output-len", "4")
            nested, _ = run_macro(self.url, [("nested_message", 4)], "--model", "hostile", "--concurrency", "1", "--requests", "1")
        finally:
            HostileServer.tokenize_body = b'{"count":1e999}'
        self.assertEqual(result["levels"][0]["completed"], 2)
        self.assertFalse(result["prompts"]["calibration"]["calibrated"])
        warnings = [e["message"] for e in events if e["type"] == "log" and e["level"] == "warn"]
        self.assertTrue(any("/tokenize answered JSON nested too deeply to read" in w for w in warnings), warnings)
        self.assertIn("nests JSON deeper than the client reads", nested["levels"][0]["failure_examples"]["bad_response"])

    def test_a_metrics_counter_of_nan_is_no_count(self):
        HostileServer.metrics_value = "NaN"
        try:
            result, events = run_macro(self.url, [], "--model", "hostile", "--concurrency", "1", "--requests", "2", "--output-len", "4")
        finally:
            HostileServer.metrics_value = None
        [level] = result["levels"]
        self.assertFalse(level["server_metrics"]["available"])
        self.assertIn("generation token counter", level["server_metrics"]["note"])
        self.assertFalse(any("nan" in e.get("message", "") for e in events if e["type"] == "log"))


class EmptyTextMessages(unittest.TestCase):
    def test_an_empty_text_message_is_a_token_message_as_vllm_bench_serve_counts_it(self):
        # vllm/benchmarks/lib/endpoint_request_func.py stamps TTFT or an ITL sample for every message with
        # choices, its text empty or not; the client's own count takes only messages with text.
        server, url = serve(HostileServer)
        records = []
        engine = Engine(Endpoint(url), "/v1/completions", 30.0, records.append)
        try:
            engine.start({"id": 0, "max_tokens": 4}, json.dumps({"prompt": "empty_text"}).encode())
            deadline = time.monotonic() + 30
            while not records and time.monotonic() < deadline:
                engine.poll(0.05)
        finally:
            engine.close()
            server.shutdown()
            server.server_close()
        [rec] = records
        self.assertTrue(rec["ok"], rec["error"])
        self.assertEqual(len(rec["itl"]), 3, "four token messages: a TTFT and three ITL samples")
        self.assertEqual(rec["client_tokens"], 3)
        self.assertEqual(rec["output_tokens"], 4)
        self.assertIsNone(rec["usage_problem"])

    def test_a_chat_role_only_opening_is_no_token_message_but_an_empty_content_one_is(self):
        # Some servers send the role-only message before prefill: timed from it, TTFT would read ~0 ms.
        role_only = {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}
        empty = {"choices": [{"index": 0, "delta": {"content": ""}}]}
        self.assertIsNone(message_content(role_only))
        self.assertEqual(message_content(empty), "")
        self.assertEqual(message_content({"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hi"}}]}), "Hi")


class ServerCounters(unittest.TestCase):
    def test_a_metrics_counter_read_as_nan_or_infinity_settles_no_usage(self):
        from infbench_agent.macro.command import trust_streamed_counts

        for counted in (float("nan"), float("inf")):
            records = [{"ok": True, "output_tokens": 8, "client_tokens": 4}]
            metrics = {"available": True, "generation_tokens_match": False, "server_generation_tokens": counted}
            self.assertFalse(trust_streamed_counts(metrics, records))
            self.assertEqual(records[0]["output_tokens"], 8)


class ChunkSizes(unittest.TestCase):
    def test_a_chunk_size_that_is_not_plain_hexadecimal_is_a_bad_response_not_a_chunk(self):
        # int(size, 16) would read "-5" as a negative chunk and "0x5" as five bytes.
        for line in (b"zz", b"-5", b"0x5", b"+5"):
            with self.assertRaises(BadResponse, msg=line):
                ChunkedDecoder().feed(line + b"\r\nhello\r\n0\r\n\r\n")
        self.assertEqual(ChunkedDecoder().feed(b"5;name=value\r\nhello\r\n0\r\n\r\n"), b"hello")


class NumbersFromAServer(unittest.TestCase):
    def test_metrics_values_are_read_as_prometheus_reads_them_and_no_further(self):
        from infbench_agent.macro.metrics import parse_prometheus_totals, prometheus_value

        # The text format's value is Go's ParseFloat's: a sign and leading zeros are numbers there.
        self.assertEqual([prometheus_value(v) for v in ("+5", "007", "1e3", ".5", "-Inf", "0x1p4")], [5, 7, 1000, 0.5, -math.inf, 16])
        # Python's float() reads these too; Prometheus does not.
        for text in ("1_000", "\u0665", "\u00b2", "infinit", "0x10", "5 "):
            self.assertIsNone(prometheus_value(text), text)
        # A counter with a sample that is no count is left out whole, not summed into nan or too few.
        text = 'vllm:generation_tokens_total{e="0"} 7\nvllm:generation_tokens_total{e="1"} NaN\nvllm:prompt_tokens_total 1_000\nx 3\n'
        self.assertEqual(parse_prometheus_totals(text, ["vllm:generation_tokens_total", "vllm:prompt_tokens_total", "x"]), {"x": 3})

    def test_http_numbers_are_ascii_digits_only(self):
        from infbench_agent.http import ascii_digits, status_code

        self.assertEqual(
            [status_code(line) for line in ("HTTP/1.1 200 OK", "HTTP/1.0 500", "HTTP/1.1 +200 OK", "HTTP/1.1 0200 OK")],
            [200, 500, None, None],
        )
        self.assertIsNone(status_code("HTTP/1.1 \u0662\u0660\u0660 OK"))
        self.assertEqual([ascii_digits(t) for t in ("12", "\u00b2", "+5", "", "1_0")], [True, False, False, False, False])


class BigMessages(unittest.TestCase):
    def test_a_big_message_costs_each_read_its_own_bytes_not_all_that_came_before(self):
        # A 10 MB first token comes in ~40 reads. Joined and searched again at every read, its bytes cost the
        # client ~0.25 s of CPU before its last read (the tokens behind it waited), so its stamp came late and
        # TPOT read 7.00 ms where the server paced 8 ms. The work before an event ends must grow as its size.
        from infbench_agent.macro.metrics import SSEParser

        def cpu_before_the_end(mb):
            body = b"data: " + b"y" * (mb << 20) + b"\n\n"
            pieces = [body[i : i + 262144] for i in range(0, len(body), 262144)][:-1]
            best = math.inf
            for _ in range(3):
                parser, start = SSEParser(), time.process_time()
                for piece in pieces:
                    self.assertEqual(parser.feed(piece), [])
                best = min(best, time.process_time() - start)
            return best

        # 16 times the bytes: about 16 times the work where it is linear (measured 17), 94 where it was not.
        self.assertLess(cpu_before_the_end(32) / max(cpu_before_the_end(2), 1e-4), 32)

    def test_an_event_split_over_many_reads_is_parsed_once_whole(self):
        from infbench_agent.macro.metrics import SSEParser

        parser = SSEParser()
        body = b"data: " + b"y" * 100000 + b"\r\n\r\ndata: two\n\n"
        out = []
        for i in range(0, len(body), 7):
            out += parser.feed(body[i : i + 7])
        self.assertEqual(out, ["y" * 100000, "two"])
        self.assertEqual(parser.pending, b"")


def trickling_listener(reply):
    """A loopback server that sends `reply` a byte every 0.1 s to its one client."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)

    def trickle():
        conn, _ = listener.accept()
        conn.recv(65536)
        try:
            for byte in reply:
                conn.sendall(bytes([byte]))
                time.sleep(0.1)
        except OSError:
            pass
        conn.close()

    threading.Thread(target=trickle, daemon=True).start()
    return listener


class TrickledReplies(unittest.TestCase):
    def test_the_probe_gives_up_on_headers_a_byte_at_a_time_at_its_bound(self):
        from infbench_agent import http

        listener = trickling_listener(b"HTTP/1.1 200 OK\r\nX-Pad: " + b"y" * 1000)
        started = time.monotonic()
        try:
            status, _, _, error = http.request(f"http://127.0.0.1:{listener.getsockname()[1]}/v1/models", 1.0)
        finally:
            listener.close()
        self.assertEqual((status, error), (None, "no complete answer within 2 s: the server sends its reply too slowly"))
        self.assertLess(time.monotonic() - started, 5)

    def test_a_reply_to_v1_models_a_byte_at_a_time_is_bounded_as_a_whole_not_per_read(self):
        # Each read gets a byte within the timeout, so a bound on single reads never ends the request.
        from infbench_agent.http import simple_request

        listener = trickling_listener(b"HTTP/1.1 200 OK\r\n\r\n" + b" " * 1000)
        started = time.monotonic()
        try:
            with self.assertRaisesRegex(OSError, "did not finish its reply within 1 s"):
                simple_request(Endpoint(f"http://127.0.0.1:{listener.getsockname()[1]}"), "GET", "/v1/models", timeout=1.0)
        finally:
            listener.close()
        self.assertLess(time.monotonic() - started, 5)


class StalledStream(unittest.TestCase):
    def test_a_request_queued_behind_streaming_ones_is_no_stall(self):
        # One stream that keeps sending past the stall bound while another waits silent for its first token:
        # the server is alive, so the waiting one is queued, not stalled.
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(2)
        port = listener.getsockname()[1]
        head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
        tok = b'data: {"choices":[{"index":0,"text":" t"}]}\n\n'
        conns = []

        def serve_two():
            for _ in range(2):
                c, _ = listener.accept()
                c.recv(65536)
                conns.append(c)
            busy, queued = conns
            busy.sendall(head)
            queued.sendall(head)
            for _ in range(60):
                busy.sendall(tok)
                time.sleep(0.05)
            busy.sendall(b"data: [DONE]\n\n")
            busy.close()
            queued.sendall(tok + b"data: [DONE]\n\n")
            queued.close()

        threading.Thread(target=serve_two, daemon=True).start()
        records = []
        # The queued request waits three times the bound; the busy stream sends every 50 ms of it.
        engine = Engine(Endpoint(f"http://127.0.0.1:{port}"), "/v1/completions", 30.0, records.append, stall_timeout=1.0)
        try:
            engine.start({"id": 0}, b"{}")
            engine.start({"id": 1}, b"{}")
            deadline = time.monotonic() + 30
            while len(records) < 2 and time.monotonic() < deadline:
                engine.poll(0.01)
        finally:
            engine.close()
            listener.close()
        self.assertEqual([r.get("reason") for r in records], [None, None], [r.get("error") for r in records])


if __name__ == "__main__":
    unittest.main()
