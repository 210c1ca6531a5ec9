"""The CUDA client where there is no CUDA: the package imports, and `cuda()` says why not."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pytest_autotune.backends import CudaUnavailableError, cuda
from pytest_autotune.backends.cuda import device_id_from


def test_importing_the_package_and_the_examples_imports_no_cupy() -> None:
    code = (
        "import sys, pytest_autotune, pytest_autotune.backends\n"
        "import example_kernels.saxpy, example_kernels.sum, example_kernels.transpose\n"
        "import example_kernels.softmax, example_kernels.matmul\n"
        "assert 'cupy' not in sys.modules, 'cupy was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_cuda_without_cupy_names_the_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cupy", None)  # makes `import cupy` raise ImportError
    with pytest.raises(CudaUnavailableError, match=r"pytest-autotune\[cuda12\].*\[cuda13\]"):
        cuda(cold_l2=False)


@pytest.mark.parametrize(
    ("name", "device_id"),
    [
        ("NVIDIA H200", "cuda-nvidia-h200"),
        ("NVIDIA H100 80GB HBM3", "cuda-nvidia-h100-80gb-hbm3"),
        ("Tesla V100-SXM2-16GB", "cuda-tesla-v100-sxm2-16gb"),
        ("", "cuda-unknown"),
    ],
)
def test_device_id_is_the_lowercased_model_name(name: str, device_id: str) -> None:
    assert device_id_from(name) == device_id
