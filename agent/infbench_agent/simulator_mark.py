"""How the project's simulator labels itself, and so how the agent tells it from a real server: one spelling
for both sides (simulator/vllm_sim.py and simulator/sim_mimic.py import this file)."""

# /v1/models' owned_by, the `server` header and the version suffix (`0.13.0+inference-bench-simulator`).
SIMULATOR_MARK = "inference-bench-simulator"
# Names the --mimic profile the simulator plays ("vllm 0.13.0").
MIMIC_HEADER = "x-inference-bench-simulator-mimics"
