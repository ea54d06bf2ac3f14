"""The GPUs over a macro level: energy from a power trace, J per token, throttling named, and the sampler
against a stand-in nvidia-smi (test/support/fake-nvidia-smi) that plays a known power trace."""
import json
import os
import subprocess
import sys
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
AGENT = os.path.join(ROOT, "agent")
sys.path.insert(0, AGENT)

from infbench_agent.macro import gpu_telemetry as gt  # noqa: E402

FAKE_SMI = os.path.join(ROOT, "test", "support", "fake-nvidia-smi")


def sample(t, gpu, watts, reasons=0):
    return {
        "t": t,
        "gpu": gpu,
        "power_w": watts,
        "sm_clock_mhz": 1980.0,
        "util_percent": 90.0,
        "mem_used_mib": 1.0,
        "temp_c": 60.0,
        "reasons": reasons,
    }


class Energy(unittest.TestCase):
    def test_a_ramp_integrates_to_its_area(self):
        # 100 W rising to 300 W over 2 s: 400 J, the trapezoid exactly.
        self.assertAlmostEqual(gt.energy_joules([(0.0, 100.0), (1.0, 200.0), (2.0, 300.0)], 0.0, 2.0), 400.0)

    def test_the_window_cuts_between_samples_by_interpolation(self):
        # From 0.5 s (150 W) to 1.5 s (250 W): 200 J.
        self.assertAlmostEqual(gt.energy_joules([(0.0, 100.0), (1.0, 200.0), (2.0, 300.0)], 0.5, 1.5), 200.0)

    def test_past_the_samples_the_power_holds(self):
        self.assertAlmostEqual(gt.energy_joules([(1.0, 500.0)], 0.0, 4.0), 2000.0)
        self.assertIsNone(gt.energy_joules([], 0.0, 1.0))

    def test_joules_per_token_and_tokens_per_watt_sum_every_gpu(self):
        # Two GPUs at 300 W and 500 W for 10 s: 8000 J; 4000 tokens make 2 J/token and 0.5 tokens/s per W.
        samples = [sample(t, 0, 300.0) for t in range(11)] + [sample(t, 1, 500.0) for t in range(11)]
        out = gt.summarize(samples, (0.0, 10.0), 4000)
        self.assertEqual(out["gpus"], 2)
        self.assertAlmostEqual(out["energy_j"], 8000.0)
        self.assertAlmostEqual(out["mean_power_w"], 800.0)
        self.assertAlmostEqual(out["joules_per_output_token"], 2.0)
        self.assertAlmostEqual(out["output_tokens_per_s_per_watt"], 0.5)
        self.assertEqual(out["throttled"], [])

    def test_power_and_thermal_throttling_are_named_idle_is_not(self):
        samples = [sample(0, 0, 700.0, 0x4), sample(1, 0, 700.0, 0x40 | 0x1), sample(2, 0, 100.0, 0x1), sample(3, 0, 100.0, 0)]
        out = gt.summarize(samples, (0.0, 3.0), 10)
        self.assertEqual(
            {(t["reason"], t["kind"]) for t in out["throttled"]}, {("sw_power_cap", "power"), ("hw_thermal_slowdown", "thermal")}
        )
        self.assertEqual(out["per_gpu"][0]["throttle"], {"hw_thermal_slowdown": 0.25, "sw_power_cap": 0.25})

    def test_a_row_reads_nvidia_smis_csv_and_its_gaps(self):
        row = gt.parse_row("3, 612.45, 1980, 3201, [N/A], 130000, 71, 700.00, 0x0000000000000004")
        self.assertEqual((row["gpu"], row["power_w"], row["util_percent"], row["reasons"]), (3, 612.45, None, 4))
        self.assertIsNone(gt.parse_row("No devices were found"))


class AgainstAStandInNvidiaSmi(unittest.TestCase):
    def env(self, **more):
        return {**os.environ, "PATH": FAKE_SMI + os.pathsep + os.environ["PATH"], **more}

    def test_a_known_power_trace_gives_a_known_energy(self):
        # Both GPUs at 250 W throughout: whatever the sampling, 500 W over the window.
        old = dict(os.environ)
        os.environ.update(self.env(FAKE_GPU_POWER_TRACE="250", FAKE_GPU_REASONS="0x4"))
        try:
            sampler = gt.GpuSampler(100).start()
            time.sleep(0.6)
            sampler.stop()
        finally:
            os.environ.clear()
            os.environ.update(old)
        out = sampler.level_result(1000)
        self.assertGreaterEqual(out["samples"], 4)
        self.assertEqual(out["gpus"], 2)
        # window_s is rounded to 0.1 ms: 500 W x 0.05 ms is the most that leaves.
        self.assertAlmostEqual(out["energy_j"], 500.0 * out["window_s"], delta=0.03)
        self.assertAlmostEqual(out["joules_per_output_token"], 500.0 * out["window_s"] / 1000, delta=1e-4)
        self.assertEqual([t["kind"] for t in out["throttled"]], ["power"])

    def test_a_driver_before_535_is_asked_the_old_field_name_first(self):
        old = dict(os.environ)
        os.environ.update(self.env(FAKE_GPU_OLD_DRIVER="1"))
        try:
            sampler = gt.GpuSampler(100).start()
            time.sleep(0.3)
            sampler.stop()
        finally:
            os.environ.clear()
            os.environ.update(old)
        self.assertEqual(sampler.reason_field, "clocks_throttle_reasons.active")
        self.assertTrue(sampler.samples)

    def test_runs_standalone_printing_json_lines(self):
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "infbench_agent.macro.gpu_telemetry",
                "--seconds",
                "0.5",
                "--interval-ms",
                "100",
                "--output-tokens",
                "10",
            ],
            cwd=AGENT,
            env=self.env(FAKE_GPU_POWER_TRACE="100,200"),
            capture_output=True,
            text=True,
            timeout=30,
        )
        lines = [json.loads(line) for line in out.stdout.splitlines()]
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(lines[0]["power_w"], 100.0)
        self.assertIn("unix", lines[0])
        self.assertIn("joules_per_output_token", lines[-1]["summary"])

    def test_no_gpu_tool_says_so_and_samples_nothing(self):
        sampler = gt.GpuSampler(100, found={"vendor": None, "note": "no GPU tool on this host"}).start()
        out = sampler.stop().level_result(10)
        self.assertEqual((out["samples"], out["note"]), (0, "no GPU tool on this host"))


if __name__ == "__main__":
    unittest.main()
