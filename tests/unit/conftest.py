"""What the engine's tests share beyond tests/conftest.py."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_autotune.tune import comparison, shared_memory


@pytest.fixture
def addresses_read(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The ids of the values whose memory `shared_memory.address_range` reads, one per read:
    a copy of many inputs must read only the addresses it needs."""
    read: list[int] = []
    measured = shared_memory.address_range

    def address_range(value: Any) -> tuple[int, int]:
        read.append(id(value))
        return measured(value)

    monkeypatch.setattr(shared_memory, "address_range", address_range)
    return read


@pytest.fixture
def compare_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """The arguments of each element-wise comparison (`comparison._compare`) made, one entry
    per call: a long list or dict of numbers, strings or flags is compared at once."""
    calls: list[tuple[Any, ...]] = []
    compare = comparison._compare

    def counting(*args: Any, **kwargs: Any) -> list[str]:
        calls.append(args)
        return compare(*args, **kwargs)

    monkeypatch.setattr(comparison, "_compare", counting)
    return calls
