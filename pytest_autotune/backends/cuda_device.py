"""CuPy and the CUDA devices it sees: importing it with one clear error where it is missing,
counting devices, and naming them as the cache folders and fingerprints do.

CuPy is imported when asked for, never when this module is, so the package imports without it.
"""

from __future__ import annotations

import ctypes
import importlib
import os
from typing import Any

from pytest_autotune.backends.device_id import device_id
from pytest_autotune.tune.loaded import loaded_type

EXTRAS_HINT = (
    "install CuPy through the extra matching your CUDA toolkit: "
    "pip install 'pytest-autotune[cuda12]' (CUDA 12) or 'pytest-autotune[cuda13]' (CUDA 13)"
)


class CudaUnavailableError(RuntimeError):
    """`cuda()` cannot give a client here: CuPy is missing or broken, or no CUDA device is
    visible. The message says which, and what to install."""


def import_cupy() -> Any:
    """CuPy, or one `CudaUnavailableError` that names the extra to install."""
    try:
        return importlib.import_module("cupy")
    except ImportError as error:
        raise CudaUnavailableError(f"CuPy cannot be imported ({error}); {EXTRAS_HINT}") from error


def visible_devices_hint() -> str:
    """What `CUDA_VISIBLE_DEVICES` has to do with CUDA finding no device, where it is set:
    CUDA sees only the GPUs it names and stops at the first entry that names none, so "7"
    on a host of one GPU, a mistyped UUID or an empty value hide every GPU, and CUDA says
    only that it found no device."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return ""
    return (
        f"; CUDA_VISIBLE_DEVICES is {visible!r}, and CUDA sees only the GPUs it names (an"
        " index past the host's GPUs, an unknown UUID or an empty value hides them)"
    )


def device_count() -> int:
    """CUDA devices CuPy sees; 0 where CuPy is missing or finds no driver or device."""
    try:
        return int(import_cupy().cuda.runtime.getDeviceCount())
    except Exception:
        return 0


def device_id_from(name: str) -> str:
    """The cache folder name of a GPU, e.g. `cuda-nvidia-h200` for "NVIDIA H200"."""
    return device_id("cuda", name)


def cuda_version(number: int) -> str:
    """CUDA's integer versions (13000, 12040) as "13.0", "12.4"."""
    return f"{number // 1000}.{number % 1000 // 10}"


def device_uuid(raw: object, ordinal: int | None = None) -> str | None:
    """The device UUID as nvidia-smi prints it (GPU-xxxxxxxx-xxxx-...), from the runtime's
    property `raw`, else from the driver (device `ordinal`); None where unknown."""
    if isinstance(raw, (bytes, bytearray)) and len(raw) == 16:
        h = bytes(raw).hex()
        return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
    return None if ordinal is None else device_uuid(_driver_uuid(ordinal))


DRIVER_LIBRARIES = ("libcuda.so.1", "libcuda.so", "nvcuda.dll")


def _driver_uuid(ordinal: int) -> bytes | None:
    """The 16 bytes of a device's UUID from the driver API (`cuDeviceGetUuid`). CuPy 14 reads
    the runtime's `cudaDeviceProp.uuid` as a C string, which ends at the UUID's first zero
    byte (b'{' for GPU-7b00cec7-be48-...): every record's GPU read as unknown, and two GPUs
    of one host could not be told apart in them. None where the driver cannot say."""
    for name in DRIVER_LIBRARIES:
        try:
            library = ctypes.CDLL(name)
            break
        except OSError:
            continue
    else:
        return None
    get = getattr(library, "cuDeviceGetUuid_v2", None) or getattr(library, "cuDeviceGetUuid", None)
    init, device = getattr(library, "cuInit", None), getattr(library, "cuDeviceGet", None)
    if get is None or init is None or device is None:
        return None  # a library of that name that is no CUDA driver: unknown, not a traceback
    handle = ctypes.c_int()
    raw = ctypes.create_string_buffer(16)
    # cuInit is idempotent, and CuPy has called it already where a client exists.
    if init(0) != 0 or device(ctypes.byref(handle), ordinal) != 0 or get(raw, handle) != 0:
        return None
    return raw.raw[:16]


LIBRARY_OUT_OF_MEMORY = (
    ("cupy_backends.cuda.api.driver", "CUDADriverError", "status", 2),  # CUDA_ERROR_OUT_OF_MEMORY
    ("cupy_backends.cuda.libs.cublas", "CUBLASError", "status", 3),  # CUBLAS_STATUS_ALLOC_FAILED
    ("cupy_backends.cuda.libs.cusolver", "CUSOLVERError", "status", 2),  # ..._ALLOC_FAILED
    ("cupy_backends.cuda.libs.cusparse", "CuSparseError", "status", 2),  # ..._ALLOC_FAILED
    ("cupy_backends.cuda.libs.curand", "CURANDError", "status", 102),  # ..._ALLOCATION_FAILED
    ("cupy.cuda.cufft", "CuFFTError", "result", 2),  # CUFFT_ALLOC_FAILED
)
"""What CuPy raises where the driver or a CUDA library ran out of device memory outside
CuPy's pool: (module, error class, attribute, value). cuBLAS takes its workspace with
cudaMalloc (CuPy sets none), so a `cupy.matmul` that finds the memory held by an earlier
candidate's arrays or graphs fails with CUBLASError, not CuPy's OutOfMemoryError
(cupy_backends/cuda/libs/cublas.pyx, cupy/cuda/cufft.pyx, cupy_backends/cuda/api/driver.pyx);
so do cuSPARSE's handles and buffers and cuRAND's generator states (cusparse.pyx, curand.pyx).
Looked up in `sys.modules`: a library that was never imported raised nothing, and importing
it here would load it."""


def is_out_of_memory(cp: Any, error: BaseException) -> bool:
    if isinstance(error, cp.cuda.memory.OutOfMemoryError):
        return True
    # cudaErrorMemoryAllocation, raised by a call that allocates outside the pool.
    if isinstance(error, cp.cuda.runtime.CUDARuntimeError) and error.status == 2:
        return True
    for module, name, attribute, value in LIBRARY_OUT_OF_MEMORY:
        kind = loaded_type(module, name)
        if kind is not None and isinstance(error, kind):
            return getattr(error, attribute, None) == value
    return False
