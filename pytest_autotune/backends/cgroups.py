"""The limits this process's Linux control group (cgroup v1 or v2) sets: the CPUs' worth of
time it may use and the bytes of memory, read from `/proc/self/cgroup` and the cgroup mount;
None on another OS."""

from __future__ import annotations

from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")


def cpu_quota(proc: Path = Path("/proc"), cgroup_root: Path = CGROUP_ROOT) -> float | None:
    """The CPUs' worth of time this process's cgroup may use (its quota over its period),
    the least of its group's and its ancestors' as far as the mount shows them (inside a
    container, its own group is the mount's root); None where none is set or no cgroup
    reads (another OS)."""
    found = [
        quota
        for v2, group in _cgroup_folders("cpu", proc, cgroup_root)
        if (quota := _v2_quota(group) if v2 else _v1_quota(group)) is not None
    ]
    return min(found) if found else None


def memory_limit(proc: Path = Path("/proc"), cgroup_root: Path = CGROUP_ROOT) -> int | None:
    """The bytes of memory this process's cgroup may use (cgroup v2 `memory.max`, v1
    `memory.limit_in_bytes`), the least of its group's and its ancestors'; None where none
    is set or no cgroup reads."""
    found = []
    for v2, group in _cgroup_folders("memory", proc, cgroup_root):
        fields = _read_fields(group / ("memory.max" if v2 else "memory.limit_in_bytes"))
        if len(fields) == 1 and fields[0].isdigit() and int(fields[0]) > 0:
            found.append(int(fields[0]))
    return min(found) if found else None


def _cgroup_folders(controller: str, proc: Path, cgroup_root: Path) -> list[tuple[bool, Path]]:
    """The folders of this process's cgroup and its ancestors that hold `controller`'s
    files, each with whether it is cgroup v2's, from `<proc>/self/cgroup`: v2 mounted at
    the root or, on a hybrid host, at `unified`; v1 at the controller's own mount."""
    try:
        lines = (proc / "self" / "cgroup").read_text().splitlines()
    except (OSError, ValueError):
        return []
    folders = []
    for line in lines:
        _, _, rest = line.partition(":")
        controllers, _, group = rest.partition(":")
        parts = [part for part in group.strip().split("/") if part]
        if controllers == "":
            mounts, v2 = [cgroup_root, cgroup_root / "unified"], True
        elif controller in controllers.split(","):
            mounts, v2 = [cgroup_root / controllers, cgroup_root / controller], False
        else:
            continue
        for mount in mounts:
            folders += [(v2, mount.joinpath(*parts[:depth])) for depth in range(len(parts), -1, -1)]
    return folders


def _v2_quota(group: Path) -> float | None:
    """`cpu.max`: `<quota> <period>`, or `max <period>` for none."""
    fields = _read_fields(group / "cpu.max")
    if len(fields) != 2 or fields[0] == "max":
        return None
    return _ratio(fields[0], fields[1])


def _v1_quota(group: Path) -> float | None:
    """`cpu.cfs_quota_us` (-1 for none) over `cpu.cfs_period_us`."""
    quota, period = (
        _read_fields(group / "cpu.cfs_quota_us"),
        _read_fields(group / "cpu.cfs_period_us"),
    )
    if len(quota) != 1 or len(period) != 1:
        return None
    return _ratio(quota[0], period[0])


def _read_fields(path: Path) -> list[str]:
    try:
        return path.read_text().split()
    except (OSError, ValueError):
        return []


def _ratio(quota: str, period: str) -> float | None:
    if not (quota.isdigit() and period.isdigit()) or int(quota) == 0 or int(period) == 0:
        return None
    return int(quota) / int(period)
