"""The cost of saving one new key into a cache file that already holds N entries.

Side by side in one run, each saving through one long-lived `PersistentCache`, as
`LocalTuner`'s tuner does, one key at a time:

- "before": the cache code of `--before` (default the commit before issue 15: every save
  re-reads, re-validates and re-renders the whole file);
- "stamp": the cache code of `--stamp` (default the commit before the journal: the file
  this object last read or wrote is recognised by its stamp and not parsed again, each
  entry's text is rendered once, but every save still writes the whole file);
- "whole": the working tree's whole-file save (what `--autotune-update` does);
- "journal": the working tree's save with `journal=True` (what `LocalTuner` does now: the
  entry is appended to `<file>.journal`, the file rewritten when the journal outgrows half
  of it).

"journal, folds" saves N new keys (enough to fold the journal into the file at least once)
and gives the mean, folds included; "load" is a fresh reader's load of the file and its
journal after the saves (what every other process pays once), "load" after the whole-file
saves and "+journal" after the journaled ones.

    python benchmarks/save_cost.py OUT_DIR [--before REV] [--stamp REV] [--sizes 300 1000 3000]
        [--keys 10]

Writes OUT_DIR/save_cost.json and prints ms per save. CPU only; ~1-2 minutes.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from pytest_autotune.tune.benchmark import AutotuneOutcome  # noqa: E402
from pytest_autotune.tune.key import key_to_json, stable_key  # noqa: E402

BEFORE = "47a0d5f"
STAMP = "727ec8a"


def load(revision: str | None, scratch: Path) -> ModuleType:
    if revision is None:
        path = REPO / "pytest_autotune" / "tune" / "cache.py"
    else:
        path = scratch / f"cache_{revision}.py"
        path.write_text(
            subprocess.run(
                ["git", "-C", str(REPO), "show", f"{revision}:pytest_autotune/tune/cache.py"],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
        )
    spec = importlib.util.spec_from_file_location(f"cache_{revision or 'now'}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def entry(cache: ModuleType, i: int) -> tuple[object, object]:
    """An entry like a tuned one: three candidates with ten samples each."""
    results = tuple(
        AutotuneOutcome(name, j, tuple(1e-4 * (j + 1) * (1 + k / 100) for k in range(10)))
        for j, name in enumerate(("tiled", "wide", "naive"))
    )
    key = (i, "float32")
    value = cache.PersistentCacheValue(key_to_json(key), 0, "tiled", results)
    return cache.PersistentCacheKey(stable_key(key), "c0ffee"), value


def per_save(
    cache: ModuleType, folder: Path, size: int, keys: int, **options: bool
) -> tuple[float, float]:
    """Seconds per save of one new key, and of a fresh reader's load afterwards."""
    path = folder / "tuner.json"
    cache.PersistentCache(path).save(dict(entry(cache, i) for i in range(size)))
    persistent = cache.PersistentCache(path, **options)
    persistent.load()
    began = time.perf_counter()
    for i in range(size, size + keys):
        persistent.save(dict([entry(cache, i)]))
    saved = time.perf_counter()
    assert len(cache.PersistentCache(path).load()) == size + keys
    return (saved - began) / keys, time.perf_counter() - saved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--before", default=BEFORE)
    parser.add_argument("--stamp", default=STAMP)
    parser.add_argument("--sizes", type=int, nargs="+", default=[300, 1000, 3000])
    parser.add_argument("--keys", type=int, default=10)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    with tempfile.TemporaryDirectory() as name:
        scratch = Path(name)
        now = load(None, scratch)
        runs: dict[str, tuple[ModuleType, dict[str, bool]]] = {
            "before": (load(args.before, scratch), {}),
            "stamp": (load(args.stamp, scratch), {}),
            "whole": (now, {}),
            "journal": (now, {"journal": True}),
        }
        print(
            f"{'entries':>8} {'before ms':>10} {'stamp ms':>9} {'whole ms':>9} {'journal ms':>11}"
            f" {'folds ms':>9} {'stamp/journal':>14} {'load ms':>8} {'+journal':>9}"
        )
        for size in args.sizes:
            row: dict[str, float] = {"entries": size}
            for impl, (module, options) in runs.items():
                folder = scratch / f"{impl}-{size}"
                folder.mkdir()
                row[impl], row[f"{impl}_load"] = per_save(
                    module, folder, size, args.keys, **options
                )
            folder = scratch / f"folds-{size}"
            folder.mkdir()
            row["journal_folds"], _ = per_save(now, folder, size, size, journal=True)
            rows.append(row)
            print(
                f"{size:>8} {row['before'] * 1e3:>10.1f} {row['stamp'] * 1e3:>9.1f}"
                f" {row['whole'] * 1e3:>9.1f} {row['journal'] * 1e3:>11.2f}"
                f" {row['journal_folds'] * 1e3:>9.2f} {row['stamp'] / row['journal']:>13.0f}x"
                f" {row['whole_load'] * 1e3:>8.1f} {row['journal_load'] * 1e3:>9.1f}",
                flush=True,
            )
    (args.out / "save_cost.json").write_text(
        json.dumps(
            {"before": args.before, "stamp": args.stamp, "keys": args.keys, "rows": rows},
            indent=2,
        )
        + "\n"
    )


if __name__ == "__main__":
    main()
