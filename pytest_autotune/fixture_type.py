"""The `autotune` fixture's type, for a test that is type-checked (pytest-benchmark exports
`BenchmarkFixture` for the same reason): `def test_sum(autotune: AutotuneFixture) -> None`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

ReturnT = TypeVar("ReturnT")
"""What the set's candidates return, and so the call (`TunableSet[np.float32]`); a TypeVar
of its own, as this module is imported by every pytest run and imports no engine module."""

if TYPE_CHECKING:
    from pytest_autotune.tune.bounds import Thresholds, Work
    from pytest_autotune.tune.key import AutotuneLevel
    from pytest_autotune.tune.local import LocalTuner
    from pytest_autotune.tune.plain_numbers import RealNumber
    from pytest_autotune.tune.tunable_set import TunableSet


class AutotuneFixture(Protocol):
    """`autotune(tunables, *inputs, **options)`: check (plain pytest) or tune (with
    `--autotune`) a production `TunableSet` on the inputs, as the library's `execute` calls
    it, and return the winner's output (the reference's, in check mode). The options are
    the marker's, by keyword (README, "A production `TunableSet`: the `autotune` fixture"); a
    number may be a NumPy scalar (`rtol=np.finfo(np.float32).eps`), as the fixture reads it."""

    def __call__(
        self,
        tunables: TunableSet[ReturnT],
        /,
        *inputs: Any,
        work: Work | Callable[..., Work] | None = None,
        thresholds: Thresholds | None = None,
        reference: Callable[..., Any] | str | None = None,
        rtol: RealNumber | None = None,
        atol: RealNumber | None = None,
        max_regression: RealNumber | None = None,
        tuner: LocalTuner | str | None = None,
        check_output: bool = True,
        time_limit: RealNumber | None = None,
        level: AutotuneLevel | str | None = None,
    ) -> ReturnT: ...


__all__ = ["AutotuneFixture"]
