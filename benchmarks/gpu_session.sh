#!/usr/bin/env bash
# Everything GPU-related in one go, for one call of a lent GPU machine:
#   bash benchmarks/gpu_session.sh
# Runs the GPU test suite and the gpu_* benchmarks from the repository root, writing logs
# and JSON results under $OUT (default: ./gpu-session-out). One step failing or timing out
# does not stop the next; the exit code is 0 whatever the steps found.
set -x
OUT="${OUT:-$PWD/gpu-session-out}"
mkdir -p "$OUT"
export OUT PYTHONPATH=. PYTHONUNBUFFERED=1
LOG="$OUT/session.log"

{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv
  python3 -c "import sys, numpy, cupy; print(sys.version); print('numpy', numpy.__version__, 'cupy', cupy.__version__); print(cupy.cuda.runtime.getDeviceProperties(0)['name'])"
} 2>&1 | tee "$LOG"

timeout 100 python3 -m pytest tests/gpu tests/unit/test_cuda_client.py -v -rs --durations=8 \
  > "$OUT/pytest_gpu.txt" 2>&1
echo "pytest tests/gpu exit code: $?" | tee -a "$LOG"
grep -E "PASSED|FAILED|ERROR|SKIPPED" "$OUT/pytest_gpu.txt" | grep -v PASSED | head -40 | tee -a "$LOG"
tail -15 "$OUT/pytest_gpu.txt" | tee -a "$LOG"

step() {  # step SECONDS SCRIPT: one benchmark, its output appended to the log
  echo "===== $2" | tee -a "$LOG"
  timeout "$1" python3 "$2" 2>&1 | tee -a "$LOG"
  echo "===== $2 exit code: ${PIPESTATUS[0]}" | tee -a "$LOG"
}
step 50 benchmarks/gpu_peaks.py
step 80 benchmarks/gpu_tuning_cost.py
step 100 benchmarks/gpu_timing_accuracy.py
step 120 benchmarks/gpu_roofs.py
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu --format=csv 2>&1 | tee -a "$LOG"
exit 0
