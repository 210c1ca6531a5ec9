#!/usr/bin/env bash
# GPU probe of pytest-autotune's CUDA side, as CuPy users meet it.
#
# Run from anywhere (it finds the repository as this file's parent's parent):
#     OUT=/some/dir bash benchmarks/gpu_probe/run.sh            # every scenario
#     OUT=/some/dir bash benchmarks/gpu_probe/run.sh oom huge   # only these
# Writes $OUT/probe/<scenario>.txt (command, exit code, expected exit code, an automatic
# first reading, what README/source say should happen, the tail of the output),
# $OUT/probe/logs/<scenario>.log (the whole output), $OUT/probe/SUMMARY.txt and
# $OUT/probe/00_env.txt. Nothing is installed; the package runs from the tree
# (PYTHONPATH=<repo>, -p pytest_autotune.plugin). Every scenario runs under its own
# `timeout`; one that crashes or hangs does not stop the others. The whole run keeps within
# PROBE_DEADLINE_S seconds (default 220): scenarios that would start too late are written
# as SKIPPED.
set +e

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
OUT=${OUT:-$REPO/gpu_probe_out}
P="$OUT/probe"
mkdir -p "$P/logs"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpuprobe.XXXXXX")
PY=${PYTHON:-python3}
START=$(date +%s)
DEADLINE=${PROBE_DEADLINE_S:-220}
PHASE1_DEADLINE=${PROBE_PHASE1_DEADLINE_S:-100}
TAIL_LINES=${PROBE_TAIL_LINES:-70}
export PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONDONTWRITEBYTECODE=1
export PYTHONUNBUFFERED=1
export PY REPO HERE
# From the tree, the plugin is loaded with -p; where the package is installed its entry
# point loads it, and -p would register it twice ("Plugin already registered").
if "$PY" -c 'import importlib.metadata as m, sys; sys.exit(0 if any(e.name == "autotune" for e in m.entry_points(group="pytest11")) else 1)' 2>/dev/null; then
    PYTEST="$PY -m pytest -rA"
else
    PYTEST="$PY -m pytest -p pytest_autotune.plugin -rA"
fi
export PYTEST

elapsed() { echo $(( $(date +%s) - START )); }

# The section "## NAME" of EXPECTED.md, up to the next "## ".
expected_text() {
    awk -v name="## $1" '
        $0 == name {on = 1; next}
        on && /^## / {exit}
        on {print}
    ' "$HERE/EXPECTED.md" 2>/dev/null
}

# scenario NAME TIMEOUT EXPECT_RCS PROJECT CMD [WANT_REGEX] [UNWANTED_REGEX] [LIMIT]
#   EXPECT_RCS: exit codes that match the README, "0" or "0|5"; PROJECT: a folder of
#   projects/ copied fresh to a scratch folder (the command's cwd), or "-" for none;
#   CMD: a bash command line run there (with $PY, $PYTEST, $REPO, $HERE set);
#   WANT_REGEX: extended regexes separated by ";;" that the output should all contain;
#   UNWANTED_REGEX: regexes (";;") the output should not contain;
#   LIMIT: the deadline (seconds from the start) this scenario must finish by.
scenario() {
    local name=$1 limit_s=$2 expect=$3 project=$4 cmd=$5 want=${6:-} unwanted=${7:-} phase_deadline=${8:-$DEADLINE}
    local verdict="$P/$name.txt" log="$P/logs/$name.log" dir
    local left=$(( phase_deadline - $(elapsed) ))
    if [ "$left" -lt 15 ]; then
        {
            echo "SCENARIO: $name"
            echo "RESULT: SKIPPED (only ${left}s left of the probe's time; run it alone: OUT=... bash benchmarks/gpu_probe/run.sh $name)"
            echo
            echo "EXPECTED (README/source):"
            expected_text "$name"
        } > "$verdict"
        echo "$name SKIPPED (time)" >> "$P/SUMMARY.parts.$name"
        return 0
    fi
    [ "$limit_s" -gt "$left" ] && limit_s=$left
    if [ "$project" = "-" ]; then
        dir="$WORK/$name"
        mkdir -p "$dir"
    else
        dir="$WORK/$name"
        rm -rf "$dir"
        cp -r "$HERE/projects/$project" "$dir"
    fi
    local t0 t1 rc
    t0=$(date +%s.%N)
    ( cd "$dir" && timeout -k 5 "$limit_s" bash -c "$cmd" ) > "$log" 2>&1
    rc=$?
    t1=$(date +%s.%N)
    local took
    took=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", b - a}')
    if [ -f "$dir/records.jsonl" ]; then
        {
            echo
            echo "=== records.jsonl, one line per group (scripts/summarize_records.py; added by run.sh)"
            timeout 30 "$PY" "$HERE/scripts/summarize_records.py" "$dir/records.jsonl" 2>&1 | head -n 80
        } >> "$log"
    fi

    # An automatic first reading: the exit code and the patterns. The lead judges.
    local reasons=() auto
    if ! printf '%s\n' "$expect" | tr '|' '\n' | grep -qx -- "$rc"; then
        if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
            reasons+=("TIMED OUT after ${limit_s}s (rc $rc)")
        else
            reasons+=("exit $rc, expected $expect")
        fi
    fi
    local re
    if [ -n "$want" ]; then
        while IFS= read -r re; do
            [ -z "$re" ] && continue
            grep -Eq -- "$re" "$log" || reasons+=("missing: /$re/")
        done < <(printf '%s\n' "$want" | sed 's/;;/\n/g')
    fi
    if [ -n "$unwanted" ]; then
        while IFS= read -r re; do
            [ -z "$re" ] && continue
            grep -Eq -- "$re" "$log" && reasons+=("unexpected: /$re/ ($(grep -Ec -- "$re" "$log") lines)")
        done < <(printf '%s\n' "$unwanted" | sed 's/;;/\n/g')
    fi
    if [ ${#reasons[@]} -eq 0 ]; then auto="AS EXPECTED"; else auto="CHECK: ${reasons[*]}"; fi

    {
        echo "SCENARIO: $name"
        echo "RESULT (automatic first reading): $auto"
        echo "EXIT CODE: $rc   (expected per README: $expect)   took ${took}s (limit ${limit_s}s)"
        echo "CWD: $dir (a fresh copy of benchmarks/gpu_probe/projects/$project)"
        echo "COMMAND: $cmd"
        echo "  with PYTEST='$PYTEST', PYTHONPATH=$PYTHONPATH"
        echo
        echo "EXPECTED (README/source):"
        expected_text "$name"
        echo
        if grep -q "PROBE" "$log"; then
            echo "--- PROBE lines (what the probe's own code printed) ---"
            grep -E "PROBE" "$log" | head -n 60
            echo
        fi
        if [ -f "$dir/records.jsonl" ]; then
            echo "--- records.jsonl, one line per group ---"
            sed -n '/^=== records.jsonl/,$p' "$log" | tail -n +2 | head -n 80
            echo
        fi
        if [ -d "$dir/.autotune" ]; then
            echo "--- files under .autotune/ ---"
            (cd "$dir" && find .autotune -type f | sort | head -n 40)
            echo
        fi
        echo "--- last $TAIL_LINES lines of the output (whole log: logs/$name.log) ---"
        tail -n "$TAIL_LINES" "$log"
    } > "$verdict"
    echo "$name rc=$rc expected=$expect ${took}s: $auto" >> "$P/SUMMARY.parts.$name"
    # What the run wrote, for the lead: records, cache files, the HTML report if any.
    local art="$P/artifacts/$name"
    mkdir -p "$art"
    [ -f "$dir/records.jsonl" ] && cp "$dir/records.jsonl" "$art/" 2>/dev/null
    [ -d "$dir/.autotune" ] && cp -r "$dir/.autotune" "$art/autotune_cache" 2>/dev/null
    rmdir "$art" 2>/dev/null
    return 0
}

# ---------------------------------------------------------------------------------------
# The scenarios. Each `s_NAME` runs one; `lane` runs several in turn.

TUNE="--autotune --autotune-record=records.jsonl"

s_kinds_check() {
    scenario kinds_check 45 0 kinds "$PYTEST test_kinds.py" \
        "passed" "FAILED;;ERROR" "$1"
}
s_kinds_tune() {
    scenario kinds_tune 90 0 kinds "$PYTEST -v $TUNE test_kinds.py" \
        "test_saxpy;;test_sum_of_squares;;test_matmul" "FAILED;;ERROR" "$1"
}
s_dtypes() {
    scenario dtypes 45 1 dtypes "$PYTEST test_dtypes.py" \
        "FAILED.*test_f16_default_rtol\[right\];;0\.000977;;FAILED.*test_complex64\[cmul_conj\];;FAILED.*test_complex_nan_parts\[nan_2j\];;FAILED.*test_dtype_mismatch\[f32\];;dtype differs" \
        "FAILED.*test_f16_identical;;FAILED.*test_f16_rtol_loose;;FAILED.*test_complex64\[cmul\];;FAILED.*test_complex64\[cmul_parts\];;FAILED.*\[left\]" "$1"
}
s_cuda1() {
    scenario cuda1 45 1 cuda1 \
        "echo '=== plain pytest (check mode)'; $PYTEST test_cuda1.py; echo \"=== rc=\$?\"; echo '=== pytest --autotune'; $PYTEST $TUNE test_cuda1.py; r=\$?; echo \"=== rc=\$r\"; $PY -c 'import cupy; print(\"PROBE GPUs CuPy sees:\", cupy.cuda.runtime.getDeviceCount())'; exit \$r" \
        "cannot be used;;no CUDA device 1" "FAILED.*test_plain_on_default" "$1"
}
s_streams() {
    scenario streams 75 0 streams "$PYTEST -v $TUNE test_streams.py" \
        "PROBE stream times;;usable after the tuning: yes" "FAILED.*test_streams_joined;;FAILED.*test_report_stream_times;;FAILED.*test_y_side_streams" "$1"
}
s_syncing() {
    scenario syncing 75 0 syncing "$PYTEST -v $TUNE test_syncing.py" \
        "test_normalize;;test_count;;test_mixed_output_types" "FAILED;;ERROR" "$1"
}
s_inplace() {
    scenario inplace 75 1 inplace "$PYTEST -v $TUNE test_inplace.py" \
        "FAILED.*test_forgot_return\[forgot_return\];;FAILED.*test_into_wrong;;tripled" \
        "FAILED.*test_scale_in_place;;FAILED.*test_forgot_return\[returns\];;FAILED.*test_z_fixture_unchanged;;FAILED.*test_into_out" "$1"
}
s_host_inputs() {
    scenario host_inputs 90 0 host_inputs "$PYTEST -v $TUNE test_host.py" \
        "host arrays|tuned on the CPU" "FAILED;;ERROR" "$1"
}
s_threads() {
    scenario threads 60 0 - "$PY $HERE/scripts/threads_same_key.py" \
        "PROBE problems: none" "Traceback" "$1"
}
s_threads_legacy() {
    scenario threads_legacy 60 0 - "$PY $HERE/scripts/threads_legacy.py" \
        "PROBE thread B: [0-9]+ iterations, errors: none" "" "$1"
}
s_threads_legacy_ptds() {
    scenario threads_legacy_ptds 60 0 - "CUPY_CUDA_PER_THREAD_DEFAULT_STREAM=1 $PY $HERE/scripts/threads_legacy.py" \
        "PROBE thread B: [0-9]+ iterations, errors: none" "" "$1"
}
s_triton() {
    scenario triton 90 "0|5" triton "$PY -c 'import torch, triton; print(\"PROBE torch\", torch.__version__, \"triton\", triton.__version__)'; $PYTEST -v $TUNE test_triton.py" \
        "" "FAILED;;ERROR" "$1"
}
s_gate_cycle() {
    scenario gate_cycle 75 0 gate \
        "set +e; echo '=== 1: pytest --autotune (no baseline yet)'; $PYTEST $TUNE test_gate.py; r1=\$?; echo \"=== rc1=\$r1\"; rm -f records.jsonl; echo '=== 2: pytest --autotune-update'; $PYTEST --autotune-update test_gate.py; r2=\$?; echo \"=== rc2=\$r2\"; find .autotune -type f | sort; echo '=== 3: pytest --autotune (against the baselines just written)'; $PYTEST $TUNE test_gate.py; r3=\$?; echo \"=== rc3=\$r3\"; echo \"PROBE rc of the three runs: \$r1 \$r2 \$r3\"; [ \$r1 = 0 ] && [ \$r2 = 0 ] && [ \$r3 = 0 ]" \
        "PROBE rc of the three runs: 0 0 0;;no baseline;;\.autotune/cuda-;;verdict=pass" "FAILED;;verdict=regression;;verdict=too noisy;;verdict=below" "$1"
}
s_oom() {
    scenario oom 60 1 oom "$PYTEST -v $TUNE test_oom.py" \
        "FAILED.*test_oom_far\[oom_far\];;FAILED.*test_oom_greedy\[oom_greedy\];;OutOfMemoryError|out of memory" \
        "FAILED.*\[twice\];;FAILED.*\[doubled\];;FAILED.*test_z_after" "$1"
}
s_illegal_check() {
    scenario illegal_check 40 1 illegal "$PYTEST test_a_illegal.py test_b_after.py" \
        "FAILED.*test_scale\[out_of_bounds\];;IllegalAddress|illegal memory access" "FAILED.*test_scale\[good_raw\]" "$1"
}
s_illegal_tune() {
    scenario illegal_tune 50 1 illegal "$PYTEST -v $TUNE test_a_illegal.py test_b_after.py" \
        "FAILED.*test_scale\[out_of_bounds\];;IllegalAddress|illegal memory access" "Segmentation fault;;core dumped;;Fatal Python error" "$1"
}
s_huge() {
    scenario huge 60 0 huge "$PYTEST -v $TUNE test_huge.py" \
        "test_widen;;PROBE after the 2 GiB group" "FAILED;;ERROR" "$1"
}
s_xdist() {
    scenario xdist 75 0 gate "$PY -c 'import xdist; print(\"PROBE xdist\", xdist.__version__)'; $PYTEST -n 2 $TUNE test_gate.py" \
        "4 record\(s\)" "FAILED;;ERROR" "$1"
}

ALL_PHASE1_LANES=(
    "kinds_check kinds_tune cuda1 host_inputs"
    "syncing streams inplace dtypes"
    "threads threads_legacy threads_legacy_ptds triton"
)
PHASE2=(gate_cycle oom illegal_tune xdist huge illegal_check)
ALL=(kinds_check kinds_tune dtypes cuda1 syncing streams inplace host_inputs threads
     threads_legacy threads_legacy_ptds triton gate_cycle oom illegal_check illegal_tune huge xdist)

write_env() {
    {
        echo "date: $(date -Is)"
        echo "repo: $REPO ($(git -C "$REPO" rev-parse --short HEAD 2>/dev/null) on $(git -C "$REPO" rev-parse --abbrev-ref HEAD 2>/dev/null))"
        echo "python: $($PY --version 2>&1)"
        nvidia-smi -L 2>&1 | head -n 8
        nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version --format=csv 2>&1 | head -n 8
        echo "CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-<unset>}"
        timeout 20 "$PY" - <<'EOF' 2>&1
import importlib
for name in ("numpy", "cupy", "pytest", "xdist", "triton", "torch", "filelock"):
    try:
        m = importlib.import_module(name)
        print(f"{name}: {getattr(m, '__version__', '?')}")
    except Exception as e:
        print(f"{name}: not importable ({type(e).__name__}: {e})")
try:
    import cupy
    n = cupy.cuda.runtime.getDeviceCount()
    print("CuPy sees", n, "GPU(s); runtime", cupy.cuda.runtime.runtimeGetVersion(), "driver", cupy.cuda.runtime.driverGetVersion())
    free, total = cupy.cuda.runtime.memGetInfo()
    print(f"device 0 memory: free {free / 2**30:.1f} GiB of {total / 2**30:.1f} GiB")
except Exception as e:
    print("CuPy device query failed:", type(e).__name__, e)
EOF
    } > "$P/00_env.txt" 2>&1
}

run_lane() {  # run_lane DEADLINE NAME...
    local deadline=$1
    shift
    local n
    for n in "$@"; do
        "s_$n" "$deadline"
    done
}

finish() {
    {
        echo "pytest-autotune GPU probe: $(date -Is), $(elapsed)s in all; verdicts in $P/<scenario>.txt"
        echo "(automatic first reading only: rc and output patterns; read each verdict's EXPECTED)"
        echo
        cat "$P"/SUMMARY.parts.* 2>/dev/null
    } > "$P/SUMMARY.txt"
    rm -f "$P"/SUMMARY.parts.*
    cat "$P/SUMMARY.txt"
}

main() {
    rm -f "$P"/SUMMARY.parts.*
    write_env
    if [ $# -gt 0 ]; then
        local n
        for n in "$@"; do
            if declare -F "s_$n" > /dev/null; then "s_$n" "$DEADLINE"; else echo "unknown scenario $n (known: ${ALL[*]})"; fi
        done
        finish
        return 0
    fi
    # Phase 1: three lanes at once; none of them fills the card, and their timings are
    # not judged against anything (the machine-wide device lock serializes their timing).
    local lane pids=()
    for lane in "${ALL_PHASE1_LANES[@]}"; do
        # shellcheck disable=SC2086 # the lane is a list of names
        run_lane "$PHASE1_DEADLINE" $lane &
        pids+=($!)
    done
    local pid
    for pid in "${pids[@]}"; do wait "$pid"; done
    # Phase 2, alone on the GPU: the gate's cycle (timings judged), a candidate that fills
    # the card, one that kills the context, a 2 GiB output, and pytest-xdist.
    run_lane "$DEADLINE" "${PHASE2[@]}"
    finish
}

main "$@"
rm -rf "$WORK" 2>/dev/null
exit 0
