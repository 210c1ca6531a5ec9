"""Each group's winner median, fraction of its roof and the replay fixed cost its process
took off every sample, from records files (`--autotune-record`), one line per group per file:
a winner read faster than anywhere else by a constant shows beside the fixed cost of its
worker (issue 14, winners above their HBM roof under `-n 2`).

    python3 benchmarks/records_instrument.py run-1.jsonl run-2.jsonl ...
"""

from __future__ import annotations

import argparse
import statistics
import sys

from pytest_autotune.report.extra import RecordExtra
from pytest_autotune.tune.records import RecordError, read_records


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", metavar="RECORDS", help="a records file")
    args = parser.parse_args(argv)
    for path in args.paths:
        try:
            records = read_records(path)
        except RecordError as exc:  # its message names the file and what is wrong with it
            raise SystemExit(str(exc)) from None
        print(path)
        for record in records:
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
