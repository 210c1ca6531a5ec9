#!/usr/bin/env bash
# The example kernels and the GPU tests on a lent GPU, in one call:
#   bash benchmarks/gpu_examples.sh
# Plain `pytest example_kernels` (checks), then `--autotune-update` (the H200 baselines,
# returned as caches.tar to commit), then `--autotune` against them with the HTML report
# and records, then tests/gpu and the timing-accuracy benchmark. Results under $OUT.
set -x
OUT="${OUT:-$PWD/gpu-examples-out}"
mkdir -p "$OUT"
export PYTHONPATH=. PYTHONUNBUFFERED=1
LOG="$OUT/log.txt"
P="python3 -m pytest -p pytest_autotune.plugin -p no:cacheprovider"
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; } >"$LOG" 2>&1

timeout 150 $P example_kernels -rfx >"$OUT/examples.txt" 2>&1
echo "pytest example_kernels exit code: $?" | tee -a "$LOG"
rm -rf .autotune/cuda-*
timeout 200 $P example_kernels --autotune-update -rfx >>"$OUT/examples.txt" 2>&1
echo "pytest example_kernels --autotune-update exit code: $?" | tee -a "$LOG"
timeout 200 $P example_kernels --autotune -rfx --autotune-html="$OUT/report.html" \
  --autotune-record="$OUT/records.jsonl" >>"$OUT/examples.txt" 2>&1
echo "pytest example_kernels --autotune exit code: $?" | tee -a "$LOG"
tar cf "$OUT/caches.tar" .autotune
timeout 120 $P tests/gpu tests/unit/test_cuda_client.py -rs >"$OUT/gpu_tests.txt" 2>&1
echo "pytest tests/gpu exit code: $?" | tee -a "$LOG"
timeout 110 python3 benchmarks/gpu_timing_accuracy.py >>"$LOG" 2>&1
echo "gpu_timing_accuracy exit code: $?" | tee -a "$LOG"
exit 0
