"""Judge the sessions `gate_reliability.py --keep DIR` kept again, under a variant of the
rules (issue 9): what a change of `gate.conditions` would have said about the same
measurements, before it is made.

Each kept session's records (`DIR/runs/NNN-{unchanged,slowed}.jsonl`) hold every group's
final measurement (the re-measurement where there was one), its calibration read and the
CPUs' contention; the project's cache files (`DIR/.autotune`) hold the baselines. Each is
judged by `gate.judge` as it stands (which should give the recorded verdicts), and again
with the measurement's load average or stall share left out:

    PYTHONPATH=. python3 benchmarks/rejudge.py DIR [--without load|pressure|both]

Prints, per arm and group, the verdicts as recorded, as re-judged now, and under the
variant. An estimate, not the gate: the re-measurement after a suspected failure is not
modelled (the record keeps only the last measurement), and the peaks do not enter a CPU
comparison.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from pytest_autotune.gate import Baseline, Calibration, Measurement, judge
from pytest_autotune.tune.cache import PersistentCache
from pytest_autotune.tune.cache_names import cache_path
from pytest_autotune.tune.key import serialize_key_json


def measurement(extra: dict[str, Any]) -> Measurement:
    calibration = extra.get("calibration")
    contention = extra.get("contention") or {}
    return Measurement(
        tuple(s / 1e9 for s in extra["winner_samples_ns"]),
        Calibration.from_json(calibration) if calibration else None,
        load=contention.get("load"),
        pressure=contention.get("pressure"),
        helpers=contention.get("helpers"),
    )


def baseline_of(root: Path, record: dict[str, Any]) -> Baseline | None:
    """The baseline the gate judged a record against: its tuner's cache file of its
    device, the entry of its key and candidate list."""
    cache = PersistentCache(cache_path(root / ".autotune", record["device_id"], record["tuner"]))
    return Baseline.find(
        cache.load(),
        serialize_key_json(record["key"]),
        record["checksum"],
        device=cache.device(),
        metadata=cache.metadata(),
        source=str(cache.path),
    )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", type=Path)
    parser.add_argument("--without", choices=("load", "pressure", "both"), default="load")
    args = parser.parse_args(argv)
    drop = {"load": ("load",), "pressure": ("pressure",), "both": ("load", "pressure")}
    counts: dict[tuple[str, str], collections.Counter[str]] = collections.defaultdict(
        collections.Counter
    )
    for path in sorted((args.dir / "runs").glob("[0-9]*-*.jsonl")):
        if path.name.endswith(".diag.jsonl"):
            continue
        arm = path.stem.split("-", 1)[1]
        for line in path.read_text().splitlines():
            record = json.loads(line)
            extra = record["extra"]
            group = extra["group"].split("::", 1)[1]
            baseline = baseline_of(args.dir, record)
            current = measurement(extra)
            variant = dataclasses.replace(current, **dict.fromkeys(drop[args.without]))
            now, then = (
                judge(m, baseline, device_id=record["device_id"], checksum=record["checksum"])
                for m in (current, variant)
            )
            row = counts[(arm, group)]
            row[f"recorded {extra['verdict']}"] += 1
            row[f"now {now.verdict.value}"] += 1
            row[f"without {args.without} {then.verdict.value}"] += 1
    for (arm, group), row in sorted(counts.items()):
        print(f"{arm:9s} {group:15s} " + ", ".join(f"{k}: {v}" for k, v in sorted(row.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
