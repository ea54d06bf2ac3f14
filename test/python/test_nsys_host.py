"""Finding nsys on a host and starting a server's recipe under it."""

import os
import stat
import tempfile
import unittest

from infbench_agent.server import nsys as nsys_host


def fake_nsys(path, version="2025.3.1.0"):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(f"#!/bin/sh\necho 'NVIDIA Nsight Systems version {version}'\n")
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return path


class FindNsysTest(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp()

    def test_tries_the_setting_then_path_then_toolkit_nsight_systems_newest_first_then_nsight_compute(self):
        r = self.root
        compute = fake_nsys(os.path.join(r, "opt/nvidia/nsight-compute/2025.3.1/host/target-linux-x64/nsys"))
        old = fake_nsys(os.path.join(r, "opt/nvidia/nsight-systems/2024.6.2/bin/nsys"))
        new = fake_nsys(os.path.join(r, "opt/nvidia/nsight-systems/2025.3.1/bin/nsys"))
        toolkit = fake_nsys(os.path.join(r, "usr/local/cuda-12.8/bin/nsys"))
        on_path = fake_nsys(os.path.join(r, "bin/nsys"))
        setting = fake_nsys(os.path.join(r, "mine/nsys"))
        found = nsys_host.candidates(setting, path_env=os.path.join(r, "bin"), root=r)
        self.assertEqual([c["path"] for c in found], [setting, on_path, toolkit, new, old, compute])
        self.assertEqual([c["source"] for c in found][:3], ["setting", "PATH", "CUDA toolkit"])
        self.assertEqual(found[-1]["source"], "Nsight Compute install")

    def test_a_file_that_is_not_executable_is_no_nsys(self):
        path = os.path.join(self.root, "bin/nsys")
        os.makedirs(os.path.dirname(path))
        open(path, "w").close()
        self.assertEqual(nsys_host.candidates(path, path_env="", root=self.root), [])

    def test_reads_the_version_nsys_prints(self):
        path = fake_nsys(os.path.join(self.root, "bin/nsys"), "2025.3.1.0")
        self.assertEqual(nsys_host.nsys_version(path), "2025.3.1.0")
        self.assertIsNone(nsys_host.nsys_version(os.path.join(self.root, "missing")))

    def test_a_setting_that_names_no_nsys_says_how_to_get_one(self):
        result = nsys_host.discover(os.path.join(self.root, "nowhere/nsys"))
        self.assertIsNone(result["nsys"])
        self.assertIn("is not an executable file here", result["advice"])
        self.assertIn("nsight-systems-cli", result["advice"])

    def test_finds_the_importer_beside_nsys(self):
        nsys = fake_nsys(os.path.join(self.root, "nsight-compute/2025.3.1/host/target-linux-x64/nsys"))
        self.assertIsNone(nsys_host.importer_of(nsys))
        # Where Nsight Compute 2025.3.1 keeps it (seen on the H200 machine).
        importer = os.path.join(self.root, "nsight-compute/2025.3.1/host/linux-desktop-glibc_2_11_3-x64/QdstrmImporter")
        os.makedirs(os.path.dirname(importer))
        open(importer, "w").close()
        self.assertEqual(nsys_host.importer_of(nsys), importer)

    def test_the_importer_advice_names_the_packages(self):
        advice = nsys_host.importer_advice(["libdw.so.1", "libbz2.so.1.0"])
        self.assertIn("libdw.so.1, libbz2.so.1.0", advice)
        self.assertIn("apt-get install libdw1 libelf1 libbz2-1.0", advice)
        self.assertIn("LD_LIBRARY_PATH", advice)


class NsysRecipeTest(unittest.TestCase):
    VLLM = {
        "kind": "vllm",
        "version": "0.16.0",
        "argv": ["vllm", "serve", "m", "--profiler-config", '{"profiler":"torch","torch_profiler_dir":"/t"}'],
        "env": {"LD_LIBRARY_PATH": "/usr/lib/x"},
    }

    def test_vllm_gets_the_cuda_profiler_mode_and_its_layer_ranges_under_nsys_recorded_from_the_start(self):
        recipe, words = nsys_host.nsys_recipe(
            self.VLLM, "/opt/nsys", "/runs/r1/report", help_text="... --enable-layerwise-nvtx-tracing ..."
        )
        argv = recipe["argv"]
        self.assertEqual(argv[:2], ["/opt/nsys", "profile"])
        for flag in ("--trace=cuda,nvtx", "--cuda-graph-trace=node", "--sample=none", "--cpuctxsw=none"):
            self.assertIn(flag, argv)
        self.assertFalse([a for a in argv if a.startswith("--capture-range")], "a capture range would drop the capture's NVTX ranges")
        server = argv[argv.index("/runs/r1/report") + 1 :]
        self.assertEqual(server, ["vllm", "serve", "m", "--profiler-config", '{"profiler":"cuda"}', "--enable-layerwise-nvtx-tracing"])
        self.assertEqual(recipe["nsys_report"], "/runs/r1/report.nsys-rep")
        self.assertTrue(words[-1].startswith("command: /opt/nsys profile "))
        self.assertEqual(self.VLLM["argv"][-1], '{"profiler":"torch","torch_profiler_dir":"/t"}', "the original recipe is kept as it was")

    def test_an_older_vllm_takes_the_environment_switch_and_no_flag_its_help_lacks(self):
        old = dict(self.VLLM, version="0.12.0", argv=["vllm", "serve", "m"])
        recipe, words = nsys_host.nsys_recipe(old, "nsys", "r", help_text="usage: vllm serve ...", lib_dir="/libs")
        self.assertEqual(recipe["env"]["VLLM_TORCH_CUDA_PROFILE"], "1")
        self.assertEqual(recipe["env"]["LD_LIBRARY_PATH"], "/libs:/usr/lib/x")
        self.assertNotIn("--enable-layerwise-nvtx-tracing", recipe["argv"])
        self.assertIn("no layer ranges: this vLLM's --help does not list --enable-layerwise-nvtx-tracing", words)

    def test_sglang_asks_for_the_cuda_profiler_activity_at_start_profile(self):
        sglang = {"kind": "sglang", "version": "0.5.4", "argv": ["python3", "-m", "sglang.launch_server"], "env": {}}
        recipe, _ = nsys_host.nsys_recipe(sglang, "nsys", "r", help_text="--enable-layerwise-nvtx-marker")
        self.assertEqual(recipe["start_profile_body"], {"activities": ["CUDA_PROFILER"]})
        self.assertEqual(recipe["argv"][-1], "--enable-layerwise-nvtx-marker")

    def test_exports_beside_the_report(self):
        self.assertEqual(
            nsys_host.export_argv("nsys", "/r/report.nsys-rep"),
            ["nsys", "export", "--type", "sqlite", "--force-overwrite=true", "-o", "/r/report.sqlite", "/r/report.nsys-rep"],
        )


class ImporterLibrariesWhereTheServerRunsTest(unittest.TestCase):
    """nsys runs its importer as its own child at the end, in the environment the server was started with."""

    def setUp(self):
        self.root = tempfile.mkdtemp()
        self.nsys = fake_nsys(os.path.join(self.root, "nsys/target-linux-x64/nsys"))
        open(os.path.join(os.path.dirname(self.nsys), "QdstrmImporter"), "w").close()
        self.libs = os.path.join(self.root, "importer-libs")
        os.makedirs(self.libs)
        for name in nsys_host.IMPORTER_LIBS:
            open(os.path.join(self.libs, name), "w").close()
        # A stand-in for ldd: a real importer lacking a real library cannot be made on every machine. It answers
        # as ldd does, each library found only where LD_LIBRARY_PATH names a folder that holds it.
        bin_dir = os.path.join(self.root, "bin")
        os.makedirs(bin_dir)
        with open(os.path.join(bin_dir, "ldd"), "w") as f:
            f.write(
                "#!/bin/sh\nfor lib in libdw.so.1 libelf.so.1 libbz2.so.1.0; do found=; IFS=:; for d in $LD_LIBRARY_PATH; do\n"
                '[ -n "$d" ] && [ -f "$d/$lib" ] && found="$d/$lib"; done; unset IFS\n'
                'if [ -n "$found" ]; then echo "\t$lib => $found (0x0)"; else echo "\t$lib => not found"; fi; done\n'
            )
        os.chmod(os.path.join(bin_dir, "ldd"), 0o755)
        self.saved = {k: os.environ.get(k) for k in ("PATH", "LD_LIBRARY_PATH")}
        os.environ["PATH"] = bin_dir + ":" + os.environ["PATH"]
        os.environ.pop("LD_LIBRARY_PATH", None)

    def tearDown(self):
        for k, v in self.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

    def recipe(self, env):
        return {"kind": "vllm", "version": "0.16.0", "argv": ["no-such-vllm", "serve", "m"], "env": env, "cwd": self.root}

    def test_libraries_on_the_servers_library_path_are_found_though_the_agent_lacks_them(self):
        out = nsys_host.status_fields(self.recipe({"LD_LIBRARY_PATH": self.libs}), self.nsys, os.path.join(self.root, "r"))
        self.assertEqual(out["nsys"]["missingLibs"], [])
        self.assertNotIn("nsys_advice", out)
        self.assertEqual(out["nsys_recipe"]["argv"][:2], [self.nsys, "profile"])
        self.assertEqual(out["nsys_recipe"]["env"]["LD_LIBRARY_PATH"], self.libs)

    def test_libraries_only_the_agent_can_load_do_not_count_for_the_server(self):
        os.environ["LD_LIBRARY_PATH"] = self.libs
        out = nsys_host.status_fields(self.recipe({}), self.nsys, os.path.join(self.root, "r"))
        self.assertEqual(out["nsys"]["missingLibs"], sorted(nsys_host.IMPORTER_LIBS))
        self.assertIn("server's LD_LIBRARY_PATH", out["nsys_advice"])
        self.assertNotIn("nsys_recipe", out)


if __name__ == "__main__":
    unittest.main()
