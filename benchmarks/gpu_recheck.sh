#!/usr/bin/env bash
# After a change to the CUDA client's timing: the figures it can move, in one call of a
# lent GPU (under 10 minutes):
#   bash benchmarks/gpu_recheck.sh
# Tuning cost against do_bench, the examples' baselines refreshed (`--autotune-update`,
# returned as caches.tar to commit) and gated against, the peak probes, the roofs and gate
# reliability (a shorter run than the full 100 + 100). Logs and results under $OUT.
set -x
OUT="${OUT:-$PWD/gpu-recheck-out}"
mkdir -p "$OUT"
export OUT PYTHONPATH=. PYTHONUNBUFFERED=1
LOG="$OUT/log.txt"
P="python3 -m pytest -p pytest_autotune.plugin -p no:cacheprovider"
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; } >"$LOG" 2>&1

step() {  # step SECONDS COMMAND...: its output appended to the log
  echo "===== ${*:2}" >>"$LOG"
  timeout "$@" >>"$LOG" 2>&1
  echo "===== exit code: $?" >>"$LOG"
}
step 90 python3 benchmarks/gpu_tuning_cost.py
rm -rf .autotune/cuda-*
step 120 $P example_kernels --autotune-update -rfx
step 120 $P example_kernels --autotune -rfx --autotune-record="$OUT/records.jsonl"
tar cf "$OUT/caches.tar" .autotune
step 60 python3 benchmarks/gpu_peaks.py
step 100 python3 benchmarks/gpu_roofs.py
step "${GATE_SECONDS:-200}" python3 benchmarks/gpu_gate_reliability.py --runs "${GATE_RUNS:-40}" --workers 2
exit 0
