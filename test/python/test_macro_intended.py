"""Latency from the intended send time: dispatch delay figures, TTFT and E2EL corrected for coordinated
omission, a client named as the limit only when its delay grows, and the slow-client hook's hold."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "agent"))

from infbench_agent.macro.intended import SlowClient, from_intended  # noqa: E402


def record(intended, send, ttft=0.1, e2el=0.5, ok=True):
    return {"intended": intended, "send": send, "ttft": ttft, "e2el": e2el, "ok": ok}


class FromIntended(unittest.TestCase):
    def test_a_client_that_falls_behind_is_named_and_its_wait_is_counted(self):
        # Arrivals every 20 ms, each send costing 30 ms: request k goes 30 + 10 k ms late.
        records = [record(0.02 * k, 0.02 * k + 0.030 + 0.010 * k) for k in range(40)]
        out = from_intended(records, [50, 99], "arrival")
        d = out["dispatch_delay_ms"]
        self.assertAlmostEqual(d["max"], 420.0, places=6)
        self.assertAlmostEqual(d["p50"], 30 + 10 * 19.5, places=6)
        self.assertAlmostEqual(d["mean"], 225.0, places=6)
        self.assertEqual(out["dispatch_delay_trend"], {"first_quarter_ms": 75.0, "last_quarter_ms": 375.0})
        self.assertTrue(out["client_limited"])
        # TTFT from the intended time: 100 ms after the send, plus the delay.
        self.assertAlmostEqual(out["ttft_ms"]["p99"], 100 + (30 + 10 * 38.61), places=3)
        self.assertAlmostEqual(out["e2el_ms"]["mean"], 500 + 225, places=6)

    def test_a_steady_delay_is_jitter_not_a_limit(self):
        records = [record(0.1 * k, 0.1 * k + 0.012) for k in range(40)]
        out = from_intended(records, [99], "arrival")
        self.assertAlmostEqual(out["dispatch_delay_ms"]["p50"], 12.0, places=6)
        self.assertFalse(out["client_limited"])

    def test_failed_requests_count_in_the_delay_not_in_the_latency(self):
        records = [record(0.0, 0.005), record(0.1, 0.107, ok=False)]
        out = from_intended(records, [50], "slot")
        self.assertEqual((out["basis"], out["requests"]), ("slot", 2))
        self.assertAlmostEqual(out["dispatch_delay_ms"]["max"], 7.0, places=6)
        self.assertAlmostEqual(out["ttft_ms"]["p50"], 105.0, places=6)

    def test_no_intended_times_no_figures(self):
        out = from_intended([{"send": 1.0, "ok": True}], [50], "slot")
        self.assertEqual(out["dispatch_delay_ms"]["p50"], None)
        self.assertFalse(out["client_limited"])


class HoldSend(unittest.TestCase):
    def test_holds_to_the_clock_sleeping_all_but_the_last_millisecond(self):
        now = [0.0]
        slept = []

        def clock():
            now[0] += 0.0001  # each read of the clock moves it on, as a spin does
            return now[0]

        def sleep(s):
            slept.append(s)
            now[0] += s

        SlowClient(0.020, clock, sleep).hold(0.0)
        self.assertAlmostEqual(slept[0], 0.0189, places=6)
        self.assertGreaterEqual(now[0], 0.020)
        self.assertLess(now[0], 0.0203)

    def test_a_hold_woken_late_does_not_push_the_next_ones_back(self):
        # Requests due every 10 ms, each taking 20 ms of the client's work: every hold ends 20 ms after the
        # last one's end, even where a sleep overslept by 5 ms, so the client's pace stays one send every 20 ms.
        now = [0.0]
        late = [0.005, 0.0, 0.0, 0.0]

        def clock():
            now[0] += 0.00001  # a spin's reads move the clock on
            return now[0]

        def sleep(s):
            now[0] += s + late.pop(0)

        client = SlowClient(0.020, clock, sleep)
        ends = []
        for k in range(4):
            client.hold(0.010 * k)
            ends.append(round(client.free_at, 6))
        self.assertEqual(ends, [0.02, 0.04, 0.06, 0.08])
        self.assertAlmostEqual(now[0], 0.08, places=4)
        # Idle, a request due later starts its work when due.
        late.append(0.0)
        client.hold(0.5)
        self.assertAlmostEqual(client.free_at, 0.52)


if __name__ == "__main__":
    unittest.main()
