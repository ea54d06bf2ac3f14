"""The served model's config.json, found the way the server itself finds it: its command line, its folder,
or a Hugging Face cache laid out as huggingface_hub lays it out (models--org--name/refs, snapshots)."""
import json
import os
import tempfile
import unittest

from infbench_agent.probe import served_model

# Kimi-K2.5's published config.json nests the language model under text_config (model_type kimi_k25
# around kimi_k2); only the fields the summary reads are kept here.
KIMI_K25 = {
    "architectures": ["KimiK25ForConditionalGeneration"],
    "model_type": "kimi_k25",
    "text_config": {
        "model_type": "kimi_k2",
        "hidden_size": 7168,
        "intermediate_size": 18432,
        "moe_intermediate_size": 2048,
        "num_hidden_layers": 61,
        "num_attention_heads": 64,
        "num_key_value_heads": 64,
        "n_routed_experts": 384,
        "num_experts_per_tok": 8,
        "first_k_dense_replace": 1,
        "vocab_size": 163840,
    },
    "vision_config": {"hidden_size": 1152, "num_hidden_layers": 27},
}
QWEN3_8B = {
    "model_type": "qwen3",
    "hidden_size": 4096,
    "num_hidden_layers": 36,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "intermediate_size": 12288,
}
QWEN3_30B_A3B = {
    "model_type": "qwen3_moe",
    "hidden_size": 2048,
    "num_hidden_layers": 48,
    "num_experts": 128,
    "num_experts_per_tok": 8,
    "moe_intermediate_size": 768,
}


def write(path, config):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(config, f)


def hub_snapshot(hub, model_id, commit, config, ref="main"):
    """A model in a hub cache as huggingface_hub leaves it: refs/<ref> holds the snapshot's commit."""
    base = os.path.join(hub, "models--" + model_id.replace("/", "--"))
    write(os.path.join(base, "snapshots", commit, "config.json"), config)
    os.makedirs(os.path.join(base, "refs"), exist_ok=True)
    with open(os.path.join(base, "refs", ref), "w", encoding="utf-8") as f:
        f.write(commit)


class ServedModelConfigTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = self.tmp.name
        # No cache of the test machine's own user may answer for these ids.
        self.saved = {k: os.environ.pop(k, None) for k in ("HF_HOME", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "XDG_CACHE_HOME")}
        os.environ["HF_HOME"] = os.path.join(self.root, "agent-hf-home")

    def tearDown(self):
        for k, v in self.saved.items():
            os.environ.pop(k, None)
            if v is not None:
                os.environ[k] = v
        self.tmp.cleanup()

    def test_vllm_serve_model_in_the_servers_hf_home_reads_the_text_config_of_kimi_k25(self):
        hf_home = os.path.join(self.root, "server-hf")
        hub_snapshot(os.path.join(hf_home, "hub"), "moonshotai/Kimi-K2.5", "abc123", KIMI_K25)
        argv = ["/venv/bin/python3", "/venv/bin/vllm", "serve", "moonshotai/Kimi-K2.5", "--tensor-parallel-size", "8"]
        got = served_model.served_model_config(argv, "vllm", "/srv", {"HF_HOME": hf_home, "HOME": "/nonexistent"}, [])
        self.assertEqual(got["model"], "moonshotai/Kimi-K2.5")
        self.assertEqual(got["found_by"], "the model argument of `vllm serve`, in the Hugging Face cache")
        self.assertTrue(got["path"].endswith(os.path.join("snapshots", "abc123", "config.json")))
        self.assertEqual((got["nested"], got["outer_model_type"], got["model_type"]), ("text_config", "kimi_k25", "kimi_k2"))
        self.assertEqual((got["num_hidden_layers"], got["hidden_size"], got["num_attention_heads"]), (61, 7168, 64))
        self.assertEqual((got["experts"], got["experts_field"], got["num_experts_per_tok"]), (384, "n_routed_experts", 8))
        self.assertEqual((got["moe_intermediate_size"], got["first_k_dense_replace"]), (2048, 1))

    def test_the_revision_the_server_pinned_wins_over_the_newest_snapshot(self):
        hub = os.path.join(self.root, "home", ".cache", "huggingface", "hub")
        hub_snapshot(hub, "Qwen/Qwen3-8B", "old", dict(QWEN3_8B, num_hidden_layers=1), ref="v1")
        hub_snapshot(hub, "Qwen/Qwen3-8B", "new", QWEN3_8B)
        argv = ["python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "Qwen/Qwen3-8B", "--revision", "v1"]
        got = served_model.served_model_config(argv, "vllm", None, {"HOME": os.path.join(self.root, "home")}, [])
        self.assertEqual(got["found_by"], "the server's --model, in the Hugging Face cache")
        self.assertEqual(got["num_hidden_layers"], 1)

    def test_sglang_model_path_relative_to_the_servers_working_directory(self):
        write(os.path.join(self.root, "srv", "models", "q30", "config.json"), QWEN3_30B_A3B)
        argv = ["python3", "-m", "sglang.launch_server", "--model-path", "models/q30", "--tp", "2"]
        got = served_model.served_model_config(argv, "sglang", os.path.join(self.root, "srv"), {}, [])
        self.assertEqual(got["found_by"], "the server's --model-path (a folder)")
        self.assertEqual((got["model_type"], got["experts"], got["experts_field"]), ("qwen3_moe", 128, "num_experts"))
        self.assertNotIn("nested", got)

    def test_without_a_command_line_the_root_of_v1_models_is_looked_up_in_the_hub_cache(self):
        hub_snapshot(os.path.join(self.root, "agent-hf-home", "hub"), "Qwen/Qwen3-8B", "c0ffee", QWEN3_8B)
        got = served_model.served_model_config([], "vllm", None, {}, [{"id": "my-name", "root": "Qwen/Qwen3-8B"}])
        self.assertEqual((got["model"], got["found_by"]), ("Qwen/Qwen3-8B", "/v1/models root, in the Hugging Face cache"))
        self.assertEqual((got["num_key_value_heads"], got["intermediate_size"]), (8, 12288))
        self.assertNotIn("experts", got)

    def test_nothing_found_or_unreadable_gives_no_summary_and_raises_nothing(self):
        self.assertIsNone(served_model.served_model_config(["vllm", "serve", "org/absent"], "vllm", None, {}, []))
        broken = os.path.join(self.root, "broken")
        os.makedirs(broken)
        with open(os.path.join(broken, "config.json"), "w", encoding="utf-8") as f:
            f.write("{not json")
        self.assertIsNone(served_model.served_model_config(["vllm", "serve", broken], "vllm", None, {}, []))
        self.assertIsNone(served_model.served_model_config(None, "vllm", None, {}, None))  # type: ignore[arg-type]


if __name__ == "__main__":
    unittest.main()
