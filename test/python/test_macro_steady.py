"""A level's steady window (agent/infbench_agent/macro/steady.py): ramp and drain trimmed, latencies of
the requests that lived inside it, throughput of the tokens that arrived inside it."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "agent"))

from infbench_agent.macro.steady import steady_window  # noqa: E402


def request(send, ttft, tokens, gap):
    itl = [gap] * (tokens - 1)
    return {
        "ok": True,
        "send": send,
        "ttft": ttft,
        "itl": itl,
        "e2el": ttft + gap * (tokens - 1),
        "finish": send + ttft + gap * (tokens - 1),
        "output_tokens": tokens,
    }


class SteadyWindow(unittest.TestCase):
    def test_the_ramp_and_the_drain_are_left_out(self):
        # Two streams. The first requests start together with a slow prefill (TTFT 0.5 s); later ones take 0.1 s.
        records = [request(0.0, 0.5, 11, 0.05), request(0.0, 0.5, 21, 0.05)]
        t = records[0]["finish"]  # 1.0: the first finish opens the window
        for i in range(6):
            records.append(request(t, 0.1, 11, 0.05))
            t = records[-1]["finish"]
        last_send = records[-1]["send"]
        window = steady_window(records, [50, 99])
        self.assertEqual(window["start_s"], 1.0)
        self.assertEqual(window["end_s"], round(last_send, 4))
        # inside: the requests sent at or after 1.0 that finished by the last send (the last is the drain)
        self.assertEqual(window["requests"], 5)
        self.assertAlmostEqual(window["mean_ttft_ms"], 100.0)
        self.assertAlmostEqual(window["mean_tpot_ms"], 50.0)

    def test_tokens_are_counted_where_they_arrived(self):
        # One stream, one token every 0.1 s for 10 s across several requests: 10 tokens a second inside.
        records, t = [], 0.0
        for _ in range(10):
            records.append(request(t, 0.1, 10, 0.1))
            t = records[-1]["finish"]
        window = steady_window(records, [50])
        self.assertAlmostEqual(window["output_throughput"], 10.0, delta=0.6)

    def test_a_level_too_short_has_none(self):
        self.assertIsNone(steady_window([request(0.0, 0.1, 5, 0.01) for _ in range(8)], [50]))


if __name__ == "__main__":
    unittest.main()
