#!/usr/bin/env bash
# Captures bench/nsys_serving_loop.py under Nsight Systems (CUDA graphs on, eager, and graphs with no
# NVTX ranges), exports each report to SQLite, and profiles the same loop with torch.profiler, into
# the folder given (default ./nsys-capture). Each capture keeps the loop's own CUDA-event step log.
#
#   NSYS=/path/to/nsys bash bench/nsys_capture.sh OUTDIR [STEPS] [all|window]
#
# `window` makes the two bounded captures instead: the loop calls cudaProfilerStart/Stop around steps
# 10-29 (as a server's CUDA profiler switch does at /start_profile and /stop_profile), recorded from
# the start (window.sqlite) and with --capture-range=cudaProfilerApi (capture-range.sqlite).
#
# NSYS defaults to the first nsys found on PATH, then under /opt/nvidia and /usr/local/cuda*. Nsight
# Systems' importer needs libdw.so.1, libelf.so.1 and libbz2.so.1.0: where the host lacks them, unpack
# Debian's libdw1, libelf1 and libbz2-1.0 and put the folder on LD_LIBRARY_PATH before running this.
set -u
out=${1:-nsys-capture}
steps=${2:-40}
which=${3:-all}
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
nsys=${NSYS:-$(command -v nsys || find /opt/nvidia /usr/local -name nsys -type f -path '*target-linux-x64*' 2>/dev/null | head -1)}
if [ -z "$nsys" ]; then
  echo "nsys not found: install Nsight Systems or set NSYS" >&2
  exit 2
fi
echo "nsys: $nsys"
"$nsys" --version
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c 'import torch; print("torch", torch.__version__)'

capture() {
  name=$1
  shift
  echo "== $name: $*"
  start=$(date +%s)
  # shellcheck disable=SC2086 # NSYS_EXTRA holds several flags
  "$nsys" profile ${NSYS_EXTRA:-} --trace=cuda,nvtx --cuda-graph-trace=node --sample=none --cpuctxsw=none \
    --force-overwrite=true -o "$out/$name" \
    python3 "$here/nsys_serving_loop.py" --steps "$steps" --log "$out/$name.steps.json" "$@"
  echo "profile rc=$? in $(($(date +%s) - start)) s"
  "$nsys" export --type sqlite --force-overwrite=true -o "$out/$name.sqlite" "$out/$name.nsys-rep"
  echo "export rc=$?; $(ls -l "$out/$name.sqlite" "$out/$name.nsys-rep" 2>&1)"
}

if [ "$which" = window ]; then
  capture window --graphs on --nvtx on --profiler-api 10:29
  NSYS_EXTRA="--capture-range=cudaProfilerApi --capture-range-end=stop" capture capture-range --graphs on --nvtx on --profiler-api 10:29
  exit 0
fi
capture graphs --graphs on --nvtx on
capture eager --graphs off --nvtx on
capture graphs-no-nvtx --graphs on --nvtx off
echo "== torch profiler"
python3 "$here/nsys_serving_loop.py" --steps "$steps" --graphs on --nvtx off \
  --log "$out/torch.steps.json" --torch-trace "$out/torch.pt.trace.json.gz"
echo "torch rc=$?"
