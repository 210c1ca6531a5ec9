#!/usr/bin/env bash
# The cost of `pytest example_kernels --autotune` on a GPU (issue 14; target under 15 s
# with the same verdicts), from the repository root:
#   bash benchmarks/gpu_autotune_cost.sh OUT_DIR
# Three runs against the committed baselines: the first pays CuPy's kernel compilation
# and the peak probes of a fresh process like CI does, so all three walls are printed; the
# third runs under cProfile (its wall is not comparable). Writes OUT_DIR/autotune_cost.txt
# (walls, the summary tables, the 25 slowest test phases, the profile's top 40 by
# cumulative time) and OUT_DIR/autotune.prof.
OUT="${1:?usage: bash benchmarks/gpu_autotune_cost.sh OUT_DIR}"
mkdir -p "$OUT"
export PYTHONPATH=".${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
TXT="$OUT/autotune_cost.txt"
P="-m pytest example_kernels --autotune -p no:cacheprovider -q --durations=25"
: >"$TXT"
for run in 1 2; do
  start=$(date +%s.%N)
  timeout 240 python3 $P >"$OUT/run$run.txt" 2>&1
  code=$?
  end=$(date +%s.%N)
  echo "run $run: exit code $code, wall $(python3 -c "print(f'{$end - $start:.2f}')") s" | tee -a "$TXT"
done
timeout 240 python3 -m cProfile -o "$OUT/autotune.prof" $P >"$OUT/run3_profiled.txt" 2>&1
echo "run 3 (cProfile): exit code $?" | tee -a "$TXT"
for run in 1 2; do
  echo "===== run $run" >>"$TXT"
  # From the summary to the end: the tables, then the slowest phases (printed after them).
  sed -n '/= autotune =/,$p' "$OUT/run$run.txt" >>"$TXT"
done
python3 -c "import pstats; pstats.Stats('$OUT/autotune.prof').sort_stats('cumulative').print_stats(40)" \
  >>"$TXT" 2>&1
grep -E "^run [0-9]" "$TXT"
