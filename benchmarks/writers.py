"""Writers of one cache file at once, and writers killed with SIGKILL: what is lost.

Runs each scenario with the cache code of a given git revision ("before", default the
commit before issue 15's fixes), with the working tree's whole-file saves ("after") and
with its journaled saves ("journal": one long-lived `PersistentCache(journal=True)` per
process, as `LocalTuner` saves, with the fold threshold at zero so that the journal is
folded into the file whenever it outgrows half of it, many times a run), side by side:

- same TMPDIR: P processes, each saving W new keys one save at a time;
- different TMPDIRs: the same, each process with a TMPDIR of its own;
- two OS users: half the processes as root, half as a second user (created with useradd
  when missing; needs root), one shared TMPDIR, the cache folder writable by both;
- kill -9: R rounds of four writers saving in a loop, one killed with SIGKILL at a random
  moment each round; then every key a writer reported saved must be in the file, the
  file must parse, and the next save must go through (no stuck lock).

For each: entries lost, corrupt files, writer errors, temporary files left behind. What is
on disk is read by this script's own reading of the documented format (the file's
entries, then the journal's whole lines if its first line names the file's SHA-256), not
by the code under test.

    python benchmarks/writers.py OUT_DIR [--before REV] [--quick] [--impls before after journal]

Writes OUT_DIR/writers.json and prints a table. CPU only; about a minute (--quick: 15 s).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pwd
import random
import shutil
import signal
import site
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BEFORE = "47a0d5f"
SECOND_USER = "autotune-bench"

WORKER = r"""
import importlib.util, sys, traceback
from pathlib import Path
module_path, cache_file = sys.argv[1], Path(sys.argv[2])
prefix, count, mode = sys.argv[3], int(sys.argv[4]), sys.argv[5]
spec = importlib.util.spec_from_file_location("bench_cache", module_path)
cache = importlib.util.module_from_spec(spec)
sys.modules["bench_cache"] = cache
spec.loader.exec_module(cache)
from pytest_autotune.tune.benchmark import AutotuneOutcome
from pytest_autotune.tune.key import stable_key
if mode == "journal":
    from pytest_autotune.tune import journal
    journal.MIN_COMPACT_BYTES = 0
    kept = cache.PersistentCache(cache_file, journal=True)
i = 0
while count < 0 or i < count:
    key = f"{prefix}-{i}"
    value = cache.PersistentCacheValue(key, 0, "a", (AutotuneOutcome("a", 0, (1e-3, 1.1e-3)),))
    try:
        pk = cache.PersistentCacheKey(stable_key(key), "c")
        (kept if mode == "journal" else cache.PersistentCache(cache_file)).save({pk: value})
    except BaseException as error:
        print("ERROR", type(error).__name__, str(error).replace("\n", " ")[:200], flush=True)
    else:
        print("SAVED", stable_key(key), flush=True)
    i += 1
"""


IMPLS = ("before", "after", "journal")


def cache_module(revision: str | None, scratch: Path) -> Path:
    """A copy of cache.py at `revision` (None: the working tree's), loadable by path."""
    if revision is None:
        return REPO / "pytest_autotune" / "tune" / "cache.py"
    text = subprocess.run(
        ["git", "-C", str(REPO), "show", f"{revision}:pytest_autotune/tune/cache.py"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    path = scratch / f"cache_{revision}.py"
    path.write_text(text)
    path.chmod(0o644)
    return path


def python_for(user: str | None) -> list[str]:
    """The interpreter a user can run, with this one's packages on its path."""
    if user is None:
        return [sys.executable]
    for candidate in (sys.executable, "/usr/bin/python3", shutil.which("python3") or ""):
        if not candidate:
            continue
        probe = subprocess.run(
            [
                "runuser",
                "-u",
                user,
                "--",
                "env",
                f"PYTHONPATH={pythonpath()}",
                candidate,
                "-c",
                "import filelock, pytest_autotune.tune.benchmark",
            ],
            capture_output=True,
            check=False,
        )
        if probe.returncode == 0:
            return ["runuser", "-u", user, "--", candidate]
    raise SystemExit(f"no python that user {user} can run with this one's packages")


def pythonpath() -> str:
    return os.pathsep.join([str(REPO), *site.getsitepackages()])


def ensure_user() -> str | None:
    if os.geteuid() != 0 or shutil.which("runuser") is None:
        return None
    try:
        pwd.getpwnam(SECOND_USER)
    except KeyError:
        subprocess.run(["useradd", "--no-create-home", SECOND_USER], check=True)
    return SECOND_USER


def start(
    module: Path,
    cache_file: Path,
    prefix: str,
    count: int,
    tmpdir: Path,
    user: str | None,
    mode: str,
) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": pythonpath(), "TMPDIR": str(tmpdir)}
    command = [*python_for(user)]
    if user is not None:
        command[-1:-1] = ["env", f"PYTHONPATH={env['PYTHONPATH']}", f"TMPDIR={tmpdir}"]
    return subprocess.Popen(
        [*command, "-c", WORKER, str(module), str(cache_file), prefix, str(count), mode],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def on_disk(cache_file: Path) -> set[str]:
    """The keys of the file and of the whole lines of a journal that extends it."""
    raw = cache_file.read_bytes()
    entries = json.loads(raw)["entries"]
    journal = cache_file.with_name(cache_file.name + ".journal")
    if journal.exists():
        lines = journal.read_bytes().split(b"\n")[:-1]  # the last, if torn, is not whole
        if lines and json.loads(lines[0])["journal_of"] == hashlib.sha256(raw).hexdigest():
            entries += [json.loads(line) for line in lines[1:]]
    return {json.dumps(e["key"], sort_keys=True, separators=(",", ":")) for e in entries}


def outcome(cache_file: Path, saved: set[str], errors: list[str]) -> dict[str, object]:
    try:
        keys = on_disk(cache_file)
        corrupt = False
    except (OSError, ValueError, KeyError):
        keys, corrupt = set(), True
    temporaries = [p.name for p in cache_file.parent.iterdir() if p.name.endswith(".tmp")]
    return {
        "saved": len(saved),
        "lost": len(saved - keys),
        "corrupt": corrupt,
        "errors": len(errors),
        "first_error": errors[0] if errors else None,
        "temporaries_left": len(temporaries),
    }


def concurrent(
    module: Path,
    root: Path,
    processes: int,
    writes: int,
    tmpdirs: str,
    user: str | None,
    mode: str,
) -> dict[str, object]:
    folder = root / "cache"
    folder.mkdir(parents=True)
    folder.chmod(0o777)
    cache_file = folder / "tuner.json"
    shared = root / "tmp"
    shared.mkdir()
    shared.chmod(0o1777)
    workers = []
    began = time.perf_counter()
    for p in range(processes):
        tmpdir = shared if tmpdirs == "same" else root / f"tmp{p}"
        tmpdir.mkdir(exist_ok=True)
        tmpdir.chmod(0o1777)
        as_user = user if (user is not None and p % 2 == 1) else None
        workers.append(start(module, cache_file, f"p{p}", writes, tmpdir, as_user, mode))
    saved: set[str] = set()
    errors: list[str] = []
    for worker in workers:
        out, _ = worker.communicate(timeout=600)
        for line in out.splitlines():
            kind, _, rest = line.partition(" ")
            if kind == "SAVED":
                saved.add(rest)
            else:
                errors.append(line)
    result = outcome(cache_file, saved, errors)
    result["seconds"] = round(time.perf_counter() - began, 2)
    result["attempted"] = processes * writes
    return result


def killed(module: Path, root: Path, rounds: int, seed: int, mode: str) -> dict[str, object]:
    rng = random.Random(seed)
    folder = root / "cache"
    folder.mkdir(parents=True)
    cache_file = folder / "tuner.json"
    saved: set[str] = set()
    errors: list[str] = []
    corrupt_rounds = lost_rounds = stuck = 0
    for r in range(rounds):
        workers = [start(module, cache_file, f"r{r}w{w}", -1, root, None, mode) for w in range(4)]
        victim = workers[rng.randrange(4)]
        assert victim.stdout is not None
        first = victim.stdout.readline()  # saving has begun: kill it within a few saves
        if first.startswith("SAVED "):
            saved.add(first.split(" ", 1)[1].strip())
        time.sleep(rng.uniform(0.0, 0.3))
        victim.send_signal(signal.SIGKILL)
        for worker in workers:
            if worker is not victim:
                worker.terminate()
        for worker in workers:
            out, _ = worker.communicate(timeout=120)
            for line in out.splitlines():
                kind, _, rest = line.partition(" ")
                if kind == "SAVED":
                    saved.add(rest)
                elif kind == "ERROR":
                    errors.append(line)
        check = outcome(cache_file, saved, [])
        corrupt_rounds += bool(check["corrupt"])
        lost_rounds += bool(check["lost"])
        after = start(module, cache_file, f"after{r}", 1, root, None, mode)
        try:
            out, _ = after.communicate(timeout=30)
            if "SAVED" not in out:
                errors.append(out.strip())
        except subprocess.TimeoutExpired:
            after.kill()
            stuck += 1
    result = outcome(cache_file, saved, errors)
    result.update(
        rounds=rounds,
        rounds_corrupt=corrupt_rounds,
        rounds_losing=lost_rounds,
        next_save_stuck=stuck,
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--before", default=BEFORE)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--impls", nargs="+", choices=IMPLS, default=list(IMPLS))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    processes, writes, rounds = (4, 10, 4) if args.quick else (8, 30, 20)
    user = ensure_user()
    results: dict[str, dict[str, object]] = {}
    with tempfile.TemporaryDirectory(prefix="writers-") as scratch_name:
        scratch = Path(scratch_name)
        scratch.chmod(0o755)
        before, now = cache_module(args.before, scratch), cache_module(None, scratch)
        modules = {"before": before, "after": now, "journal": now}
        scenarios = [
            ("same TMPDIR", lambda m, d, j: concurrent(m, d, processes, writes, "same", None, j)),
            (
                "different TMPDIRs",
                lambda m, d, j: concurrent(m, d, processes, writes, "each", None, j),
            ),
        ]
        if user is not None:
            scenarios.append(
                (
                    "two OS users",
                    lambda m, d, j: concurrent(m, d, processes, writes, "same", user, j),
                )
            )
        scenarios.append(("kill -9", lambda m, d, j: killed(m, d, rounds, seed=15, mode=j)))
        for name, scenario in scenarios:
            for impl in args.impls:
                folder = scratch / f"{name.replace(' ', '_')}-{impl}"
                folder.mkdir()
                folder.chmod(0o777)
                mode = "journal" if impl == "journal" else "whole"
                results[f"{name} / {impl}"] = scenario(modules[impl], folder, mode)
                row = json.dumps(results[f"{name} / {impl}"])
                print(f"{name:18} {impl:7} {row}", flush=True)
    meta = {
        "processes": processes,
        "writes_each": writes,
        "kill_rounds": rounds,
        "before": args.before,
        "second_user": user,
    }
    (args.out / "writers.json").write_text(
        json.dumps({"meta": meta, "results": results}, indent=2) + "\n"
    )
    print(json.dumps(meta))


if __name__ == "__main__":
    main()
