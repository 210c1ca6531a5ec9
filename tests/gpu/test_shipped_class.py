"""A shipped cache tuned on another GPU of the same compute capability serves this GPU."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_autotune import AutotuneConfig, LocalTuner, TunableSet
from pytest_autotune.backends import cuda
from pytest_autotune.tune.cache import PersistentCache, PersistentCacheKey, PersistentCacheValue
from pytest_autotune.tune.device_class import device_class
from pytest_autotune.tune.key import stable_key


def test_a_gpu_class_is_its_compute_capability_and_its_size_its_sm_count() -> None:
    client = cuda(0)
    found = device_class(client.device_id, client.fingerprint())
    assert found is not None
    assert found.name == f"cuda-sm{client.fingerprint()['compute_capability']}"
    assert found.size == client.sm_count


def test_a_sibling_gpus_shipped_winner_is_served_untimed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("platformdirs", reason="the user cache directory needs platformdirs")
    client = cuda(0)
    fingerprint = client.fingerprint()
    package = tmp_path / "site" / "gpu_shipping_lib"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))

    calls: dict[str, int] = {"first": 0, "second": 0}

    def make(name: str) -> Any:
        def fn(n: int) -> str:
            calls[name] += 1
            return name

        return fn

    tunables = TunableSet.of(lambda n: n, {"first": make("first"), "second": make("second")})
    sibling = "cuda-sibling-of-this-gpu"
    shipped = PersistentCache(package / ".autotune" / sibling / "gpu.ops.json")
    shipped.load()
    shipped.save(
        {
            PersistentCacheKey(stable_key(7), tunables.checksum): PersistentCacheValue(
                key=7, fastest_index=1, fastest_name="second", results=()
            )
        },
        device={"id": sibling, "fingerprint": {**fingerprint, "sm_count": client.sm_count + 2}},
    )

    local = LocalTuner("gpu.ops", AutotuneConfig(), package="gpu_shipping_lib")
    assert local.execute(client.device_id, client, tunables, (7,)) == "second"
    assert calls == {"first": 0, "second": 1}
    assert not (tmp_path / "xdg").exists()
