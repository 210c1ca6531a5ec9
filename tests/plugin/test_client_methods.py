"""A `pytest_autotune_client` hook's client whose method raises or returns what the
`Client` protocol does not allow: each test of its group fails with one line naming the
method, the group is an ERROR in the summary, and an update writes no cache file."""

from __future__ import annotations

import pytest

from tests.plugin.harness import run

TESTS = """
import pytest
from conftest import spin

def fast(n):
    spin(100e-6)
    return n * 2

def slow(n):
    spin(300e-6)
    return n * 2

@pytest.mark.autotune(candidates={"fast": fast, "slow": slow})
def test_pair(candidate):
    return candidate(1)
"""

BROKEN = [
    pytest.param(
        "fingerprint",
        "raise RuntimeError('no sensors')",
        "fingerprint() raised RuntimeError: no sensors",
        id="fingerprint-raises",
    ),
    pytest.param(
        "peaks",
        "return None",
        "peaks() returned None, not a Peaks: return pytest_autotune.backends.Peaks(",
        id="peaks-none",
    ),
    pytest.param(
        "peaks",
        "return {'copy': 1e9}",
        "peaks() returned {'copy': 1000000000.0}, not a Peaks: ",
        id="peaks-dict",
    ),
    pytest.param(
        "peaks",
        "raise RuntimeError('probe failed')",
        "peaks() raised RuntimeError: probe failed",
        id="peaks-raises",
    ),
]


def _break(pytester: pytest.Pytester, method: str, body: str) -> None:
    """The fake client's `method` replaced by one whose body is `body`."""
    conftest = pytester.path / "conftest.py"
    conftest.write_text(
        conftest.read_text()
        + f"\n\ndef _broken_{method}(self):\n    {body}\n\n"
        + f"FakeClient.{method} = _broken_{method}\n"
    )


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["one-process", "xdist"])
@pytest.mark.parametrize(("method", "body", "said"), BROKEN)
def test_a_clients_method_that_fails_is_one_line_naming_it_and_writes_nothing(
    autotune_pytester: pytest.Pytester,
    method: str,
    body: str,
    said: str,
    workers: tuple[str, ...],
) -> None:
    # A peaks() of None or a dict failed in the roofline ("'NoneType' object has no
    # attribute 'memory_roof'"), and a peaks() or fingerprint() that raised, with a
    # traceback through pytest_autotune's frames; the group was then in no summary.
    if workers:
        pytest.importorskip("xdist")
    _break(autotune_pytester, method, body)
    autotune_pytester.makepyfile(test_dev=TESTS)
    result = run(autotune_pytester, "--autotune-update", *workers)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(failed=2)
    output = result.stdout.str()
    line = f"device 'cpu-fake-1t': its client's {said}"
    assert f"test_dev.py::test_pair: {line}" in output
    assert "Traceback" not in output and "pytest_autotune/" not in output, output
    assert "candidate 'fast' raised" not in output
    rows = [row.split() for row in result.outlines if row.startswith("test_dev.py::test_pair ")]
    assert rows and rows[0][-1] == "ERROR", output
    failures = result.outlines[result.outlines.index("gate failures:") :]
    assert any(row.strip().startswith(line) for row in failures), output
    assert not list((autotune_pytester.path / ".autotune").rglob("*.json"))
