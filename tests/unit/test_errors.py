"""`AutotuneError` as a value: what it keeps when it travels between processes."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from pytest_autotune import AutotuneError, AutotuneErrorKind
from pytest_autotune.time_limit import TimeLimitExceeded
from pytest_autotune.tune.cache_format import DamagedCacheFile, NewerCacheFile


def test_an_autotune_error_survives_pickling_whole() -> None:
    # A pool's worker sends its errors back pickled: by an Exception's `args` (the message
    # alone) the message came back as the kind, which the error now refuses.
    error = AutotuneError(AutotuneErrorKind.NO_VALID_KERNEL_FOUND, "every candidate failed", "k")
    error.trace = "Traceback ..."
    copied = pickle.loads(pickle.dumps(error))
    assert copied == error
    assert (copied.kind, copied.trace, str(copied)) == (error.kind, error.trace, str(error))


@pytest.mark.parametrize(
    "error",
    [
        DamagedCacheFile(Path("/cache/cpu/t.json"), "not JSON"),
        NewerCacheFile(Path("/cache/cpu/t.json"), "schema_version 9"),
        TimeLimitExceeded("slow", 2.5),
    ],
    ids=lambda error: type(error).__name__,
)
def test_the_errors_made_of_several_values_survive_pickling(error: Exception) -> None:
    # Unpickled by their message alone: "missing 1 required positional argument".
    copied = pickle.loads(pickle.dumps(error))
    assert type(copied) is type(error)
    assert str(copied) == str(error)
    assert vars(copied) == vars(error)
