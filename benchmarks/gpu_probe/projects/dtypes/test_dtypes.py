"""float16 and complex64 outputs, compared on the device (tune/device_compare.py) and, where
they differ, on the host with a readable message.

Expected (README, "rtol, atol"): the default rtol (1e-5) is finer than float16 holds, "as a
half-precision output's failure says (naming float16's eps, 0.000977)"; rtol=1e-3 passes
one-ulp differences (the group here uses 4e-3: two roundings each way may differ by 2
ulps). Integers compare exactly. Complex compares by value; a NaN in a
complex part is compared part by part on the host."""

import cupy as cp
import pytest

N = 1 << 20


@pytest.fixture(scope="module")
def h3():
    rng = cp.random.default_rng(0)
    return tuple(rng.random(N, dtype=cp.float32).astype(cp.float16) for _ in range(3))


def left_sum(a, b, c):
    return (a + b) + c


def right_sum(a, b, c):
    return a + (b + c)  # rounds differently in float16: 1-ulp differences


def left_sum_again(a, b, c):
    s = a + b
    return s + c  # the same operations as left_sum: bit-identical


@pytest.mark.autotune(candidates={"left": left_sum, "left_again": left_sum_again})
def test_f16_identical(candidate, h3):
    return candidate(*h3)


@pytest.mark.autotune(candidates={"left": left_sum, "right": right_sum})
def test_f16_default_rtol(candidate, h3):
    """EXPECTED: test_f16_default_rtol[right] FAILS naming float16's eps (0.000977)."""
    return candidate(*h3)


@pytest.mark.autotune(candidates={"left": left_sum, "right": right_sum}, rtol=4e-3)
def test_f16_rtol_loose(candidate, h3):
    """Two roundings each way may differ by up to 2 ulps (0.00195 relative): rtol=4e-3."""
    return candidate(*h3)


@pytest.fixture(scope="module")
def c2():
    rng = cp.random.default_rng(1)

    def one():
        return (rng.random(N, dtype=cp.float32) + 1j * rng.random(N, dtype=cp.float32)).astype(
            cp.complex64
        )

    return one(), one()


def cmul(x, y):
    return x * y


def cmul_parts(x, y):
    re = x.real * y.real - x.imag * y.imag
    im = x.real * y.imag + x.imag * y.real
    return (re + 1j * im).astype(cp.complex64)


def cmul_conj(x, y):
    return x * cp.conj(y)  # wrong


@pytest.mark.autotune(
    candidates={"cmul": cmul, "cmul_parts": cmul_parts, "cmul_conj": cmul_conj},
    rtol=1e-5,
    atol=1e-5,
)
def test_complex64(candidate, c2):
    """EXPECTED: test_complex64[cmul_conj] FAILS (largest errors, first bad index); the others pass."""
    return candidate(*c2)


def with_nan_imag(x, y):
    out = x * y
    out[0] = complex(float("nan"), 1.0)
    return out


def with_nan_imag_other(x, y):
    out = x * y
    out[0] = complex(float("nan"), 2.0)  # NaN real part, but another imaginary part
    return out


@pytest.mark.autotune(candidates={"nan_1j": with_nan_imag, "nan_2j": with_nan_imag_other})
def test_complex_nan_parts(candidate, c2):
    """EXPECTED: test_complex_nan_parts[nan_2j] FAILS: README says a complex NaN compares
    part by part (nan+1j against nan+2j differs)."""
    return candidate(*c2)


@pytest.mark.autotune(
    candidates={
        "f16": lambda a, b, c: (a * 2).astype(cp.float16),
        "f32": lambda a, b, c: (a * 2).astype(cp.float32),
    }
)
def test_dtype_mismatch(candidate, h3):
    """EXPECTED: test_dtype_mismatch[f32] FAILS with 'dtype differs: expected float16, got float32'."""
    return candidate(*h3)
