"""Repeated trials and the SLO search (agent/infbench_agent/macro/trials.py, macro/search.py): the intervals'
coverage in seeded repetitions, the objectives' grammar and verdicts, and the search's answer against servers
whose highest load meeting the objectives is known."""
import os
import random
import statistics
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "agent"))

import argparse  # noqa: E402

from infbench_agent import events  # noqa: E402
from infbench_agent.macro.search import LevelSchedule, SloSearch, level_schedule  # noqa: E402
from infbench_agent.macro.trials import interval, judge_all, parse_slo, t_quantile_975, trial_figures  # noqa: E402


class StudentT(unittest.TestCase):
    def test_quantiles_match_the_tables(self):
        # Reference values: any Student t table (two-sided 95%).
        for df, want in ((1, 12.706), (2, 4.303), (4, 2.776), (9, 2.262), (30, 2.042), (40, 2.021), (120, 1.980)):
            self.assertAlmostEqual(t_quantile_975(df), want, places=3, msg=f"df={df}")

    def test_one_trial_has_no_interval(self):
        one = interval([12.5])
        self.assertEqual(one["mean"], 12.5)
        self.assertIsNone(one["half_width"])
        self.assertIsNone(one["cv"])

    def test_interval_and_cv_by_hand(self):
        got = interval([10.0, 12.0, 14.0])
        self.assertAlmostEqual(got["mean"], 12.0)
        self.assertAlmostEqual(got["sd"], 2.0)
        self.assertAlmostEqual(got["half_width"], 4.3027 * 2.0 / 3**0.5, places=4)
        self.assertAlmostEqual(got["cv"], 2.0 / 12.0)


class Coverage(unittest.TestCase):
    """A level's figure is drawn afresh every trial; the 95% interval over N trials must hold the figure's true
    mean in about 95 of 100 runs. Pure simulation: each trial's TPOT p99 is a draw around a known mean."""

    def covered(self, rng: random.Random, runs: int, trials: int, mean: float, sd: float) -> int:
        hits = 0
        for _ in range(runs):
            got = interval([rng.gauss(mean, sd) for _ in range(trials)])
            hits += got["mean"] - got["half_width"] <= mean <= got["mean"] + got["half_width"]
        return hits

    def test_about_95_of_100_seeded_intervals_cover_the_known_mean(self):
        # Binomial(100, 0.95): 90..99 holds 99.4% of its mass; seeded, so the count is the same every time.
        for seed, trials in ((1, 3), (2, 5), (3, 10)):
            hits = self.covered(random.Random(seed), 100, trials, mean=48.0, sd=3.0)
            self.assertTrue(90 <= hits <= 99, f"{hits} of 100 intervals ({trials} trials each) covered the mean")

    def test_coverage_is_95_percent_over_many_runs(self):
        # 4000 runs: the share's standard error is 0.34%, so 94-96% is a three-sigma check of the t quantiles.
        hits = self.covered(random.Random(37), 4000, 4, mean=1200.0, sd=90.0)
        self.assertTrue(0.94 <= hits / 4000 <= 0.96, f"coverage {hits / 4000:.3f}")

    def test_a_normal_quantile_instead_of_t_would_cover_too_little(self):
        # Why Student's t: with 3 trials, mean ± 1.96 s/sqrt(n) covers only ~80% (the test would catch such a slip).
        rng = random.Random(5)
        hits = 0
        for _ in range(2000):
            vals = [rng.gauss(0.0, 1.0) for _ in range(3)]
            hits += abs(statistics.mean(vals)) <= 1.96 * statistics.stdev(vals) / 3**0.5
        self.assertLess(hits / 2000, 0.9)


class Objectives(unittest.TestCase):
    def test_grammar(self):
        slos = parse_slo("ttft_p99<=2s, tpot_p90<=50,itl_mean<=30ms,e2el<=9000,goodput>=95%")
        self.assertEqual([s.key for s in slos], ["p99_ttft_ms", "p90_tpot_ms", "mean_itl_ms", "p99_e2el_ms", "good_share"])
        self.assertEqual(slos[0].limit, 2000.0)
        self.assertEqual(slos[4].limit, 0.95)
        self.assertEqual(parse_slo("goodput>=3.5")[0].key, "request_goodput")

    def test_bad_objectives_say_how_to_write_them(self):
        for bad in ("ttft<2000", "tpot_p99>=50", "goodput<=90%", "latency_p99<=5", "ttft_p99<=0", "goodput>=150%"):
            with self.assertRaises(ValueError, msg=bad):
                parse_slo(bad)

    def test_verdicts_follow_the_intervals(self):
        slos = parse_slo("tpot_p99<=50")
        summaries = lambda vals: [{"p99_tpot_ms": v} for v in vals]  # noqa: E731
        self.assertEqual(judge_all(slos, trial_figures(summaries([40, 41, 42])))["verdict"], "meets")
        self.assertEqual(judge_all(slos, trial_figures(summaries([60, 61, 62])))["verdict"], "breaks")
        # Mean 49 below the limit, but the interval reaches past it: not shown either way.
        self.assertEqual(judge_all(slos, trial_figures(summaries([44, 49, 54])))["verdict"], "undecided")
        # One trial: the figure as it stands.
        self.assertEqual(judge_all(slos, trial_figures(summaries([49.9])))["verdict"], "meets")

    def test_goodput_share_is_good_requests_over_completed(self):
        slos = parse_slo("goodput>=90%")
        level = {"request_goodput": 1.8, "request_throughput": 2.0}
        self.assertEqual(judge_all(slos, trial_figures([level]))["verdict"], "meets")
        level = {"request_goodput": 1.7, "request_throughput": 2.0}
        self.assertEqual(judge_all(slos, trial_figures([level]))["verdict"], "breaks")


def run_search(mode, start, maximum, meets):
    search = SloSearch(mode, start, maximum)
    visited = []
    while True:
        value = search.next_value()
        if value is None:
            return search, visited
        visited.append(value)
        search.record(value, "meets" if meets(value) else "breaks")


class Search(unittest.TestCase):
    def test_finds_every_known_highest_concurrency(self):
        for knee in range(1, 200):
            search, visited = run_search("concurrency", 1, 256, lambda c: c <= knee)
            self.assertEqual(search.lo, knee)
            self.assertEqual(search.hi, knee + 1)
            self.assertEqual(len(visited), len(set(visited)), f"knee {knee}: a level ran twice: {visited}")
            # Doubling to the bracket, then halving it: about 2 log2(knee) levels, against knee + 1 for a sweep.
            self.assertLessEqual(len(visited), 2 * (knee.bit_length() + 1), f"knee {knee}: {visited}")

    def test_the_bracket_and_the_order_of_levels(self):
        search, visited = run_search("concurrency", 1, 64, lambda c: c <= 24)
        self.assertEqual(visited, [1, 2, 4, 8, 16, 32, 24, 28, 26, 25])
        self.assertEqual(search.bracket, [16, 32])

    def test_rate_search_within_five_percent(self):
        search, visited = run_search("rate", 1.0, 256, lambda r: r <= 13.7)
        self.assertLessEqual(search.lo, 13.7)
        self.assertGreater(search.hi, 13.7)
        self.assertLessEqual(search.hi - search.lo, 0.05 * search.hi)

    def test_no_load_meets_and_every_load_meets(self):
        search, visited = run_search("concurrency", 4, 64, lambda c: False)
        self.assertEqual(visited, [4])
        self.assertIsNone(search.lo)
        search, visited = run_search("concurrency", 1, 20, lambda c: True)
        self.assertEqual(visited, [1, 2, 4, 8, 16, 20])
        self.assertEqual(search.lo, 20)


class Schedule(unittest.TestCase):
    def test_one_trial_visits_the_sweep_as_before(self):
        loads = [{"max_concurrency": c, "request_rate": None} for c in (1, 8)]
        schedule = LevelSchedule(loads, 1, [], None, {})
        metas = []
        for meta in schedule:
            metas.append(meta)
            summary = dict(meta)
            schedule.record(summary)
            self.assertNotIn("trial_stats", summary)
        self.assertEqual(metas, loads)
        self.assertIsNone(schedule.result())

    def test_trials_repeat_each_load_and_the_last_carries_the_interval(self):
        loads = [{"max_concurrency": 4, "request_rate": None}]
        schedule = LevelSchedule(loads, 3, parse_slo("tpot_p99<=50"), None, {})
        last = None
        for meta, tpot in zip(schedule, (40.0, 42.0, 44.0)):
            last = {**meta, "p99_tpot_ms": tpot, "output_throughput": 100.0 + tpot}
            schedule.record(last)
        self.assertEqual((last["trial"], last["trials"]), (3, 3))
        stats = last["trial_stats"]["p99_tpot_ms"]
        self.assertAlmostEqual(stats["mean"], 42.0)
        self.assertAlmostEqual(stats["half_width"], 4.3027 * 2 / 3**0.5, places=3)
        self.assertEqual(last["slo"]["verdict"], "meets")
        self.assertEqual(schedule.result()["line"], "c=4 meets TPOT p99 ≤ 50 ms (the highest load run)")

    def test_search_answer_line_names_the_broken_objective(self):
        slos = parse_slo("ttft_p99<=2000,tpot_p99<=50")
        schedule = LevelSchedule([], 1, slos, SloSearch("concurrency", 8, 64), {"max_concurrency": None, "request_rate": None})
        for meta in schedule:
            c = meta["max_concurrency"]
            schedule.record({**meta, "p99_ttft_ms": 100.0 * c, "p99_tpot_ms": 10.0 + 1.6 * c})
        line = schedule.result()["line"]
        # TPOT 10 + 1.6 c ≤ 50 holds up to c = 25; TTFT 100 c ≤ 2000 up to c = 20.
        self.assertTrue(line.startswith("c=20 meets TTFT p99 ≤ 2 s and TPOT p99 ≤ 50 ms; c=21 breaks TTFT p99"), line)
        self.assertEqual(schedule.result()["bracket"], [16, 32])

    def test_a_spread_too_wide_is_said_and_not_taken_as_meeting(self):
        slos = parse_slo("tpot_p99<=50")
        schedule = LevelSchedule([], 2, slos, SloSearch("concurrency", 1, 4), {"max_concurrency": None, "request_rate": None})
        spread = {1: (20.0, 21.0), 2: (30.0, 31.0), 4: (40.0, 58.0), 3: (45.0, 45.2)}
        for meta in schedule:
            c = meta["max_concurrency"]
            schedule.record({**meta, "p99_tpot_ms": spread[c][meta["trial"] - 1]})
        result = schedule.result()
        self.assertEqual(result["highest_meeting"], 3)
        self.assertIn("; c=4: spread too wide to decide on TPOT p99", result["line"])


class ScheduleArguments(unittest.TestCase):
    def args(self, **more):
        base = {"trials": 1, "search": None, "search_max": None, "max_concurrency": None, "burstiness": 1.0, "goodput": None}
        return argparse.Namespace(**{**base, **more})

    def test_a_search_needs_objectives_and_a_goodput_objective_needs_its_limits(self):
        with self.assertRaisesRegex(events.AgentError, "--search needs the objectives"):
            level_schedule(self.args(search="concurrency"), [1], [], [])
        with self.assertRaisesRegex(events.AgentError, "goodput objective needs the limits"):
            level_schedule(self.args(), [1], [], parse_slo("goodput>=95%"))
        with self.assertRaisesRegex(events.AgentError, "--trials must be at least 1"):
            level_schedule(self.args(trials=0), [1], [], [])

    def test_a_rate_search_starts_at_the_first_rate(self):
        schedule = level_schedule(self.args(search="rate", search_max=8), [1], [2.0], parse_slo("ttft_p99<=500"))
        first = next(iter(schedule))
        self.assertEqual((first["request_rate"], first["burstiness"]), (2.0, 1.0))


if __name__ == "__main__":
    unittest.main()
