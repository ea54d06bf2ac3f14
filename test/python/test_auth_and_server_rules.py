"""Secret redaction, the server's own trace-folder resolution, rank counts and vLLM's profiler rules by version."""
from __future__ import annotations

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "agent"))
from infbench_agent import auth, events  # noqa: E402
from infbench_agent.profile import command as profile  # noqa: E402
from infbench_agent.probe import command as probe  # noqa: E402


class RedactionTest(unittest.TestCase):
    def test_secret_flags_variables_and_url_passwords_are_redacted(self) -> None:
        argv = [
            "vllm",
            "serve",
            "m",
            "--api-key",
            "sekret1",
            "--hf-token=hf_abcdefghijklmnopqrstu",
            "-tp",
            "8",
            "--kv-transfer-config",
            '{"url":"http://u:pw123@h:1/x"}',
            "--ssl-keyfile",
            "/k.pem",
        ]
        out = auth.redact_argv(argv)
        self.assertEqual(out[:6], ["vllm", "serve", "m", "--api-key", "REDACTED", "--hf-token=REDACTED"])
        joined = " ".join(out)
        for secret in ("sekret1", "hf_abcdefghijklmnopqrstu", "pw123"):
            self.assertNotIn(secret, joined)
        self.assertIn("/k.pem", joined, "a key file's path is not a secret")
        self.assertIn("-tp 8", joined)
        env = auth.redact_env(
            {
                "HF_TOKEN": "x1",
                "AWS_SECRET_ACCESS_KEY": "x2",
                "VLLM_API_KEY": "x3",
                "DB_PASSWORD": "x4",
                "HOME": "/root",
                "PROXY": "http://a:b@c",
            }
        )
        self.assertEqual([env[k] for k in ("HF_TOKEN", "AWS_SECRET_ACCESS_KEY", "VLLM_API_KEY", "DB_PASSWORD")], ["REDACTED"] * 4)
        self.assertEqual(env["HOME"], "/root")
        self.assertEqual(env["PROXY"], "http://a:REDACTED@c")
        self.assertEqual(auth.redact_text("Authorization: Bearer abc.def"), "Authorization: Bearer REDACTED")

    def test_the_profile_advice_rebuilds_a_redacted_command_line(self) -> None:
        text = profile.enable_instructions(
            {"command_line": auth.redact_argv(["vllm", "serve", "m", "--api-key", "sekret1"]), "version": "0.16.0"}, "/t"
        )
        self.assertNotIn("sekret1", text)
        self.assertIn("shown as REDACTED: put yours back", text)


class TraceFolderTest(unittest.TestCase):
    def test_relative_and_home_folders_resolve_as_the_server_does(self) -> None:
        server = {"pid": 123, "cwd": "/srv/run"}
        self.assertEqual(profile.resolve_server_path("./vllm_profile", server, {}, "x"), "/srv/run/vllm_profile")
        self.assertEqual(profile.resolve_server_path("~/t", server, {"HOME": "/home/vllm"}, "x"), "/home/vllm/t")
        self.assertEqual(profile.resolve_server_path("/abs/t", server, {}, "x"), "/abs/t")

    def test_a_relative_folder_without_the_servers_cwd_is_a_clear_error(self) -> None:
        with self.assertRaises(events.AgentError) as ctx:
            profile.resolve_server_path("./t", {"pid": 9}, {}, "torch_profiler_dir")
        self.assertIn("/proc/9/cwd", ctx.exception.message)
        self.assertEqual(ctx.exception.remedies, [{"kind": "flag", "flag": "--trace-dir"}])
        self.assertIn("{0}", ctx.exception.hint)
        with self.assertRaises(events.AgentError) as ctx:
            profile.resolve_server_path("gs://bucket/t", {"pid": 9, "cwd": "/"}, {}, "torch_profiler_dir")
        self.assertEqual(ctx.exception.code, "trace_dir_remote")


class RanksTest(unittest.TestCase):
    def test_ranks_count_data_and_pipeline_parallel(self) -> None:
        self.assertEqual(profile.ranks_from_argv(["vllm", "serve", "m", "-tp", "4", "-dp", "2", "-pp", "2"]), 16)
        self.assertEqual(profile.ranks_from_argv(["vllm", "serve", "m", "--tensor-parallel-size=8", "--data-parallel-size", "2"]), 16)
        self.assertEqual(profile.ranks_from_argv(["python", "-m", "sglang.launch_server", "--tp", "8", "--dp", "2"], "sglang"), 16)
        self.assertEqual(
            profile.ranks_from_argv(["python", "-m", "sglang.launch_server", "--tp", "8", "--dp", "8", "--enable-dp-attention"], "sglang"),
            8,
        )


class VllmProfilerRulesTest(unittest.TestCase):
    def test_the_environment_variable_counts_only_before_016(self) -> None:
        env = {"VLLM_TORCH_PROFILER_DIR": "/t"}
        self.assertEqual(probe.vllm_profiler_setup(["vllm", "serve"], env, "0.11.0")["kind"], "torch")
        self.assertEqual(probe.vllm_profiler_setup(["vllm", "serve"], env, "0.15.1")["dir"], "/t")
        new = probe.vllm_profiler_setup(["vllm", "serve"], env, "0.16.0")
        self.assertIsNone(new["kind"])
        self.assertIn("removed in 0.16", new["ignored_env"])

    def test_the_cuda_profiler_is_told_apart(self) -> None:
        setup = probe.vllm_profiler_setup(["vllm", "serve", "--profiler-config", '{"profiler":"cuda"}'], {}, "0.16.0")
        self.assertEqual(setup["kind"], "cuda")
        self.assertEqual(probe.vllm_profiler_setup(["vllm", "serve", "--profiler-config.profiler", "cuda"], {}, "0.20.0")["kind"], "cuda")
        self.assertEqual(probe.vllm_profiler_setup(["vllm", "serve"], {"VLLM_TORCH_CUDA_PROFILE": "1"}, "0.12.0")["kind"], "cuda")
        self.assertIsNone(probe.vllm_profiler_setup(["vllm", "serve"], {"VLLM_TORCH_CUDA_PROFILE": "1"}, "0.16.0")["kind"])

    def test_the_advice_is_the_versions_own_flag(self) -> None:
        self.assertIn("--profiler-config", profile.enable_instructions({"command_line": ["vllm", "serve", "m"], "version": "0.16.0"}, "/t"))
        old = profile.enable_instructions({"command_line": ["vllm", "serve", "m"], "version": "0.12.0"}, "/t")
        self.assertNotIn("--profiler-config '", old)


class MetricsNoteTest(unittest.TestCase):
    def test_a_missing_metrics_endpoint_names_enable_metrics(self) -> None:
        from infbench_agent.macro import server_side as macro_server

        self.assertIn("--enable-metrics", macro_server.metrics_cross_check(None, None, [], 404)["note"])


if __name__ == "__main__":
    unittest.main()
