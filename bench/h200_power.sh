#!/usr/bin/env bash
# GPU power, clocks and energy per token from this project's own serving loop (bench/gpu_server.py, started
# as `vllm serve`; NOT vLLM), checked against nvidia-smi's own log over the same seconds, and the Pareto
# front across two configurations of it (CUDA graphs, --enforce-eager).
#
#   bash bench/h200_power.sh EVIDENCE_DIR        (needs an NVIDIA GPU; build dist/ first: npm run build)
#
# nvidia-smi logs power every 100 ms on its own (nvidia-smi.csv) while `infbench macro --gpu-sample-ms 100`
# runs two loads; bench/h200_power_compare.py then sets each level's energy from the agent against the same
# seconds of that log.
set -u
ev=$(mkdir -p "${1:?EVIDENCE_DIR}" && cd "$1" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
node=${NODE:-node}
port=${PORT:-8322}
url=http://127.0.0.1:$port
site=$(mktemp -d)
cli() { timeout 240 "$node" "$root/dist/cli.js" "$@" --target local --url "$url" --workspace "$site/ws" --findings findings.md; }
(
  cd "$site" || exit 1
  PATH="$root/bench/vllm-bin:$PATH" vllm serve gpu-loop-model --port "$port" >>server.log 2>&1 &
)
for _ in $(seq 1 240); do python3 -c "import urllib.request; urllib.request.urlopen('$url/v1/models', timeout=2)" 2>/dev/null && break; sleep 0.5; done
nvidia-smi --query-gpu=timestamp,index,power.draw,clocks.sm --format=csv,noheader,nounits -lms 100 >"$ev/nvidia-smi.csv" &
smi=$!
echo "unix start $(date +%s.%N)" >"$ev/times.txt"
cli macro --concurrency 1,32 --requests 64 --input-len 128 --output-len 256 --warmup 2 --gpu-sample-ms 100 --json \
  >"$ev/macro.json" 2>"$ev/macro.txt"
echo "macro rc=$?" | tee -a "$ev/times.txt"
kill "$smi"
cli configs --yes --config "graphs:" --config "eager: --enforce-eager" --concurrency 1,8,32 --requests 32 --input-len 128 \
  --output-len 64 >"$ev/configs.txt" 2>&1
echo "configs rc=$?" | tee -a "$ev/times.txt"
cp "$site/ws/findings.md" "$ev/findings.md" 2>/dev/null
cp -r "$site/ws/.inference-bench/runs" "$ev/runs" 2>/dev/null
pkill -f "gpu_server.py" 2>/dev/null
tail -5 "$ev/macro.txt" "$ev/configs.txt"
