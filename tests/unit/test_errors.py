"""`AutotuneError` as a value: what it keeps when it travels between processes."""

from __future__ import annotations

import pickle

from pytest_autotune import AutotuneError, AutotuneErrorKind


def test_an_autotune_error_survives_pickling_whole() -> None:
    # A pool's worker sends its errors back pickled: by an Exception's `args` (the message
    # alone) the message came back as the kind, which the error now refuses.
    error = AutotuneError(AutotuneErrorKind.NO_VALID_KERNEL_FOUND, "every candidate failed", "k")
    error.trace = "Traceback ..."
    copied = pickle.loads(pickle.dumps(error))
    assert copied == error
    assert (copied.kind, copied.trace, str(copied)) == (error.kind, error.trace, str(error))
