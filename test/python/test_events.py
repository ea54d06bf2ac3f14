import glob
import io
import json
import os
import re
import subprocess
import sys
import unittest
from contextlib import redirect_stdout

from infbench_agent import events

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
AGENT = os.path.join(ROOT, "agent", "infbench_agent")


class EventLineTest(unittest.TestCase):
    def test_one_versioned_json_object_per_line(self):
        buf = io.StringIO()
        with redirect_stdout(buf):
            events.emit(events.PROGRESS, done=1, total=2, message="level 1 of 2\nnext")
            events.log("hello")
        lines = buf.getvalue().splitlines()
        self.assertEqual(len(lines), 2)
        first = json.loads(lines[0])
        self.assertEqual(first["v"], events.SCHEMA_VERSION)
        self.assertEqual(first["type"], "progress")
        self.assertEqual(first["message"], "level 1 of 2\nnext")

    def test_server_text_in_a_message_cannot_drive_the_terminal_and_its_lines_stay(self):
        buf = io.StringIO()
        with redirect_stdout(buf):
            events.log("HTTP 500: \x1b]0;PWNED-TITLE\x07 died \x1b[2J\u202e\r\nlast line")
        message = json.loads(buf.getvalue())["message"]
        self.assertEqual(message, "HTTP 500: \ufffd]0;PWNED-TITLE\ufffd died \ufffd[2J\ufffd\nlast line")

    def test_a_warning_carries_its_next_step_as_a_hint_with_remedies_as_an_error_does(self):
        buf = io.StringIO()
        with redirect_stdout(buf):
            events.log("c=8: the client sent late", "warn", hint="raise {0}", remedies=[events.flag("--workers")])
            events.log("plain")
        warned, plain = [json.loads(line) for line in buf.getvalue().splitlines()]
        self.assertEqual(events.problems(warned), [])
        self.assertEqual((warned["hint"], warned["remedies"]), ("raise {0}", [{"kind": "flag", "flag": "--workers"}]))
        self.assertNotIn("hint", plain)

    def test_refuses_nan_rather_than_writing_invalid_json(self):
        with redirect_stdout(io.StringIO()):
            with self.assertRaises(ValueError):
                events.emit(events.LOG, level="info", message=float("nan"))


class OneSchemaTest(unittest.TestCase):
    def test_the_typescript_types_are_generated_from_this_schema(self):
        out = subprocess.run(
            [sys.executable, os.path.join(ROOT, "scripts", "gen-agent-schema.py"), "--check"], capture_output=True, text=True, timeout=60
        )
        self.assertEqual(out.returncode, 0, out.stderr)

    def test_the_agent_version_is_the_products(self):
        with open(os.path.join(ROOT, "package.json"), encoding="utf-8") as f:
            self.assertEqual(events.AGENT_VERSION, json.load(f)["version"])

    def test_every_error_code_the_agent_raises_is_in_the_union(self):
        used = set()
        for path in glob.glob(os.path.join(AGENT, "**", "*.py"), recursive=True):
            with open(path, encoding="utf-8") as f:
                used |= set(re.findall(r'(?:AgentError|events\.error|error)\(\s*"([a-z_]+)"', f.read()))
        self.assertGreater(len(used), 10)
        self.assertEqual(used - set(events.ERROR_CODES), set())

    def test_a_conforming_event_passes_and_a_drifted_one_is_named(self):
        hello = {
            "v": events.SCHEMA_VERSION,
            "type": "hello",
            "t": 1.0,
            "agent_version": events.AGENT_VERSION,
            "command": "probe",
            "pid": 1,
            "python": "3.8.18",
            "executable": "/usr/bin/python3",
        }
        self.assertEqual(events.problems(hello), [])
        without = {k: v for k, v in hello.items() if k != "executable"}
        self.assertEqual(events.problems(without), ["hello.executable is missing"])
        self.assertTrue(events.problems({**hello, "command": "bench"}))
        self.assertTrue(events.problems({"v": events.SCHEMA_VERSION, "type": "error", "t": 1.0, "code": "oops", "message": "m"}))
        self.assertEqual(
            events.problems({"v": events.SCHEMA_VERSION, "type": "log", "t": 1.0, "level": "warn", "message": "m", "topic": "gemm_kernel"}),
            [],
        )

    def test_the_hello_says_what_the_schema_asks(self):
        out = subprocess.run(
            [sys.executable, "-m", "infbench_agent", "probe", "--url", "http://127.0.0.1:9", "--timeout", "1"],
            cwd=os.path.dirname(AGENT),
            capture_output=True,
            text=True,
            timeout=60,
        )
        hello = json.loads(out.stdout.splitlines()[0])
        self.assertEqual(events.problems(hello), [])
        self.assertEqual(hello["python"], sys.version.split()[0])


if __name__ == "__main__":
    unittest.main()
