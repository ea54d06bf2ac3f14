"""Long prompts and the load generator's schedule: a level's request bodies are made before its start time, so a
50,000-token prompt's making (tens of ms each) is not read as the client's scheduling lag."""
import os
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "agent"))

from test_macro_loadgen import run_macro  # noqa: E402
from recorder import Recorder, serve_recorder  # noqa: E402


class LongPrompts(unittest.TestCase):
    def test_the_first_sends_wait_on_no_prompt_being_made(self):
        url = serve_recorder(self)
        result, events = run_macro(
            url, "--concurrency", "1", "--requests", "24", "--input-len", "50000", "--output-len", "2", "--warmup", "0"
        )
        [level] = result["levels"]
        self.assertEqual(level["completed"], 24)
        self.assertEqual({len(body["prompt"].split()) for _, _, body in Recorder.seen}, {50000})
        lags = [e["record"]["lag_ms"] for e in events if e["type"] == "macro.request"]
        # Made after the start, the 24 bodies (about 12 ms each on a 2-core VM) put 300 ms before the first send.
        self.assertLess(max(lags), 50, lags)


if __name__ == "__main__":
    unittest.main()
