"""Roofline fit (issue 14): every example's fraction of its cache-aware roof, over several
`pytest example_kernels --autotune` sessions, each a fresh process that probes its own peaks.

    PYTHONPATH=. python3 benchmarks/roof_fractions.py [--sessions N] [--out DIR]

Prints, per group, the roof that bound it (the memory level its working set fits in, or the
compute unit) and the smallest, median and largest fraction over the sessions. Target: none
above 100%. Exit code 0 when met. On a GPU the same script runs the CuPy examples.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from pytest_autotune.tune.records import read_records


def session(records: Path) -> int:
    command = [
        sys.executable, "-m", "pytest", "example_kernels", "--autotune", "-q",
        "-p", "no:cacheprovider", f"--autotune-record={records}",
    ]  # fmt: skip
    return subprocess.run(command, capture_output=True, check=False).returncode


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=5)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    fractions: dict[str, list[float]] = defaultdict(list)
    roofs: dict[str, set[str]] = defaultdict(set)
    codes = []
    with tempfile.TemporaryDirectory() as folder:
        for index in range(args.sessions):
            records = Path(folder) / f"records{index}.jsonl"
            codes.append(session(records))
            for record in read_records(records):
                extra = record.extra
                group = f"{extra.get('group', record.tuner)} [{record.key}]"
                if extra.get("fraction_of_roof") is not None:
                    fractions[group].append(float(extra["fraction_of_roof"]))
                    roofs[group].add(str(extra.get("roof")))
    print(f"{args.sessions} sessions, pytest exit codes {codes}")
    print(f"{'group':<64} {'roof':<16} {'min':>7} {'median':>7} {'max':>7}")
    worst = 0.0
    table = {}
    for group in sorted(fractions):
        values = fractions[group]
        roof = ",".join(sorted(roofs[group]))
        worst = max(worst, *values)
        table[group] = {"roof": roof, "fractions": values}
        print(
            f"{group:<64} {roof:<16} {min(values):7.1%} {statistics.median(values):7.1%}"
            f" {max(values):7.1%}"
        )
    met = worst <= 1.0
    print(f"largest fraction of roof: {worst:.1%} ({'met' if met else 'MISSED'}: none above 100%)")
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "roof_fractions.json").write_text(json.dumps(table, indent=2) + "\n")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
