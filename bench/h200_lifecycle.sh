#!/usr/bin/env bash
# The server lifecycle and the Nsight Systems profile, end to end on a GPU machine, against this project's
# own serving loop (bench/gpu_server.py, started as `vllm serve` from a shell; NOT vLLM).
#
#   NSYS=/path/to/nsys NSYS_LIBS=/folder/with/libdw.so.1 bash bench/h200_lifecycle.sh EVIDENCE_DIR [lifecycle|nsys|all]
#
# lifecycle: the server is started from a shell in its own folder, with its own 35-variable environment
#   and its stdout and stderr appended to its own log file; then `infbench micro --stop-server`,
#   `profile --restart-with-profiler` (torch), `configs` (graphs, eager), `profile --profiler nsys` and
#   `server stop` + `server restore` run with --yes, and after each the process listening on the port is
#   compared with the original: /proc/PID/cmdline, cwd, environ, fd/1 and fd/2 (bench/proc_snapshot.py).
# nsys: the same server started eagerly (--enforce-eager), then with a --help that lacks the layerwise
#   NVTX flag, each profiled with `infbench profile --profiler nsys`; with `lifecycle` first (all), the
#   graphs profile and the torch profile of the same server are there to compare. bench/h200_compare.py
#   prints the figures at the end (figures.txt).
# The server's own step log (CUDA events per step, with the profiler that recorded it) is kept beside.
# NSYS_LIBS (nsys's importer libraries, where the host lacks them) is one of the server's own variables,
# as a site would set it. NODE is the node that runs dist/cli.js (default: node on PATH).
set -u
ev=$(mkdir -p "${1:?EVIDENCE_DIR}" && cd "$1" && pwd)
which=${2:-all}
root=$(cd "$(dirname "$0")/.." && pwd)
node=${NODE:-node}
port=${PORT:-8321}
url=http://127.0.0.1:$port
nsys=${NSYS:-$(command -v nsys || find / -name nsys -type f -path '*target-linux-x64*' 2>/dev/null | head -1)}
[ "$nsys" = none ] && nsys=
site=$(mktemp -d)/site
ws=$site/workspace
mkdir -p "$site/server" "$ws"
py=$(command -v python3)
cli() { timeout "${STEP_TIMEOUT:-420}" "$node" "$root/dist/cli.js" "$@" --target local --url "$url" --workspace "$ws" --findings findings.md; }
snap() { python3 "$root/bench/proc_snapshot.py" take "$port" "$ev/$1.proc.json"; }
compare() {
  echo "== $1: the server now against the original" | tee -a "$ev/summary.txt"
  snap "$1" && python3 "$root/bench/proc_snapshot.py" diff "$ev/original.proc.json" "$ev/$1.proc.json" | tee -a "$ev/summary.txt"
  echo "identity rc=${PIPESTATUS[0]}" | tee -a "$ev/summary.txt"
}
# The report the profile read on the host, kept beside the evidence and broken down by `infbench analyze`.
keep_nsys() {
  local sq
  sq=$(grep -o "reading [^ ]*\.sqlite" "$ev/profile-nsys-$1.txt" | tail -1 | cut -d' ' -f2)
  [ -n "$sq" ] && cp "$sq" "$ev/nsys-$1.sqlite" &&
    "$node" "$root/dist/cli.js" analyze "$ev/nsys-$1.sqlite" --out "$ev/nsys-$1.json" >"$ev/nsys-$1.txt" 2>&1
}
wait_ready() {
  for _ in $(seq 1 240); do
    python3 -c "import urllib.request; urllib.request.urlopen('$url/v1/models', timeout=2)" 2>/dev/null && return 0
    sleep 0.5
  done
  echo "the server did not answer on $url" | tee -a "$ev/summary.txt"
  tail -20 "$site/server/server.log"
  return 1
}

# The server as a site starts it: its folder, exactly these variables (35), its log appended to.
start_server() {
  (
    cd "$site/server" || exit 1
    env -i PATH="$root/bench/vllm-bin:$(dirname "$py"):/usr/local/bin:/usr/bin:/bin" HOME="$HOME" LANG=C.UTF-8 \
      LD_LIBRARY_PATH="${NSYS_LIBS:-}" CUDA_DEVICE_ORDER=PCI_BUS_ID TOKENIZERS_PARALLELISM=false \
      HF_HOME="$site/hf" VLLM_LOGGING_LEVEL=INFO PYTHONUNBUFFERED=1 \
      SITE_TEAM=serving SITE_CLUSTER=h200-lab SITE_OWNER=ops SITE_RACK=r7 SITE_SLOT=3 SITE_BUDGET=gpu-hours \
      SITE_PAGER=oncall SITE_REGION=eu SITE_ZONE=b SITE_TIER=prod SITE_NOTE='a value with spaces' \
      SITE_JSON='{"a":1}' SITE_EMPTY= SITE_QUOTE="it's" SITE_DOLLAR='$HOME' SITE_PATHLIKE=/opt/site/bin \
      SITE_A=1 SITE_B=2 SITE_C=3 SITE_D=4 SITE_E=5 SITE_F=6 SITE_G=7 SITE_H=8 SITE_I=9 SITE_J=10 ${EXTRA_ENV:-} \
      vllm serve gpu-loop-model --port "$port" --step-log steps.jsonl "$@" >>server.log 2>&1 &
    echo $! >"$site/server/shell.pid"
  )
  wait_ready
}
stop_by_port() {
  local pid
  pid=$(python3 -c "import sys; sys.path.insert(0, '$root/bench'); import proc_snapshot; print(proc_snapshot.listener($port))" 2>/dev/null) || return 0
  kill -TERM "$pid"
  for _ in $(seq 1 120); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.5; done
}

{
  echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo "no nvidia-smi"
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.cuda.is_available())'
  echo "nsys: ${nsys:-none} $([ -n "$nsys" ] && "$nsys" --version 2>/dev/null)"
  echo "node: $("$node" --version)"
} | tee "$ev/summary.txt"

if [ "$which" != nsys ]; then
  start_server || exit 1
  snap original
  echo "original: $(python3 -c "import json; d=json.load(open('$ev/original.proc.json')); print(len(d['environ']), 'variables; cwd', d['cwd'], '; fd1', d['fd1'])")" | tee -a "$ev/summary.txt"

  cli micro --stop-server --yes --shape probe=4096x4096 --m 1,8 --skip allreduce,launch --repeats 3 --out "$ev/micro.json" >"$ev/micro.txt" 2>&1
  echo "micro rc=$?" | tee -a "$ev/summary.txt"
  compare after-micro

  cli profile --restart-with-profiler --yes --concurrency 4 --output-len 64 --profiler-delay-iterations 8 \
    --profiler-max-iterations 32 --out "$ev/profile-torch.json" >"$ev/profile-torch.txt" 2>&1
  echo "profile torch rc=$?" | tee -a "$ev/summary.txt"
  compare after-profile-torch

  cli configs --yes --config "graphs:" --config "eager: --enforce-eager" --concurrency 1,4 --requests 8 --input-len 64 \
    --output-len 32 --out "$ev/configs.json" >"$ev/configs.txt" 2>&1
  echo "configs rc=$?" | tee -a "$ev/summary.txt"
  compare after-configs

  if [ -n "$nsys" ]; then
    cli profile --profiler nsys --nsys "$nsys" --yes --concurrency 4 --output-len 64 --out "$ev/profile-nsys-graphs.json" \
      >"$ev/profile-nsys-graphs.txt" 2>&1
    echo "profile nsys (graphs) rc=$?" | tee -a "$ev/summary.txt"
    keep_nsys graphs
    compare after-profile-nsys
  fi

  cli server stop --yes >"$ev/server-stop.txt" 2>&1
  echo "server stop rc=$?; listening after it: $(python3 "$root/bench/proc_snapshot.py" take "$port" /dev/null 2>&1 || true)" | tee -a "$ev/summary.txt"
  cli server restore --yes >"$ev/server-restore.txt" 2>&1
  echo "server restore rc=$?" | tee -a "$ev/summary.txt"
  compare after-restore
  stop_by_port
fi

# The same server eagerly, then as a vLLM whose --help lacks the layerwise NVTX flag: each through the nsys profile.
nsys_profile() {
  local name=$1
  shift
  "$@" || return 1
  cli profile --profiler nsys --nsys "$nsys" --yes --concurrency 4 --output-len 64 --out "$ev/profile-nsys-$name.json" \
    >"$ev/profile-nsys-$name.txt" 2>&1
  echo "profile nsys ($name) rc=$?" | tee -a "$ev/summary.txt"
  keep_nsys "$name"
  stop_by_port
}
if [ "$which" != lifecycle ] && [ -n "$nsys" ]; then
  nsys_profile eager start_server --enforce-eager
  EXTRA_ENV=INFBENCH_GPU_LOOP_NO_NVTX_FLAG=1 nsys_profile no-nvtx start_server
fi
cp "$site/server/steps.jsonl" "$ev/steps.jsonl" 2>/dev/null
cp "$site/server/server.log" "$ev/server.log" 2>/dev/null
cp "$ws/findings.md" "$ev/findings.md" 2>/dev/null
python3 "$root/bench/h200_compare.py" "$ev" | tee "$ev/figures.txt"
echo "figures rc=${PIPESTATUS[0]}; evidence in $ev" | tee -a "$ev/summary.txt"
