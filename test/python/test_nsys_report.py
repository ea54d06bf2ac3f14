"""Known answers of the Nsight Systems reader on real H200 exports (test/fixtures/nsys/README.md)."""

import collections
import contextlib
import io
import json
import os
import shutil
import sqlite3
import tempfile
import unittest

from infbench_agent.profile.nsys_report import NsysReport, ReportError, main, module_name, write_kineto

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(ROOT, "test", "fixtures", "nsys")
ACTIVITY = ("kernel", "memcpy", "memset")


def read(name):
    records = list(NsysReport(os.path.join(FIXTURES, name + ".sqlite")).records())
    with open(os.path.join(FIXTURES, name + ".steps.json")) as f:
        log = json.load(f)
    return records, log


def by_module(records, block=False):
    """Kernels and kernel time per module path (or per block: model.layers.N.self_attn), over the decode steps."""
    count = collections.Counter()
    ns = collections.Counter()
    for r in records:
        if r["type"] in ACTIVITY and r["step"] is not None:
            key = r["module"]
            if block and key and key.startswith("model.layers."):
                key = ".".join(key.split(".")[:4])
            count[key] += 1
            ns[key] += r["end"] - r["start"]
    return count, ns


class NsysAttributionTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.graphs, cls.graphs_log = read("graphs")
        cls.eager, cls.eager_log = read("eager")

    def test_replayed_kernels_land_in_the_same_modules_as_the_eager_run(self):
        graphed = [r for r in self.graphs if r["type"] == "kernel" and r["step"] is not None and r["graphed"]]
        self.assertGreater(len(graphed), 4000, "the graph fixture replays its decode steps")
        self.assertTrue(all(r["module"] for r in graphed), "every replayed kernel is named by its capture-time range")
        g_count, _ = by_module(self.graphs)
        e_count, _ = by_module(self.eager)
        self.assertEqual(g_count, e_count, "kernels per module path, graphs against eager")
        _, g_ns = by_module(self.graphs, block=True)
        _, e_ns = by_module(self.eager, block=True)
        self.assertIn("model.layers.2.self_attn", e_ns)
        for module, ns in e_ns.items():
            # Blocks only: a layer's own range holds just its two residual adds (1.4 us each), which replay
            # 7% slower than they run eagerly; they are counted above, not timed here.
            if module is None or module.count(".") == 2:
                continue
            self.assertAlmostEqual(g_ns[module] / ns, 1.0, delta=0.05, msg=f"kernel time of {module}, graphs against eager")

    def test_each_layer_holds_the_kernels_its_blocks_launch(self):
        count, _ = by_module(self.graphs)
        steps = len(self.graphs_log["steps"])
        # Per step: the MoE block's own kernels (router softmax, topk and its sort, scatter...) and its experts' ones.
        self.assertEqual(count["model.layers.1.moe.experts"] / steps, 5)
        self.assertEqual(count["model.layers.2.moe.gate"] / steps, 1)
        self.assertEqual(count["model.layers.0.mlp.all_reduce"] / steps, 1)
        self.assertEqual(count["sampler"] / steps, 1)
        self.assertNotIn("model.layers.0.moe", count, "layer 0 has a dense MLP, no MoE")

    def test_the_step_copy_outside_every_module_is_counted_not_guessed(self):
        count, _ = by_module(self.graphs)
        # The next tokens copied into the graph's input buffer: inside the step range, in no module range.
        self.assertEqual(count[None], len(self.graphs_log["steps"]))
        names = {r["name"] for r in self.graphs if r["type"] in ACTIVITY and r["step"] is not None and r["module"] is None}
        self.assertEqual(names, {"Memcpy Device-to-Device"})

    def test_steps_match_the_loops_own_cuda_event_log(self):
        # The events bracket the step on the stream; the kernels' span starts at the first kernel. Replayed,
        # that follows at once; eager, the first launch waits on the hooks' Python (measured: 2-3% of a step).
        for records, log, within in ((self.graphs, self.graphs_log, 0.01), (self.eager, self.eager_log, 0.04)):
            spans = {}
            for r in records:
                if r["type"] in ACTIVITY and r["step"] is not None:
                    s = spans.setdefault(r["step"], [r["start"], r["end"]])
                    s[0] = min(s[0], r["start"])
                    s[1] = max(s[1], r["end"])
            self.assertEqual(sorted(spans), [s["step"] for s in log["steps"]])
            for s in log["steps"]:
                first, last = spans[s["step"]]
                ratio = (last - first) / 1e6 / s["gpuMs"]
                self.assertLessEqual(ratio, 1.0, f"graphs {log['graphs']}, step {s['step']}: kernels outside the events' bracket")
                self.assertGreaterEqual(ratio, 1.0 - within, f"graphs {log['graphs']}, step {s['step']}")

    def test_a_capture_without_nvtx_leaves_every_kernel_unattributed(self):
        records, log = read("graphs-no-nvtx")
        summary = records[-1]
        self.assertEqual(summary["type"], "nsys-summary")
        self.assertEqual(summary["attributed"], 0)
        self.assertEqual(summary["unattributed"], summary["kernels"])
        # The loop's step ranges are there (only the module hooks are off): the steps still are.
        self.assertEqual(records[0]["stepSource"], "nvtx-range")
        self.assertEqual(summary["steps"], len(log["steps"]))

    def test_with_no_step_range_each_graph_launch_is_a_step(self):
        report = NsysReport(os.path.join(FIXTURES, "graphs-no-nvtx.sqlite"), step_range="^no such range$")
        records = list(report.records())
        self.assertEqual(records[0]["stepSource"], "graph-launch")
        # 3 warm-up steps replay graphs too; the eager sampler and copy join the replay before them.
        self.assertEqual(records[-1]["steps"], 3 + 40)
        self.assertTrue(all(r["step"] is not None for r in records if r["type"] in ACTIVITY and r["graphed"]))


class NsysProfilerWindowTest(unittest.TestCase):
    def test_keeps_the_steps_between_cuda_profiler_start_and_stop(self):
        records, log = read("window")
        self.assertEqual(records[0]["profilerWindows"], 1)
        steps = sorted({r["step"] for r in records if r["type"] in ACTIVITY and r["step"] is not None})
        self.assertEqual(steps, [s["step"] for s in log["steps"]][10:30])
        self.assertEqual(records[-1]["replayedWithoutRange"], 0)

    def test_a_capture_range_keeps_the_graph_nodes_but_not_their_ranges(self):
        records, _ = read("capture-range")
        summary = records[-1]
        self.assertEqual(summary["steps"], 20)
        self.assertEqual(summary["noCaptureNode"], 0, "the node events of the start-up capture are kept")
        self.assertEqual(summary["replayedWithoutRange"], summary["graphed"], "their NVTX ranges are not")


class VllmStepRangesTest(unittest.TestCase):
    """vLLM's CUDA profiler mode names each step's NVTX range by its step annotation, never `decode_step`
    (vllm/v1/worker/gpu_worker.py annotate_profile, CudaProfilerWrapper in vllm/profiler/wrapper.py): the eager
    capture's step ranges renamed as vLLM writes them."""

    def renamed(self, name_of_step):
        folder = tempfile.mkdtemp()
        path = os.path.join(folder, "vllm-steps.sqlite")
        shutil.copy(os.path.join(FIXTURES, "eager.sqlite"), path)
        db = sqlite3.connect(path)
        rows = [r[0] for r in db.execute("SELECT rowid FROM NVTX_EVENTS WHERE text = 'decode_step' ORDER BY start")]
        for i, rowid in enumerate(rows):
            db.execute("UPDATE NVTX_EVENTS SET text = ? WHERE rowid = ?", (name_of_step(i), rowid))
        db.commit()
        db.close()
        return path, len(rows)

    def steps_and_modules(self, path):
        records = list(NsysReport(path).records())
        kernels = [r for r in records if r["type"] == "kernel"]
        return records[0], {r["step"] for r in kernels if r["step"] is not None}, {r["module"] for r in kernels}

    def test_the_step_annotation_of_vllm_0_26_marks_the_steps_and_is_never_a_module(self):
        path, n = self.renamed(lambda i: "execute_context_0(0)_generation_8(8)")
        header, steps, modules = self.steps_and_modules(path)
        self.assertEqual(header["stepSource"], "nvtx-range")
        self.assertEqual(len(steps), n)
        self.assertFalse([m for m in modules if m and m.startswith("execute_")])

    def test_a_step_that_takes_new_requests_is_prefill_not_a_decode_step(self):
        # vLLM 0.11-0.25 names: the first step admits two requests, the rest decode eight.
        path, n = self.renamed(lambda i: "execute_new_2_cached_6" if i == 0 else "execute_new_0_cached_8")
        header, steps, modules = self.steps_and_modules(path)
        self.assertEqual(len(steps), n - 1)
        self.assertNotIn(0, steps)
        self.assertFalse([m for m in modules if m and m.startswith("execute_")])
        # Written as Kineto traces for the category breakdown, the same decode steps and no more.
        with tempfile.TemporaryDirectory() as d:
            with open(write_kineto(NsysReport(path), d)[0]) as f:
                names = [e["name"] for e in json.load(f)["traceEvents"] if e["cat"] == "user_annotation"]
        self.assertEqual(names, ["execute_new_0_cached_8"] * (n - 1))


class NsysKinetoTest(unittest.TestCase):
    def test_writes_steps_launches_and_gpu_activity_as_a_kineto_trace(self):
        with tempfile.TemporaryDirectory() as d:
            report = NsysReport(os.path.join(FIXTURES, "window.sqlite"))
            files = write_kineto(report, d)
            self.assertEqual(len(files), 1)
            with open(files[0]) as f:
                events = json.load(f)["traceEvents"]
        cats = collections.Counter(e["cat"] for e in events)
        # Only the 20 steps between cudaProfilerStart and cudaProfilerStop are steps.
        self.assertEqual(cats["user_annotation"], 20)
        self.assertEqual(cats["kernel"] + cats["gpu_memcpy"] + cats["gpu_memset"], 5667)
        launches = {e["args"]["correlation"] for e in events if e["cat"] == "cuda_runtime"}
        kernels = [e for e in events if e["cat"] == "kernel"]
        self.assertTrue(all(k["args"]["correlation"] in launches for k in kernels), "every kernel's launch call is there")
        self.assertIn("cudaGraphLaunch", {e["name"] for e in events if e["cat"] == "cuda_runtime"})
        self.assertIn("model.layers.2.self_attn", {k["args"]["nvtx module"] for k in kernels})


class NsysReaderInputTest(unittest.TestCase):
    def test_reads_the_module_of_the_layerwise_hooks_dict_and_keeps_plain_text(self):
        self.assertEqual(module_name("{'Module': 'model.layers.3.mlp.experts', 'Inputs': [[8, 2048]]}"), "model.layers.3.mlp.experts")
        self.assertEqual(module_name("{'Module': \"model.it's\", 'Inputs': []}"), "model.it's")
        self.assertEqual(module_name("my_range"), "my_range")

    def test_reads_a_report_whose_path_holds_spaces_and_a_hash(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "run #1 report.sqlite")
            shutil.copyfile(os.path.join(FIXTURES, "graphs-no-nvtx.sqlite"), path)
            self.assertEqual(list(NsysReport(path).records())[-1]["steps"], 40)

    def test_refuses_a_database_that_is_no_nsys_export_and_says_what_to_do(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "x.sqlite")
            db = sqlite3.connect(path)
            db.execute("CREATE TABLE StringIds (id INTEGER, value TEXT)")
            db.commit()
            db.close()
            with self.assertRaises(ReportError) as caught:
                NsysReport(path)
            self.assertIn("CUPTI_ACTIVITY_KIND_KERNEL", str(caught.exception))
            self.assertIn("--trace=cuda", str(caught.exception))
            not_sqlite = os.path.join(d, "y.sqlite")
            with open(not_sqlite, "w") as f:
                f.write("not a database")
            with contextlib.redirect_stderr(io.StringIO()) as err:
                self.assertEqual(main([not_sqlite]), 2)
            self.assertIn("nsys export --type sqlite", err.getvalue())


if __name__ == "__main__":
    unittest.main()
