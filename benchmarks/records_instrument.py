"""Each group's winner median, fraction of its roof and the replay fixed cost its process
took off every sample, from records files (`--autotune-record`), one line per group per file:
a winner read faster than anywhere else by a constant shows beside the fixed cost of its
worker (issue 14, winners above their HBM roof under `-n 2`).

    python3 benchmarks/records_instrument.py run-1.jsonl run-2.jsonl ...
"""

from __future__ import annotations

import statistics
import sys

from pytest_autotune.report.extra import RecordExtra
from pytest_autotune.tune.records import read_records


def main(paths: list[str]) -> int:
    for path in paths:
        print(path)
        for record in read_records(path):
            extra = RecordExtra.from_json(record.extra)
            samples = extra.winner_seconds
            median = statistics.median(samples) * 1e6 if samples else float("nan")
            roof = extra.fraction_of_roof
            fixed = {
                k.removesuffix("_ns"): v / 1e3 if k.endswith("_ns") else v
                for k, v in (extra.instrument or {}).items()
            }
            print(
                f"  {(extra.group or '?').split('::')[-1]:40s} {extra.measured or '-':22s}"
                f" {median:8.2f} us  {roof * 100 if roof is not None else float('nan'):6.1f}%"
                f"  fixed {fixed}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
