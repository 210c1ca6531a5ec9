"""Four questions about CuPy on a real GPU that the fifteenth session's CUDA review could not
settle without one (each fix it made is checked against fakes only):

1. Does `cudaFreeHost` during a thread-local stream capture fail and cancel the capture
   (`backends.cuda_collector.collector_paused` assumes it can)?
2. Which error does `cupy.matmul` raise when device memory is full: `CUBLASError` with
   `CUBLAS_STATUS_ALLOC_FAILED` (3), as `cuda_device.LIBRARY_OUT_OF_MEMORY` expects, or
   something else (`NOT_INITIALIZED` at handle creation, CuPy's `OutOfMemoryError`)?
3. Is the GPU's UUID read whole: `getDeviceProperties(0)["uuid"]` 16 bytes (a `char[16]`
   cut at a zero byte would lose it silently)?
4. What does `cuda(cold_l2=False)` say when the device's memory is full as it starts
   (the compile-failure path catches every exception: "cannot compile ... install the
   extra" would mislead)?

Each question prints one line, `Qn: ...`, whatever happens; nothing here fails the run.

    PYTHONPATH=. python3 benchmarks/gpu_doubts.py
"""

from __future__ import annotations

import contextlib
import gc
import traceback

from benchmarks.gpu_common import cupy


def free_host_in_capture(cp) -> str:
    stream = cp.cuda.Stream(non_blocking=True)
    pinned = cp.cuda.runtime.hostAlloc(8, 2)
    freed = False
    try:
        with stream:
            stream.begin_capture(1)  # cudaStreamCaptureModeThreadLocal
            try:
                cp.cuda.runtime.freeHost(pinned)
                freed = True
                said = "freeHost in the capture returned"
            except Exception as exc:
                said = f"freeHost in the capture raised {type(exc).__name__}: {exc}"
            try:
                stream.end_capture()
                said += "; end_capture succeeded"
            except Exception as exc:
                said += f"; end_capture raised {type(exc).__name__}: {exc}"
    finally:
        if not freed:
            with contextlib.suppress(Exception):
                cp.cuda.runtime.freeHost(pinned)
    return said


def matmul_when_full(cp) -> str:
    free, _ = cp.cuda.runtime.memGetInfo()
    hog = cp.empty(free - (64 << 20), dtype=cp.uint8)
    try:
        a = cp.ones((1024, 1024), dtype=cp.float32)
        with cp.cuda.Stream(non_blocking=True):
            try:
                hog2 = cp.empty(cp.cuda.runtime.memGetInfo()[0] - (1 << 20), dtype=cp.uint8)
            except Exception:
                hog2 = None
            try:
                cp.matmul(a, a)
                cp.cuda.Device().synchronize()
                said = "matmul succeeded with the memory full"
            except Exception as exc:
                status = getattr(exc, "status", getattr(exc, "result", None))
                kind = f"{type(exc).__module__}.{type(exc).__name__}"
                said = f"matmul raised {kind} status={status}: {exc}"
            del hog2
    finally:
        del hog
        cp.get_default_memory_pool().free_all_blocks()
    return said


def uuid_length(cp) -> str:
    raw = cp.cuda.runtime.getDeviceProperties(0).get("uuid")
    from pytest_autotune.backends.cuda_device import device_uuid

    size = len(raw) if raw is not None else None
    return f"uuid {type(raw).__name__} of {size} bytes; read as {device_uuid(raw)!r}"


def client_when_full(cp) -> str:
    from pytest_autotune.backends.cuda import cuda

    free, _ = cp.cuda.runtime.memGetInfo()
    hog = cp.empty(free - (1 << 20), dtype=cp.uint8)
    try:
        client = cuda(cold_l2=False)
        said = f"cuda() made a client: {client.device_id}"
    except Exception as exc:
        said = f"cuda() raised {type(exc).__name__}: {exc}"
    finally:
        del hog
        gc.collect()
        cp.get_default_memory_pool().free_all_blocks()
    return said


def main() -> None:
    cp = cupy()

    for number, question in enumerate(
        (free_host_in_capture, matmul_when_full, uuid_length, client_when_full), start=1
    ):
        try:
            answer = question(cp)
        except Exception:
            answer = "the check itself failed:\n" + traceback.format_exc()
        print(f"Q{number} ({question.__name__}): {answer}", flush=True)


if __name__ == "__main__":
    main()
