#!/usr/bin/env bash
# Every GPU check of one session, in device calls of under 10 minutes each, on a host with
# two H200s (kind nvidia-h200-x2), from the repository root:
#   bash benchmarks/device_session.sh check   # GPU suite, examples (committed, update, -n 2)
#   bash benchmarks/device_session.sh costs   # --autotune cost, short calls, placement
#   bash benchmarks/device_session.sh gate    # gate reliability under the issue-9 conditions
#   bash benchmarks/device_session.sh final   # after fixes: suite, costs, some reliability
#   bash benchmarks/device_session.sh probe   # before a refactor: suite, dispatch, costs, short calls
#   bash benchmarks/device_session.sh verify  # after a CUDA or schedule change: suite, costs
#   bash benchmarks/device_session.sh after   # after a refactor, two GPUs: suite, -n 2, costs, gate
#   bash benchmarks/device_session.sh closing # the last call: suite, short calls, costs, reliability
#   bash benchmarks/device_session.sh conditions # gate reliability: -n 2 on two GPUs, -k, groups=, suite
#   bash benchmarks/device_session.sh third   # last call: suite, examples -n 2, costs, dispatch, history
#   bash benchmarks/device_session.sh sessions # gate reliability against a 5-session baseline
#   bash benchmarks/device_session.sh history # issue 9 item 4: what moves a kernel's time, gate runs
#   bash benchmarks/device_session.sh capture # issue 9 item 4: which part of a capture the history moves
#   bash benchmarks/device_session.sh fourth  # after the placements at offsets: suite, placement, costs, examples, gate on both GPUs
#   bash benchmarks/device_session.sh rounds  # after rounds of placements: suite, placement, examples, gate on both GPUs
#   bash benchmarks/device_session.sh sixth   # the final tree on one GPU: suite, examples, costs, short calls (every sample), then the gate
#   bash benchmarks/device_session.sh final31 # the last tree: suite, examples, costs, short calls, dispatch
#   bash benchmarks/device_session.sh suite34 # new GPU tests: the suite with its slowest, the examples plain and -n 2 under -W error
#   bash benchmarks/device_session.sh seventh # after the caller timing change: suite, short calls, costs, examples, gate
#   bash benchmarks/device_session.sh first   # where a first tuning's time goes (fresh processes), then the gate
#   bash benchmarks/device_session.sh eighth  # the final tree: suite, short calls (truth through the tunings), examples, costs, gate
#   bash benchmarks/device_session.sh ninth   # suite, examples, family costs by order and client, short calls, gate
#   bash benchmarks/device_session.sh tenth   # suite, family costs with room for every graph, examples -n 2, gate
#   bash benchmarks/device_session.sh eleventh # suite, family costs at 128 graphs and at 16, examples -n 2
#   bash benchmarks/device_session.sh twelfth # suite, short calls twice, eager anatomy, costs, examples, gate
#   bash benchmarks/device_session.sh closing10 # suite, examples (-n 2, -k), costs, short calls, gate
#   bash benchmarks/device_session.sh thirteenth # suite, examples (committed, update, -n 2 and -k under -W error, plain), --autotune cost, roofs
#   bash benchmarks/device_session.sh merged13 # after the CUDA review's merge: suite, examples, costs, short calls
#   bash benchmarks/device_session.sh fifteenth # the CUDA review's four doubts, then merged13's suite, examples, costs, short calls
#   bash benchmarks/device_session.sh sixteenth # --autotune cost, then the gate under each condition for $GATE_S s each
#   bash benchmarks/device_session.sh merged16 # after the sixteenth session's QA merges: suite, examples (plain, -n 2, -k under -W error), --autotune cost
#   bash benchmarks/device_session.sh seventeenth # the seventeenth session's merges: suite, examples (plain, -n 2, -k, under --cov), --autotune cost, then the module gate
#   bash benchmarks/device_session.sh eighteenth # the commits since the seventeenth's GPU run: suite, examples (every mode, --cov), costs, then the -k gate
#   bash benchmarks/device_session.sh gates18 # the gate's module condition for MODULE_S s, then -n 2 for the rest
#   bash benchmarks/device_session.sh final18 # the session's last tree: suite, examples (every mode), family costs, then -n 2
#   bash benchmarks/device_session.sh nineteenth # suite, examples (every mode), the module gate for MODULE_S s, then -n 2
#   bash benchmarks/device_session.sh final19 # suite, examples (every mode), then the examples' roofs over RUNS runs of -n 2 and of one process
#   bash benchmarks/device_session.sh twentieth # suite, examples (every mode), an update on an update, -n 2 roofs
#   bash benchmarks/device_session.sh roofs   # an update, then RUNS runs each of -n 2 and one process: every winner's fraction of its roof
#   bash benchmarks/device_session.sh twentyfirst # suite, examples, what the fixed cost depends on, RUNS runs of -n 2 with their records
#   bash benchmarks/device_session.sh n2runs # an update, then RUNS runs of -n 2 with their records
#   bash benchmarks/device_session.sh twentysecond # a fresh host: family costs twice, suite, examples
#   bash benchmarks/device_session.sh twentythird # suite, examples, the gate's compiles on an empty kernel cache, first-tuning clocks, costs, short calls
#   bash benchmarks/device_session.sh final23 # the session's last tree: suite, examples, the gate's compiles on an empty cache, family costs twice, short calls
#   bash benchmarks/device_session.sh tiebreak24 # the short calls with the caller timing's tie-break off and on, suite, examples, costs
#   bash benchmarks/device_session.sh final24 # the session's last tree: suite, examples, family costs, short calls twice
#   bash benchmarks/device_session.sh race25 # the short calls with open races sampled on and not, suite, examples, costs
#   bash benchmarks/device_session.sh final25 # races' rounds, then the suite, examples, family costs, the short calls once more
#   bash benchmarks/device_session.sh final28 # the session's last tree: suite, examples, family costs, short calls, then ROUNDS layernorm rounds
#   bash benchmarks/device_session.sh paired27 # the short calls' new defaults (round by round, measured slowdown) against the last session's, suite, examples, costs
#   bash benchmarks/device_session.sh trim27 # the layernorm's eager anatomy (trimmed and mean loops), then the short calls trimmed and not
#   bash benchmarks/device_session.sh spells  # does a launch or Python reference follow the host's slow spells?
#   bash benchmarks/device_session.sh speedup # the short calls with the tie-break's HOST_SPEEDUP at $SPEEDUPS in turn, then the GPU suite
#   bash benchmarks/device_session.sh races  # the short calls with open races sampled on and not, then the GPU suite
#   bash benchmarks/device_session.sh shortn2 # the short calls, then RUNS runs of -n 2 with their records
#   bash benchmarks/device_session.sh top     # gate reliability for the whole budget, one condition ($CONDITION)
# Logs and results land under $OUT (default ./device-out). The check stage replaces the
# committed H200 baselines in the tree it runs in (returned as caches.tar): run it on the
# lent machine's copy, not in a checkout you commit from. A step that fails or times out
# does not stop the next; each step's exit code and wall are in the log, and no step runs
# past BUDGET seconds (default 570) from the start, so the call ends inside its limit.
set -u
OUT="${OUT:-$PWD/device-out}"
mkdir -p "$OUT"
LOG="$OUT/log.txt"
# The lent machine has no registry: the plugin runs from the tree, its entry points (the
# pytest11 plugin, the console script) declared by a dist-info beside it, and platformdirs
# installed from a carried wheel (.whl/) when there is one.
# The gate-reliability driver passes `-p pytest_autotune.plugin` itself, so it runs with
# PYTHONPATH=$PLAIN (no entry point: the plugin would be registered twice).
SITE=/tmp/autotune-site EP=/tmp/autotune-ep
mkdir -p "$SITE" "$EP/pytest_autotune-0.1.0.dist-info"
printf 'Metadata-Version: 2.1\nName: pytest-autotune\nVersion: 0.1.0\n' \
  >"$EP/pytest_autotune-0.1.0.dist-info/METADATA"
printf '[pytest11]\nautotune = pytest_autotune.plugin\n\n[console_scripts]\npytest-autotune = pytest_autotune.cli:main\n' \
  >"$EP/pytest_autotune-0.1.0.dist-info/entry_points.txt"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target "$SITE" .whl/*.whl
fi
PLAIN=".:$SITE"
export PYTHONPATH="$PLAIN:$EP" PYTHONUNBUFFERED=1
BUDGET="${BUDGET:-570}"
P="python3 -m pytest -p no:cacheprovider"

step() {  # step SECONDS COMMAND...: its output appended to the log, with its wall and exit code
  local left=$((BUDGET - SECONDS)) limit=$1
  shift
  if [ "$left" -lt 20 ]; then
    echo "===== skipped (budget spent): $*" >>"$LOG"
    return
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  echo "===== $* (limit $limit s)" >>"$LOG"
  local start=$SECONDS
  timeout "$limit" "$@" >>"$LOG" 2>&1
  echo "===== exit code $? in $((SECONDS - start)) s" >>"$LOG"
}

{
  date -u
  nvidia-smi --query-gpu=index,name,uuid,clocks.sm,clocks.mem,temperature.gpu --format=csv
  python3 -c "import sys, numpy, cupy; print(sys.version, numpy.__version__, cupy.__version__)"
} >"$LOG" 2>&1

examples() {  # examples LIMIT [tar]: the example kernels against the committed baselines,
  # an update on this host (its caches kept in $OUT/caches.tar with `tar`), then -n 2 (two
  # GPUs on a two-GPU host): one record per group, each group's GPU uuid in its record.
  step "$1" $P example_kernels --autotune -rfx --autotune-record="$OUT/committed.jsonl"
  rm -rf .autotune/cuda-*
  step "$1" $P example_kernels --autotune-update -q
  [ "${2:-}" = tar ] && tar cf "$OUT/caches.tar" .autotune
  step "$1" $P example_kernels -n 2 --autotune -rfx --autotune-record="$OUT/xdist.jsonl"
  python3 - "$OUT/xdist.jsonl" >>"$LOG" 2>&1 <<'PY'
import json, sys
records = [json.loads(line) for line in open(sys.argv[1])]
groups = [r["extra"]["group"] for r in records]
uuids = {r["extra"]["group"]: r["extra"]["device"]["fingerprint"].get("uuid") for r in records}
print(f"xdist records: {len(records)}, groups: {len(set(groups))}, uuids: {set(uuids.values())}")
PY
}

gpu_gate() {  # gpu_gate GPU CONDITION SECONDS: one driver on one GPU, its log apart
  CUDA_VISIBLE_DEVICES=$1 PYTHONPATH="$PLAIN" timeout "$3" python3 \
    benchmarks/gpu_gate_reliability.py --condition "$2" --runs "${GATE_RUNS:-20}" --workers 2 \
    >"$OUT/gate-$2.txt" 2>&1
  echo "gate $2 on GPU $1: exit code $?" >>"$LOG"
}
side_by_side() {  # two gate drivers, one per GPU, for what is left of the budget
  local left=$((BUDGET - SECONDS - 10))
  if [ "$left" -gt 60 ]; then
    gpu_gate 0 "${GATE0:-groups}" "$left" &
    gpu_gate 1 "${GATE1:-module}" "$left" &
    wait
  fi
}

gate_rest() {  # gate_rest CONDITION: 100 runs a side against 5 baseline sessions, for the rest
  # of the budget (the driver's --budget stops it between driver processes, with its summary)
  local left=$((BUDGET - SECONDS - 15))
  if [ "$left" -gt 60 ]; then
    echo "===== gate $1 for $left s" >>"$LOG"
    PYTHONPATH="$PLAIN" timeout "$((left + 10))" python3 benchmarks/gpu_gate_reliability.py \
      --condition "$1" --runs 100 --workers "${GATE_WORKERS:-10}" --baseline-sessions 5 \
      --budget "$left" >"$OUT/gate-$1.txt" 2>&1
    echo "===== gate $1: exit code $? at $SECONDS s" >>"$LOG"
  fi
}

n2_runs() {  # an update, then RUNS runs of -n 2, each group's winner, roof and fixed cost
  # taken off from their records (benchmarks/records_instrument.py)
  step 40 $P example_kernels --autotune-update -q
  for i in $(seq "${RUNS:-2}"); do
    step 40 $P example_kernels -n 2 --autotune -q -p no:randomly --autotune-record="$OUT/n2-$i.jsonl"
  done
  python3 benchmarks/records_instrument.py "$OUT"/n2-*.jsonl >"$OUT/instrument.txt" 2>&1
}

tree_checks() {  # the GPU suite, then the examples plain, in every mode and under -k
  step 90 $P tests/gpu tests/unit/test_cuda_client.py -q -rs
  step 40 $P example_kernels -q -W error
  examples 60
  step 40 $P example_kernels -k "saxpy or sum" --autotune -rfx -W error
}

replay_cache() {  # replay_cache N: the suite, every family's cost with the replay cache's
  # default and with N graphs, one after the other, then the examples under -n 2
  step 90 $P tests/gpu tests/unit/test_cuda_client.py -q -rs
  step 80 python3 benchmarks/gpu_family_costs.py --runs 3
  step 80 python3 benchmarks/gpu_family_costs.py --runs 3 --replay-cache "$1"
  step 60 $P example_kernels -n 2 --autotune -rfx --autotune-record="$OUT/xdist.jsonl"
}

case "${1:-check}" in
check)
  step 170 $P tests/gpu tests/unit/test_cuda_client.py -q -rs
  examples 100 tar
  step 60 python3 benchmarks/gpu_tuning_cost.py
  step 80 python3 benchmarks/roof_fractions.py --sessions 1
  ;;
costs)
  step 60 $P example_kernels --autotune -rfx --autotune-record="$OUT/committed.jsonl"
  step 60 $P tests/gpu/test_xdist_gpus.py -q -rs
  step 200 bash benchmarks/gpu_autotune_cost.sh "$OUT/cost"
  step 150 python3 benchmarks/gpu_short_calls.py "$OUT/short"
  step 170 python3 benchmarks/gpu_placement.py "$OUT/placement" --runs 3
  ;;
final)
  # After the fixes of one session: the suite, the committed baselines, the costs, then as
  # much of the gate's reliability as the call has time for.
  step 90 $P tests/gpu tests/unit/test_cuda_client.py -q -rs
  step 60 $P example_kernels --autotune -rfx --autotune-record="$OUT/committed.jsonl"
  step 60 $P example_kernels --autotune -rfx --autotune-record="$OUT/committed2.jsonl"
  step 60 python3 benchmarks/gpu_short_calls.py "$OUT/short"
  step 150 bash benchmarks/gpu_autotune_cost.sh "$OUT/cost"
  step 40 python3 benchmarks/roof_fractions.py --sessions 1
  step 30 python3 benchmarks/gpu_tuning_cost.py
  for condition in ${CONDITIONS:-module xdist}; do
    step 150 env PYTHONPATH="$PLAIN" python3 benchmarks/gpu_gate_reliability.py --condition "$condition" \
      --runs "${GATE_RUNS:-10}" --workers 2
  done
  ;;
last)
  step 60 $P example_kernels --autotune -rfx
  step 60 python3 benchmarks/gpu_short_calls.py "$OUT/short"
  step 100 bash benchmarks/gpu_autotune_cost.sh "$OUT/cost"
  step 30 python3 benchmarks/gpu_tuning_cost.py
  step 60 $P tests/gpu -q -rs
  ;;
probe)
  # Before a refactor: the suite as it stands; the dispatch on this host's quiet CPU; the
  # tuning cost of every family; the short calls with their disagreeing tunings' samples;
  # the committed baselines' verdicts on this machine; then as much gate reliability as fits.
  step 110 $P tests/gpu tests/unit/test_cuda_client.py -q -rs
  step 40 python3 benchmarks/dispatch.py --thread-time
  step 40 python3 benchmarks/dispatch.py --thread-time
  step 100 python3 benchmarks/gpu_family_costs.py --runs 3
  step 120 python3 benchmarks/gpu_short_calls.py "$OUT/short"
  step 50 $P example_kernels --autotune -rfx --autotune-record="$OUT/committed.jsonl"
  for condition in ${CONDITIONS:-module}; do
    step 150 env PYTHONPATH="$PLAIN" python3 benchmarks/gpu_gate_reliability.py --condition "$condition" \
      --runs "${GATE_RUNS:-10}" --workers 2
  done
  ;;
verify)
  # After a change to the CUDA client or the schedule: the suite, the short calls, every
  # family's tuning cost, the saxpy cost, the examples' gate, then gate reliability.
  step 90 $P tests/gpu tests/unit/test_cuda_client.py -q -rs
  step 120 python3 benchmarks/gpu_short_calls.py "$OUT/short"
  step 100 python3 benchmarks/gpu_family_costs.py --runs 3
  step 40 python3 benchmarks/gpu_tuning_cost.py
  [ -f scratch/dispatch_variants.py ] && step 60 python3 scratch/dispatch_variants.py 21
  step 60 $P example_kernels --autotune -rfx --autotune-record="$OUT/committed.jsonl"
  for condition in ${CONDITIONS:-xdist}; do
    step 150 env PYTHONPATH="$PLAIN" python3 benchmarks/gpu_gate_reliability.py --condition "$condition" \
      --runs "${GATE_RUNS:-10}" --workers 2
  done
  ;;
after)
  # After a refactor, on a two-GPU host: the suite (the two-GPU test included), the gate
  # against the committed baselines (recorded on another H200), an update and -n 2 on two
  # GPUs, the short calls with both caller timings, the costs, the dispatch, then gate
  # reliability under the conditions given.
  step 90 $P tests/gpu tests/unit/test_cuda_client.py -q -rs
  examples 60
  step 60 python3 benchmarks/gpu_short_calls.py "$OUT/short-lead0" --eager-lead 0
  step 60 python3 benchmarks/gpu_short_calls.py "$OUT/short"
  step 60 python3 benchmarks/gpu_family_costs.py --runs 3
  step 30 python3 benchmarks/gpu_tuning_cost.py
  step 20 python3 benchmarks/dispatch.py --thread-time
  step 20 python3 benchmarks/dispatch.py --thread-time
  for condition in ${CONDITIONS:-k groups suite}; do
    step 150 env PYTHONPATH="$PLAIN" python3 benchmarks/gpu_gate_reliability.py --condition "$condition" \
      --runs "${GATE_RUNS:-10}" --workers 2
  done
  ;;
closing)
  # The last call of a session: the suite after the last CUDA change, the short calls, the
  # families' costs, then the gate's reliability on the GPU and on this host's quiet CPU.
  step 60 $P tests/gpu tests/unit/test_cuda_client.py -q -rs
  step 40 python3 benchmarks/gpu_short_calls.py "$OUT/short"
  step 50 python3 benchmarks/gpu_family_costs.py --runs 3
  step 200 env PYTHONPATH="$PLAIN" python3 benchmarks/gpu_gate_reliability.py --condition module \
    --runs "${GATE_RUNS:-30}" --workers 2
  step 150 python3 benchmarks/gate_reliability.py --runs "${CPU_RUNS:-12}" --baseline-sessions 3
  ;;
more)
  # After a last small CUDA change: the suite and the short calls, then more gate runs.
  step 60 $P tests/gpu tests/unit/test_cuda_client.py -q -rs
  step 40 python3 benchmarks/gpu_short_calls.py "$OUT/short"
  for condition in ${CONDITIONS:-xdist k}; do
    step 160 env PYTHONPATH="$PLAIN" python3 benchmarks/gpu_gate_reliability.py --condition "$condition" \
      --runs "${GATE_RUNS:-20}" --workers 2
  done
  ;;
history)
  # Issue 9 item 4: what in a process's history moves a kernel's time, then gate runs.
  step 150 python3 benchmarks/gpu_history.py "$OUT/history" --runs "${HISTORY_RUNS:-3}"
  for condition in ${CONDITIONS:-module}; do
    step 200 env PYTHONPATH="$PLAIN" python3 benchmarks/gpu_gate_reliability.py --condition "$condition" \
      --runs "${GATE_RUNS:-20}" --workers 2
  done
  ;;
conditions)
  # Gate reliability under issue 9's conditions on a two-GPU host, each within its step.
  step 170 env PYTHONPATH="$PLAIN" python3 benchmarks/gpu_gate_reliability.py --condition xdist \
    --runs "${XDIST_RUNS:-12}" --workers 2
  for condition in ${CONDITIONS:-k groups suite}; do
    step 130 env PYTHONPATH="$PLAIN" python3 benchmarks/gpu_gate_reliability.py --condition "$condition" \
      --runs "${GATE_RUNS:-16}" --workers 2
  done
  ;;
third)
  # The third session's last call, on two GPUs: the suite, the examples (committed
  # baselines, update, -n 2 on two GPUs), every family's cost, the short calls, the saxpy
  # cost, the dispatch, then what moves a kernel's time on this machine.
  step 90 $P tests/gpu tests/unit/test_cuda_client.py -q -rs
  examples 60
  step 70 python3 benchmarks/gpu_family_costs.py --runs 3
  step 60 python3 benchmarks/gpu_short_calls.py "$OUT/short"
  step 30 python3 benchmarks/gpu_tuning_cost.py
  step 25 python3 benchmarks/dispatch.py --thread-time
  step 25 python3 benchmarks/dispatch.py --thread-time
  step 50 python3 benchmarks/gpu_history.py "$OUT/history" --runs 2
  ;;
sessions)
  # Gate reliability against a baseline of several update sessions (the README's advice):
  # their measured spread widens the noise of a group that moves between sessions.
  for condition in ${CONDITIONS:-module}; do
    step 250 env PYTHONPATH="$PLAIN" python3 benchmarks/gpu_gate_reliability.py --condition "$condition" \
      --runs "${GATE_RUNS:-20}" --workers 2 --baseline-sessions "${BASELINE_SESSIONS:-5}"
  done
  ;;
capture)
  # Issue 9 item 4: does the history act at capture time, through the output's or the
  # input's placement? Then the suite and the families' costs after the shorter retry hold.
  step 90 $P tests/gpu tests/unit/test_cuda_client.py -q -rs
  step 120 python3 benchmarks/gpu_capture_history.py "$OUT/capture" --runs 2
  step 100 python3 benchmarks/gpu_placement.py "$OUT/placement" --runs 2
  step 90 python3 benchmarks/gpu_family_costs.py --runs 3
  ;;
fourth)
  # After the placements at offsets (issue 9 item 4) and the shorter retry hold (issue 14),
  # on two GPUs: the suite, the placement check, every family's cost, the examples, the
  # short calls, then gate reliability with one driver per GPU side by side.
  step 90 $P tests/gpu tests/unit/test_cuda_client.py -q -rs
  step 60 python3 benchmarks/gpu_placement.py "$OUT/placement" --runs 3
  step 60 python3 benchmarks/gpu_family_costs.py --runs 3
  examples 60
  step 60 python3 benchmarks/gpu_short_calls.py "$OUT/short"
  side_by_side
  ;;
rounds)
  # After the gate's samples became rounds of every placement: the suite, the placement
  # check, the examples' gate, then gate reliability with one driver per GPU.
  step 90 $P tests/gpu tests/unit/test_cuda_client.py -q -rs
  step 60 python3 benchmarks/gpu_placement.py "$OUT/placement" --runs 2
  examples 60
  side_by_side
  ;;
sixth)
  # The sixth session's first call, one GPU: the suite on the final tree, the examples
  # (committed baselines, update, -n 2), every family's cost (the held rival), the short
  # calls with every tuning's samples kept, then the gate for the rest of the call.
  step 90 $P tests/gpu tests/unit/test_cuda_client.py -q -rs
  examples 60
  step 80 python3 benchmarks/gpu_family_costs.py --runs 3
  step 110 python3 benchmarks/gpu_short_calls.py "$OUT/short" --keep-all
  gate_rest "${CONDITION:-suite}"
  ;;
seventh)
  # After the caller timing became the host's enqueue time beside the device's: the suite,
  # the short calls (every sample), the families' costs, then the gate for the rest.
  step 90 $P tests/gpu tests/unit/test_cuda_client.py -q -rs
  step 110 python3 benchmarks/gpu_short_calls.py "$OUT/short" --keep-all
  step 80 python3 benchmarks/gpu_family_costs.py --runs 3
  step 60 $P example_kernels --autotune -rfx --autotune-record="$OUT/committed.jsonl"
  gate_rest "${CONDITION:-groups}"
  ;;
first)
  # Where a fresh process's first tuning spends its time (the histogram's 0.17-0.19x of
  # do_bench against 0.09-0.10x later; matmul's 0.101), each family in three fresh
  # processes, then the gate for the rest of the call.
  for family in histogram histogram histogram matmul matmul; do
    step 40 python3 benchmarks/gpu_first_tuning.py "$family"
  done
  gate_rest "${CONDITION:-xdist}"
  ;;
eighth)
  # The seventh session's last call: the suite on the final tree, the short calls with the
  # truth's rounds through the tunings, the examples (committed, update, -n 2), the
  # families' costs, then the gate for the rest.
  step 90 $P tests/gpu tests/unit/test_cuda_client.py -q -rs
  step 130 python3 benchmarks/gpu_short_calls.py "$OUT/short" --keep-all
  examples 60
  step 80 python3 benchmarks/gpu_family_costs.py --runs 3
  gate_rest "${CONDITION:-xdist}"
  ;;
ninth)
  # The eighth session's call: the suite on its tree, the examples (committed, update,
  # -n 2), whether the histogram's first tuning pays for the families tuned before it in
  # one process (the order and a client per family), the short calls, then the gate.
  step 90 $P tests/gpu tests/unit/test_cuda_client.py -q -rs
  examples 60
  step 80 python3 benchmarks/gpu_family_costs.py --runs 3
  step 80 python3 benchmarks/gpu_family_costs.py --runs 3 --first histogram
  step 80 python3 benchmarks/gpu_family_costs.py --runs 3 --client-per-family
  step 130 python3 benchmarks/gpu_short_calls.py "$OUT/short" --keep-all
  gate_rest "${CONDITION:-k}"
  ;;
tenth)
  # The eighth session's second call: the suite on its final tree, whether the
  # histogram's first tuning after the other families pays for evicting their graphs
  # (room for every graph against the default 16), then the gate.
  replay_cache 64
  gate_rest "${CONDITION:-xdist}"
  ;;
eleventh)
  # The same with 16 graphs (the default before 32f5de3 and after its revert).
  replay_cache 16
  ;;
closing10)
  # The tenth session's last call: the suite, the examples (committed, update, -n 2, a -k
  # subset), every family's cost, the short calls with the median rule, then the gate.
  step 90 $P tests/gpu tests/unit/test_cuda_client.py -q -rs
  examples 60
  step 60 $P example_kernels -k "saxpy or sum" --autotune -rfx
  step 80 python3 benchmarks/gpu_family_costs.py --runs 3
  step 60 python3 benchmarks/gpu_short_calls.py "$OUT/short" --keep-all
  gate_rest "${CONDITION:-k}"
  ;;
closing11)
  # The eleventh session's one short call (about 130 s of device time left after the
  # start): the GPU suite, then the examples (committed, update, -n 2, a -k subset, plain).
  step 60 $P tests/gpu tests/unit/test_cuda_client.py -q -rs
  examples 30
  step 30 $P example_kernels -k "saxpy or sum" --autotune -rfx
  step 30 $P example_kernels -q
  ;;
twelfth)
  # The ninth session's call (with a host-speed probe in the caller timing, since
  # reverted): the suite, the short calls in two processes (the truth paired, in a random
  # order each round), where an eager call's time goes, every family's cost, the
  # examples, then the gate.
  step 90 $P tests/gpu tests/unit/test_cuda_client.py -q -rs
  step 130 python3 benchmarks/gpu_short_calls.py "$OUT/short" --keep-all
  step 130 python3 benchmarks/gpu_short_calls.py "$OUT/short2" --keep-all
  step 60 python3 benchmarks/gpu_eager_anatomy.py "$OUT/anatomy"
  step 80 python3 benchmarks/gpu_family_costs.py --runs 3
  examples 60
  gate_rest "${CONDITION:-k}"
  ;;
thirteenth)
  # The thirteenth session's first call, the first GPU run of sessions 11-12's code: the
  # suite, the examples (against the committed baselines with the report, an update, then
  # -n 2 and a -k subset with warnings as errors, and plain), the cost of --autotune, and
  # every example's fraction of its roof over six fresh sessions.
  step 90 $P tests/gpu tests/unit/test_cuda_client.py -q -rs
  step 60 $P example_kernels --autotune -rfx --autotune-record="$OUT/committed.jsonl" \
    --autotune-html="$OUT/report-committed.html"
  rm -rf .autotune/cuda-*
  step 60 $P example_kernels --autotune-update -q
  tar cf "$OUT/caches.tar" .autotune
  step 60 $P example_kernels -n 2 --autotune -rfx -W error --autotune-record="$OUT/xdist.jsonl" \
    --autotune-html="$OUT/report.html"
  python3 - "$OUT/xdist.jsonl" >>"$LOG" 2>&1 <<'PY'
import json, sys
records = [json.loads(line) for line in open(sys.argv[1])]
groups = [r["extra"]["group"] for r in records]
uuids = {r["extra"]["group"]: r["extra"]["device"]["fingerprint"].get("uuid") for r in records}
print(f"xdist records: {len(records)}, groups: {len(set(groups))}, uuids: {set(uuids.values())}")
PY
  step 40 $P example_kernels -k "saxpy or sum" --autotune -rfx -W error
  step 40 $P example_kernels -q -W error
  step 120 bash benchmarks/gpu_autotune_cost.sh "$OUT/cost"
  step 100 python3 benchmarks/roof_fractions.py --sessions 6 --out "$OUT/roofs"
  ;;
merged13)
  # The thirteenth session's second stage, after the CUDA review's merge (graphs' pools
  # emptied as they go, a second try out of memory, the device's context for copies): the
  # suite, the examples, every family's cost and the short calls, to see that the pools'
  # release costs the tuning nothing it did not before.
  step 90 $P tests/gpu tests/unit/test_cuda_client.py -q -rs
  examples 60
  step 40 $P example_kernels -k "saxpy or sum" --autotune -rfx -W error
  step 100 python3 benchmarks/gpu_family_costs.py --runs 3
  step 60 bash benchmarks/gpu_autotune_cost.sh "$OUT/cost"
  step 140 python3 benchmarks/gpu_short_calls.py "$OUT/short" --keep-all
  ;;
fifteenth)
  # The fifteenth session's CUDA changes were checked against fakes only: the review's
  # four open questions first (benchmarks/gpu_doubts.py), then merged13's checks.
  step 60 python3 benchmarks/gpu_doubts.py
  step 90 $P tests/gpu tests/unit/test_cuda_client.py -q -rs
  examples 60
  step 40 $P example_kernels -k "saxpy or sum" --autotune -rfx -W error
  step 100 python3 benchmarks/gpu_family_costs.py --runs 3
  step 140 python3 benchmarks/gpu_short_calls.py "$OUT/short" --keep-all
  ;;
sixteenth)
  # The sixteenth session's second call, on the tree that lands sessions ten to fifteen:
  # the cost of --autotune, then every issue-9 condition against 5 baseline sessions for
  # GATE_S seconds each (the driver's --budget stops it between processes, with its summary).
  step 60 bash benchmarks/gpu_autotune_cost.sh "$OUT/cost"
  for condition in ${CONDITIONS:-module k groups suite xdist}; do
    PYTHONPATH="$PLAIN" timeout "$((${GATE_S:-90} + 30))" python3 benchmarks/gpu_gate_reliability.py \
      --condition "$condition" --runs 100 --workers "${GATE_WORKERS:-10}" --baseline-sessions 5 \
      --budget "${GATE_S:-90}" >"$OUT/gate-$condition.txt" 2>&1
    echo "===== gate $condition: exit code $? at $SECONDS s" >>"$LOG"
  done
  ;;
merged16)
  # The sixteenth session's QA merges change the output checks (the reference's output
  # kept as a copy, complex NaN parts) and the test body's calls (fixtures, prints, logs
  # quiet in timed calls): the GPU suite, the examples in both modes, the --autotune cost.
  step 90 $P tests/gpu tests/unit/test_cuda_client.py -q -rs
  step 40 $P example_kernels -q -W error
  examples 60
  step 40 $P example_kernels -k "saxpy or sum" --autotune -rfx -W error
  step 60 bash benchmarks/gpu_autotune_cost.sh "$OUT/cost"
  ;;
seventeenth)
  # The seventeenth session's QA merges (tracers put aside in timed calls, copies of more
  # input types, the report's and the gate's messages): the GPU suite, the examples in
  # every mode, then under pytest-cov (carried as wheels) against the baselines just
  # updated, where a traced enqueue time read a false regression before; the --autotune
  # cost; the module condition of the gate for what is left.
  step 90 $P tests/gpu tests/unit/test_cuda_client.py -q -rs
  step 40 $P example_kernels -q -W error
  examples 60
  step 40 $P example_kernels -k "saxpy or sum" --autotune -rfx -W error
  step 60 $P example_kernels --autotune --cov=example_kernels --cov-report=term -rfx
  step 60 bash benchmarks/gpu_autotune_cost.sh "$OUT/cost"
  gate_rest module
  ;;
eighteenth)
  # Commits after the seventeenth session's GPU run (the gate's rival re-measured beside
  # the pick, CUDA MemoryError as out of memory, tracers put aside on two threads) and
  # long calls judged by speed_factor on their first sample: the GPU suite, the examples
  # in every mode and under pytest-cov, the --autotune cost, every family's tuning cost,
  # then the gate's -k condition for what is left.
  tree_checks
  step 60 $P example_kernels --autotune --cov=example_kernels --cov-report=term -rfx
  step 60 bash benchmarks/gpu_autotune_cost.sh "$OUT/cost"
  step 110 python3 benchmarks/gpu_family_costs.py --runs 3
  gate_rest "${CONDITION:-k}"
  ;;
gates18)
  # The conditions short of 100 runs a side on the current gate code: module (80), then
  # -n 2 (20, both workers on the one GPU: no two-GPU host is lent) for the rest.
  PYTHONPATH="$PLAIN" timeout "$((${MODULE_S:-100} + 40))" python3 benchmarks/gpu_gate_reliability.py \
    --condition module --runs 100 --workers 10 --baseline-sessions 5 --budget "${MODULE_S:-100}" \
    >"$OUT/gate-module.txt" 2>&1
  echo "===== gate module: exit code $? at $SECONDS s" >>"$LOG"
  gate_rest xdist
  ;;
final18)
  tree_checks
  step 110 python3 benchmarks/gpu_family_costs.py --runs 3
  gate_rest xdist
  ;;
nineteenth)
  # The eighteenth session's last commits (the gate note's wording, the review's refactor)
  # on the GPU: the suite and the examples in every mode, then the gate's module condition
  # for MODULE_S s and -n 2 for the rest (both short of 100 runs a side).
  tree_checks
  PYTHONPATH="$PLAIN" timeout "$((${MODULE_S:-60} + 40))" python3 benchmarks/gpu_gate_reliability.py \
    --condition module --runs 100 --workers 10 --baseline-sessions 5 --budget "${MODULE_S:-60}" \
    >"$OUT/gate-module.txt" 2>&1
  echo "===== gate module: exit code $? at $SECONDS s" >>"$LOG"
  gate_rest xdist
  ;;
final19)
  # The session's last tree: the suite and the examples in every mode, then how often a
  # winner reads above its HBM roof (seen once, under -n 2: sum and softmax at 100.4% and
  # 100.5%, 56.4 us against 62.4 us), in RUNS runs of -n 2 and RUNS of one process.
  tree_checks
  for i in $(seq "${RUNS:-4}"); do
    step 40 $P example_kernels -n 2 --autotune -q -p no:randomly
    step 40 $P example_kernels --autotune -q
  done
  grep -hE "test_(sum|softmax|saxpy).*HBM|reached .* of its" "$LOG" >"$OUT/roofs.txt"
  ;;
twentieth)
  # The suite and the examples in every mode, then an update of unchanged code on top of
  # the examples' update (each group should join its baseline, measured again where its
  # first read was slower), and RUNS runs of -n 2 for the roofs.
  tree_checks
  step 40 $P example_kernels --autotune-update -q -rA
  for i in $(seq "${RUNS:-2}"); do
    step 40 $P example_kernels -n 2 --autotune -q -p no:randomly
  done
  grep -hE "joined the baseline|new baseline|kept the baseline|measured [0-9] times" "$LOG" >"$OUT/updates.txt"
  grep -hE "test_(sum|softmax|saxpy).*HBM|reached .* of its" "$LOG" >"$OUT/roofs.txt"
  ;;
roofs)
  # How often a winner reads above its roof (issue 14): an update, then RUNS runs of -n 2
  # and RUNS of one process, alternating, each winner's fraction of its roof kept.
  step 40 $P example_kernels --autotune-update -q
  for i in $(seq "${RUNS:-10}"); do
    step 40 $P example_kernels -n 2 --autotune -q -p no:randomly
    step 40 $P example_kernels --autotune -q
  done
  grep -hE "^example_kernels/.*% (HBM|L2|DRAM)" "$LOG" >"$OUT/roofs.txt"
  grep -hE "reached .* of its" "$LOG" >"$OUT/roof_notes.txt" || true
  ;;
twentyfirst)
  # The suite and the examples in every mode; what the replay fixed cost depends on
  # (gpu_fixed_cost_idle.py); then an update and RUNS runs of -n 2, each group's winner
  # median, fraction of its roof and the fixed cost its worker took off, from the records.
  tree_checks
  step 60 python3 benchmarks/gpu_fixed_cost_idle.py --rounds "${ROUNDS:-4}"
  n2_runs
  ;;
n2runs)
  n2_runs
  ;;
twentysecond)
  # On a fresh host, its first CUDA process first: every family's cost twice (the
  # histogram's first tuning in the host's first process and in its second), the GPU's
  # performance state and persistence mode before; then the suite and the examples.
  nvidia-smi --query-gpu=pstate,persistence_mode,clocks.sm,clocks.max.sm,power.draw \
    --format=csv >>"$LOG" 2>&1
  step 80 python3 benchmarks/gpu_family_costs.py --runs 3
  step 80 python3 benchmarks/gpu_family_costs.py --runs 3
  tree_checks
  ;;
twentythird)
  # The commits since the last GPU run (the gate's placements copied by memcpy, the 2 ms
  # retry hold): the suite and the examples, then what `--autotune` compiles on an empty
  # kernel cache (no `cupy_copy` kernel may be among the gate's), where the histogram's
  # first tuning spends its time, every family's cost, and the short calls.
  tree_checks
  for mode in plain autotune; do  # each on an empty kernel cache of its own
    export CUPY_CACHE_DIR=/tmp/empty-kernel-cache-$mode-$$
    flag=""
    [ $mode = autotune ] && flag=--autotune
    step 60 $P example_kernels $flag -q -p no:randomly
    echo "CuPy kernels compiled by the $mode run on an empty cache:" >>"$LOG"
    grep -aoh "cupy_[a-z_]*__[a-z0-9_]*" -r "$CUPY_CACHE_DIR" | sort | uniq -c >>"$LOG" 2>&1
  done
  unset CUPY_CACHE_DIR
  step 60 python3 benchmarks/gpu_first_tuning.py histogram --repeat 2
  step 90 python3 benchmarks/gpu_family_costs.py --runs 3
  step 150 python3 benchmarks/gpu_short_calls.py "$OUT/short"
  ;;
final23)
  # The session's last tree: the suite and the examples, what `--autotune` compiles on an
  # empty kernel cache (the fp32 probe's cast gone), every family's cost in two fresh
  # processes (the histogram's first tuning twice more), then the short calls.
  tree_checks
  export CUPY_CACHE_DIR=/tmp/empty-kernel-cache-final-$$
  step 60 $P example_kernels --autotune -q -p no:randomly
  echo "CuPy kernels compiled by the autotune run on an empty cache:" >>"$LOG"
  grep -aoh "cupy_[a-z_]*__[a-z0-9_]*" -r "$CUPY_CACHE_DIR" | sort | uniq -c >>"$LOG" 2>&1
  unset CUPY_CACHE_DIR
  step 80 python3 benchmarks/gpu_family_costs.py --runs 3
  step 80 python3 benchmarks/gpu_family_costs.py --runs 3
  step 150 python3 benchmarks/gpu_short_calls.py "$OUT/short"
  ;;
tiebreak24)
  # The caller timing's tie-break off and on, ROUNDS rounds of a fresh process each
  # (layernorm), every family once each way, then the suite, the examples and every
  # family's cost (on, the default). The enqueue statistics and the host-speed probe this
  # session compared before it: `git show bb52565:benchmarks/device_session.sh`.
  for round in $(seq "${ROUNDS:-4}"); do
    for tie in off on; do
      flag=""
      [ $tie = off ] && flag=--no-tie-break
      step 40 python3 benchmarks/gpu_short_calls.py "$OUT/short-$tie-$round" \
        --family layernorm --caller-only --keep-all $flag
    done
  done
  step 60 python3 benchmarks/gpu_short_calls.py "$OUT/all-off" --no-tie-break
  step 60 python3 benchmarks/gpu_short_calls.py "$OUT/all-on"
  tree_checks
  step 80 python3 benchmarks/gpu_family_costs.py --runs 3
  ;;
final24)
  # The session's last tree: the suite and the examples in every mode, every family's cost,
  # then the short calls twice (every family, the product's defaults).
  tree_checks
  step 80 python3 benchmarks/gpu_family_costs.py --runs 3
  step 60 python3 benchmarks/gpu_short_calls.py "$OUT/short-1"
  step 60 python3 benchmarks/gpu_short_calls.py "$OUT/short-2"
  ;;
suite34)
  step 200 $P tests/gpu tests/unit/test_cuda_client.py -q -rs --durations=15
  step 40 $P example_kernels -q -W error
  step 60 $P example_kernels -n 2 --autotune -rfx -W error
  ;;
final28 | final31)
  # The session's last tree: the suite and the examples in every mode, every family's cost,
  # the short calls once (every family), then ROUNDS more rounds of the layernorm's (a
  # fresh process each, every tuning kept), the family the live misses were of; final31
  # then times the dispatch on this host's quiet CPU (Python 3.12; DESIGN section 8's 1.5x,
  # which `execute` misses on the workstation's Python 3.11).
  tree_checks
  step 80 python3 benchmarks/gpu_family_costs.py --runs 3
  step 60 python3 benchmarks/gpu_short_calls.py "$OUT/short-all"
  for round in $(seq "${ROUNDS:-4}"); do
    step 40 python3 benchmarks/gpu_short_calls.py "$OUT/short-ln-$round" \
      --family layernorm --caller-only --keep-all
  done
  if [ "$1" = final31 ]; then
    step 20 python3 benchmarks/dispatch.py --thread-time
    step 20 python3 benchmarks/dispatch.py --thread-time
  fi
  ;;
paired27)
  # The short calls with the new defaults (winners round by round, the host's slowdown
  # measured at a tie) against the last session's (each candidate's own score, a fixed
  # HOST_SPEEDUP of 1.5), ROUNDS rounds of a fresh process each (layernorm, every tuning
  # kept), every family once each way, then the suite, the examples and every family's cost.
  for round in $(seq "${ROUNDS:-4}"); do
    step 40 python3 benchmarks/gpu_short_calls.py "$OUT/short-new-$round" \
      --family layernorm --caller-only --keep-all
    step 40 python3 benchmarks/gpu_short_calls.py "$OUT/short-old-$round" \
      --family layernorm --caller-only --keep-all --no-paired --host-speedup 1.5
  done
  step 60 python3 benchmarks/gpu_short_calls.py "$OUT/all-new" --keep-all
  step 60 python3 benchmarks/gpu_short_calls.py "$OUT/all-old" --keep-all --no-paired \
    --host-speedup 1.5
  tree_checks
  step 80 python3 benchmarks/gpu_family_costs.py --runs 3
  ;;
trim27)
  # Why a 24-call loop reads less of warp_row's gap than a long loop: the anatomy of the
  # layernorm's eager calls (trimmed and untrimmed loops, paired), then the short calls
  # with the slowest quarter left out (the default) and kept (`--trimmed 0`), ROUNDS rounds
  # of a fresh process each (layernorm, every tuning kept).
  step 90 python3 benchmarks/gpu_eager_anatomy.py "$OUT/anatomy" --rounds 15 \
    --eager-calls 24 --family layernorm
  for round in $(seq "${ROUNDS:-3}"); do
    step 40 python3 benchmarks/gpu_short_calls.py "$OUT/short-trim-$round" \
      --family layernorm --caller-only --keep-all
    step 40 python3 benchmarks/gpu_short_calls.py "$OUT/short-mean-$round" \
      --family layernorm --caller-only --keep-all --trimmed 0
  done
  ;;
spells)
  # Whether a reference beside a caller-timed sample follows the host's slow spells: two
  # processes of SPELL_S seconds each (benchmarks/host_spells.py).
  for run in 1 2; do
    mkdir -p "$OUT/spells-$run"
    step 120 env OUT="$OUT/spells-$run" python3 benchmarks/host_spells.py --seconds "${SPELL_S:-45}"
  done
  ;;
speedup)
  # The tie-break's HOST_SPEEDUP at each of SPEEDUPS in turn, ROUNDS rounds of a fresh
  # process each (layernorm, every tuning kept), every family once each, then the suite.
  for round in $(seq "${ROUNDS:-5}"); do
    for speedup in ${SPEEDUPS:-1.25 1.5}; do
      step 40 python3 benchmarks/gpu_short_calls.py "$OUT/short-$speedup-$round" \
        --family layernorm --caller-only --keep-all --host-speedup "$speedup"
    done
  done
  for speedup in ${SPEEDUPS:-1.25 1.5}; do
    step 60 python3 benchmarks/gpu_short_calls.py "$OUT/all-$speedup" --keep-all \
      --host-speedup "$speedup"
  done
  step 90 $P tests/gpu tests/unit/test_cuda_client.py -q -rs
  ;;
race25|races|final25)
  # Open races of median scores sampled on (the default) and not (`--no-race`), ROUNDS
  # rounds of a fresh process each (layernorm, every tuning kept), every family once each
  # way, then the GPU suite; race25 adds the examples and every family's cost, final25
  # those and one more short-calls run with the product's defaults.
  for round in $(seq "${ROUNDS:-4}"); do
    for race in off on; do
      flag=""
      [ $race = off ] && flag=--no-race
      step 40 python3 benchmarks/gpu_short_calls.py "$OUT/short-$race-$round" \
        --family layernorm --caller-only --keep-all $flag
    done
  done
  step 60 python3 benchmarks/gpu_short_calls.py "$OUT/all-off" --no-race --keep-all
  step 60 python3 benchmarks/gpu_short_calls.py "$OUT/all-on" --keep-all
  if [ "$1" = race25 ]; then
    tree_checks
    step 80 python3 benchmarks/gpu_family_costs.py --runs 3
  elif [ "$1" = final25 ]; then
    tree_checks
    step 80 python3 benchmarks/gpu_family_costs.py --runs 3
    step 60 python3 benchmarks/gpu_short_calls.py "$OUT/short-1"
  else
    step 90 $P tests/gpu tests/unit/test_cuda_client.py -q -rs
  fi
  ;;
shortn2)
  # The short calls (every tuning's samples kept), then an update and RUNS runs of -n 2.
  step 130 python3 benchmarks/gpu_short_calls.py "$OUT/short" --keep-all
  n2_runs
  ;;
top)
  gate_rest "${CONDITION:-groups}"
  ;;
gate)
  for condition in ${CONDITIONS:-module xdist k groups suite}; do
    step "${STEP_LIMIT:-150}" env PYTHONPATH="$PLAIN" python3 benchmarks/gpu_gate_reliability.py --condition "$condition" \
      --runs "${GATE_RUNS:-12}" --workers 2
  done
  ;;
esac
exit 0
