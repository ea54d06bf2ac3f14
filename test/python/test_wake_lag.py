"""The load generator's wake-up lag: how much longer than asked its sleeps take on a loaded host."""

import os
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "agent"))

from infbench_agent.macro.wake_lag import WakeLagSampler  # noqa: E402


class FakeHost:
    """A clock and a sleep whose wake-ups come `late_ms` after the time asked, one value per sleep."""

    def __init__(self, late_ms):
        self.now = 100.0
        self.late_ms = list(late_ms)

    def clock(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds + self.late_ms.pop(0) / 1000.0


class WakeLagTest(unittest.TestCase):
    def test_reports_how_late_the_sleeps_woke(self):
        # 99 sleeps on time, one 30 ms late: a host that kept the client from a CPU once.
        host = FakeHost([0.0] * 99 + [30.0])
        sampler = WakeLagSampler(period_s=0.01, clock=host.clock, sleep=host.sleep)
        sampler.run(rounds=100)
        figures = sampler.figures()
        self.assertEqual(figures["samples"], 100)
        self.assertAlmostEqual(figures["max"], 30.0, places=3)
        self.assertGreater(figures["p99"], 0.0)

    def test_a_steadily_loaded_host_reads_its_lag_at_p99(self):
        host = FakeHost([25.0] * 50)
        sampler = WakeLagSampler(period_s=0.01, clock=host.clock, sleep=host.sleep)
        sampler.run(rounds=50)
        self.assertAlmostEqual(sampler.figures()["p99"], 25.0, places=3)

    def test_no_samples_say_none(self):
        self.assertEqual(WakeLagSampler().figures()["p99"], None)

    def test_a_real_thread_stops_and_reports(self):
        sampler = WakeLagSampler(period_s=0.002).start()
        time.sleep(0.05)
        figures = sampler.stop()
        self.assertGreater(figures["samples"], 0)
        self.assertIsNotNone(figures["p99"])


if __name__ == "__main__":
    unittest.main()
