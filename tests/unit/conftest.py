"""What the engine's tests share beyond tests/conftest.py."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_autotune.tune import shared_memory


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
