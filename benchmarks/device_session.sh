#!/usr/bin/env bash
# Every GPU check of one session, in two device calls of under 10 minutes each, on a host
# with two H200s (kind nvidia-h200-x2), from the repository root:
#   bash benchmarks/device_session.sh check   # suite, examples, costs, roofs, short calls
#   bash benchmarks/device_session.sh gate    # gate reliability under the issue-9 conditions
# Logs and results land under $OUT (default ./device-out); a step that fails or times out
# does not stop the next, and each step's exit code is in the log.
set -u
OUT="${OUT:-$PWD/device-out}"
mkdir -p "$OUT"
export PYTHONPATH=. PYTHONUNBUFFERED=1
LOG="$OUT/log.txt"
P="python3 -m pytest -p no:cacheprovider"

step() {  # step SECONDS COMMAND...: its output appended to the log, with its wall and exit code
  echo "===== ${*:2}" >>"$LOG"
  local start=$SECONDS
  timeout "$@" >>"$LOG" 2>&1
  echo "===== exit code $? in $((SECONDS - start)) s" >>"$LOG"
}

{
  date -u
  nvidia-smi --query-gpu=index,name,uuid,clocks.sm,clocks.mem,temperature.gpu --format=csv
  python3 -c "import sys, numpy, cupy; print(sys.version, numpy.__version__, cupy.__version__)"
} >"$LOG" 2>&1

case "${1:-check}" in
check)
  step 150 $P tests/gpu tests/unit/test_cuda_client.py -q -rs
  # Against the committed H200 baselines first: the verdicts of unchanged kernels.
  step 120 $P example_kernels --autotune -rfx --autotune-record="$OUT/committed.jsonl"
  step 200 bash benchmarks/gpu_autotune_cost.sh "$OUT/cost"
  rm -rf .autotune/cuda-*
  step 120 $P example_kernels --autotune-update -q
  tar cf "$OUT/caches.tar" .autotune
  # Two workers, two GPUs: one row per group, each group's GPU in its record.
  step 150 $P example_kernels -n 2 --autotune -rfx --autotune-record="$OUT/xdist.jsonl"
  step 60 python3 benchmarks/gpu_tuning_cost.py
  step 150 python3 benchmarks/gpu_short_calls.py "$OUT/short"
  step 100 python3 benchmarks/roof_fractions.py --sessions 2
  step 90 python3 benchmarks/gpu_placement.py "$OUT/placement"
  ;;
gate)
  for condition in module suite k xdist groups; do
    step 110 python3 benchmarks/gpu_gate_reliability.py --condition "$condition" \
      --runs "${GATE_RUNS:-16}" --workers 2
  done
  ;;
esac
exit 0
