"""Probing a GPU's peaks: memory bandwidth (HBM and L2) and arithmetic throughput (FMA loops
and tensor-core products), each the best of a few samples timed by the client.

The probes see the client through a `ProbeTarget`: CuPy, the device, its sizes and a timer
of device seconds, so this module needs nothing else of the client.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pytest_autotune.backends.cuda_timing import MIN_SAMPLE_S
from pytest_autotune.backends.peaks import MemoryLevel, Peaks

GIB = 1 << 30
MIN_PROBE_BUFFER = GIB
"""Memory probes stream buffers of at least 1 GiB (and 8 times the L2): far past any cache,
yet a fraction of a millisecond each on a current GPU."""
PROBE_REPS = 5
FMA_BLOCK = 256
L2_PROBE_FRACTION = 0.25
"""The L2 probe's working set: a quarter of the L2, which Hopper's two partitions hold
whichever of them a line lands in."""
L2_PASSES = 9
FMA_UNROLL = 16
"""Each thread runs 8 independent chains of FMA_UNROLL multiply-adds per loop iteration: a
chain's latency (4 cycles on Hopper) is hidden by the other chains and the other warps."""
FMA_CHAINS = 8
MATMUL_N = 8192
"""Tensor-core probes multiply n x n matrices: large enough to reach the library's best
kernels, about a millisecond each in fp16 on a Hopper GPU."""

_PROBE_SOURCE = r"""
// Grid-stride loops unrolled four times: four independent 16-byte loads per thread are in
// flight at once, which with a full SM covers the latency of HBM.
extern "C" __global__ void probe_copy(const float4* __restrict__ src, float4* __restrict__ dst,
                                      long long n4) {
    long long stride = (long long)gridDim.x * blockDim.x;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 3 * stride < n4; i += 4 * stride) {
        float4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
        dst[i] = a;
        dst[i + stride] = b;
        dst[i + 2 * stride] = c;
        dst[i + 3 * stride] = d;
    }
    for (; i < n4; i += stride) dst[i] = src[i];
}

// y += x, as saxpy-like kernels move memory: two streams read, one written back. On an
// H200 this pattern moved 3% more bytes per second than a copy on some machines, so a copy
// roof put saxpy over 100% of it.
extern "C" __global__ void probe_add(const float4* __restrict__ src, float4* __restrict__ dst,
                                     long long n4) {
    long long stride = (long long)gridDim.x * blockDim.x;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 3 * stride < n4; i += 4 * stride) {
        float4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
        float4 e = dst[i], f = dst[i + stride], g = dst[i + 2 * stride], h = dst[i + 3 * stride];
        dst[i] = make_float4(e.x + a.x, e.y + a.y, e.z + a.z, e.w + a.w);
        dst[i + stride] = make_float4(f.x + b.x, f.y + b.y, f.z + b.z, f.w + b.w);
        dst[i + 2 * stride] = make_float4(g.x + c.x, g.y + c.y, g.z + c.z, g.w + c.w);
        dst[i + 3 * stride] = make_float4(h.x + d.x, h.y + d.y, h.z + d.z, h.w + d.w);
    }
    for (; i < n4; i += stride) {
        float4 a = src[i], e = dst[i];
        dst[i] = make_float4(e.x + a.x, e.y + a.y, e.z + a.z, e.w + a.w);
    }
}

extern "C" __global__ void probe_read(const float4* __restrict__ src, float* __restrict__ out,
                                      long long n4) {
    long long stride = (long long)gridDim.x * blockDim.x;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.0f;
    for (; i + 3 * stride < n4; i += 4 * stride) {
        float4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
        acc += ((a.x + a.y) + (a.z + a.w)) + ((b.x + b.y) + (b.z + b.w))
             + ((c.x + c.y) + (c.z + c.w)) + ((d.x + d.y) + (d.z + d.w));
    }
    for (; i < n4; i += stride) {
        float4 a = src[i];
        acc += (a.x + a.y) + (a.z + a.w);
    }
    // Never true for the probe's data (non-negative), but the compiler cannot know that,
    // so every load stays.
    if (acc == -1.0f) out[0] = acc;
}

extern "C" __global__ void probe_write(float4* __restrict__ dst, long long n4, float value) {
    long long stride = (long long)gridDim.x * blockDim.x;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    float4 v = make_float4(value, value, value, value);
    for (; i + 3 * stride < n4; i += 4 * stride) {
        dst[i] = v;
        dst[i + stride] = v;
        dst[i + 2 * stride] = v;
        dst[i + 3 * stride] = v;
    }
    for (; i < n4; i += stride) dst[i] = v;
}

__device__ __forceinline__ float fma_of(float a, float b, float c) { return fmaf(a, b, c); }
__device__ __forceinline__ double fma_of(double a, double b, double c) { return fma(a, b, c); }

// Eight independent chains of multiply-adds, unrolled 16 times per iteration.
template <typename T>
__device__ __forceinline__ void fma_loop(T* out, T b, T c, int iters) {
    T a0 = (T)threadIdx.x * (T)1e-3;
    T a1 = a0 + (T)1, a2 = a0 + (T)2, a3 = a0 + (T)3, a4 = a0 + (T)4;
    T a5 = a0 + (T)5, a6 = a0 + (T)6, a7 = a0 + (T)7;
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int k = 0; k < 16; ++k) {
            a0 = fma_of(a0, b, c); a1 = fma_of(a1, b, c); a2 = fma_of(a2, b, c);
            a3 = fma_of(a3, b, c); a4 = fma_of(a4, b, c); a5 = fma_of(a5, b, c);
            a6 = fma_of(a6, b, c); a7 = fma_of(a7, b, c);
        }
    }
    T s = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7));
    if (s == (T)-1) out[0] = s;
}

extern "C" __global__ void probe_fma32(float* out, float b, float c, int iters) {
    fma_loop<float>(out, b, c, iters);
}

extern "C" __global__ void probe_fma64(double* out, double b, double c, int iters) {
    fma_loop<double>(out, b, c, iters);
}
"""


@dataclass(frozen=True, slots=True)
class ProbeTarget:
    """What the probes use of a client (`cuda.CudaClient`)."""

    cp: Any
    """CuPy."""
    context: Any
    """The device, entered while the probes run."""
    sm_count: int
    l2_bytes: int
    buffer_bytes: int
    """Bytes of each memory-probe buffer (`CudaClient.probe_buffer_bytes`)."""
    seconds: Callable[[Callable[[], object]], float]
    """Device seconds of one call, as the client samples it, without the caller's cost."""


def _best_seconds(gpu: ProbeTarget, fn: Callable[[], object], reps: int = PROBE_REPS) -> float:
    """The fastest of `reps` samples after one warm-up: a peak is what the device can do,
    and every disturbance (a clock ramp, another process) only adds time."""
    gpu.seconds(fn)
    return min(gpu.seconds(fn) for _ in range(reps))


def probe_peaks(gpu: ProbeTarget) -> Peaks:
    """Measure the device's memory bandwidth and arithmetic throughput.

    Memory: grid-stride kernels over buffers of `probe_buffer_bytes` with 16-byte accesses,
    for copy (bytes read plus written, as `Work.bytes` counts them), add (`y += x`: two
    read, one written), read (a sum that keeps every load) and write. Compute: an unrolled
    FMA loop with eight independent chains per thread and enough blocks to fill every SM,
    for fp32 and fp64 (two operations per FMA); `cupy.matmul` of `MATMUL_N` squared matrices
    on random data for fp16 and tf32 (random because zeros run faster), and cuBLAS `gemmEx`
    for bf16, which has no CuPy dtype. A compute probe that cannot run here is left out, and
    the reason kept in `details`. The device-to-device `memcpy` rate is kept in `details`
    too, as a cross-check of the copy kernel.
    """
    cp = gpu.cp
    details: dict[str, Any] = {"probe_reps": PROBE_REPS, "sm_count": gpu.sm_count}
    with gpu.context:
        module = cp.RawModule(code=_PROBE_SOURCE)
        memory = _probe_memory(gpu, module, details)
        levels: tuple[MemoryLevel, ...] = ()
        try:
            levels = (_probe_l2(gpu, module, details),)
        except Exception as error:  # without it, every problem is bound by HBM
            details["l2_probe_error"] = f"{type(error).__name__}: {error}"
        compute = _probe_fma(gpu, module, details)
        skipped: dict[str, str] = {}
        for dtype, probe in (("fp16", _matmul_fp16), ("tf32", _matmul_tf32), ("bf16", _gemm_bf16)):
            try:
                compute[dtype] = probe(gpu)
            except Exception as error:
                skipped[dtype] = f"{type(error).__name__}: {error}"
        try:
            details["fp32_matmul_ops_per_s"] = _matmul_rate(gpu, "float32")
        except Exception as error:
            skipped["fp32_matmul"] = f"{type(error).__name__}: {error}"
        if skipped:
            details["skipped"] = skipped
        details["matmul_n"] = MATMUL_N
        cp.get_default_memory_pool().free_all_blocks()
    return Peaks(
        memory=memory,
        compute=compute,
        threads=None,
        details=details,
        levels=levels,
        outer_level="HBM",
    )


def _launch_config(gpu: ProbeTarget) -> tuple[tuple[int], tuple[int]]:
    """Eight 256-thread blocks per SM: a full SM (2048 threads) on every recent GPU."""
    return (gpu.sm_count * 8,), (FMA_BLOCK,)


def _probe_memory(gpu: ProbeTarget, module: Any, details: dict[str, Any]) -> dict[str, float]:
    """Copy, read and write rates, each the best of two launch shapes of one kernel: a full
    SM of blocks striding over the buffer four loads at a time, and one 16-byte access per
    thread over as many blocks as that takes. Which is faster depends on the GPU and the
    access pattern (on an H200 the second copied 7% and wrote 7% faster, the first read 10%
    faster), and a peak is the best the device can do."""
    cp = gpu.cp
    nbytes = gpu.buffer_bytes
    n4 = nbytes // 16
    src = cp.random.random(nbytes // 4, dtype=cp.float32)
    dst = cp.zeros_like(src)
    out = cp.zeros(1, dtype=cp.float32)
    n, one = cp.int64(n4), cp.float32(1.0)
    args = {
        "copy": (src, dst, n),
        "add": (src, dst, n),
        "read": (src, out, n),
        "write": (dst, n, one),
    }
    moved = {"copy": 2 * nbytes, "add": 3 * nbytes, "read": nbytes, "write": nbytes}
    shapes = {
        "grid_stride": _launch_config(gpu),
        "one_per_thread": ((-(-n4 // FMA_BLOCK),), (FMA_BLOCK,)),
    }
    rates: dict[str, float] = {}
    by_shape: dict[str, dict[str, float]] = {}
    for name, kernel_args in args.items():
        kernel = module.get_function(f"probe_{name}")
        by_shape[name] = {
            shape: moved[name]
            / _best_seconds(gpu, functools.partial(kernel, grid, block, kernel_args))
            for shape, (grid, block) in shapes.items()
        }
        rates[name] = max(by_shape[name].values())
    kind = cp.cuda.runtime.memcpyDeviceToDevice

    def memcpy() -> None:
        stream_ptr = cp.cuda.get_current_stream().ptr
        cp.cuda.runtime.memcpyAsync(dst.data.ptr, src.data.ptr, nbytes, kind, stream_ptr)

    details["memory_by_launch_shape"] = by_shape
    details["memcpy_bytes_per_s"] = 2 * nbytes / _best_seconds(gpu, memcpy)
    details["buffer_bytes"] = nbytes
    details["l2_bytes"] = gpu.l2_bytes
    return rates


def _probe_l2(gpu: ProbeTarget, module: Any, details: dict[str, Any]) -> MemoryLevel:
    """Copy, read and write rates of the L2: the memory kernels over a working set of
    `L2_PROBE_FRACTION` of the L2, launched `L2_PASSES` times in one call against once.

    A sample starts with a cold L2 (the client flushes it), so the first pass streams from
    HBM and the others from the L2; the difference of the two calls is the L2's. A problem
    that fits the L2 may run from it even when timed cold: its writes land there, and its
    second touch of an input hits."""
    cp = gpu.cp
    working_set = int(gpu.l2_bytes * L2_PROBE_FRACTION) // 64 * 64
    n4 = working_set // 16
    src = cp.ones(working_set // 4, dtype=cp.float32)
    half = cp.ones(working_set // 8, dtype=cp.float32)
    target = cp.empty_like(half)
    out = cp.zeros(1, dtype=cp.float32)
    grid, block = _launch_config(gpu)
    calls = {
        "copy": ("probe_copy", (half, target, cp.int64(n4 // 2)), working_set),
        "read": ("probe_read", (src, out, cp.int64(n4)), working_set),
        "write": ("probe_write", (src, cp.int64(n4), cp.float32(1.0)), working_set),
    }
    rates: dict[str, float] = {}
    for name, (kernel_name, args, moved) in calls.items():
        kernel = module.get_function(kernel_name)

        def passes(count: int, kernel: Any = kernel, args: Any = args) -> None:
            for _ in range(count):
                kernel(grid, block, args)

        once = _best_seconds(gpu, functools.partial(passes, 1))
        many = _best_seconds(gpu, functools.partial(passes, L2_PASSES))
        rates[name] = (L2_PASSES - 1) * moved / max(many - once, MIN_SAMPLE_S)
    details["l2_probe"] = {"working_set_bytes": working_set, "passes": L2_PASSES}
    return MemoryLevel("L2", gpu.l2_bytes, rates)


def _probe_fma(gpu: ProbeTarget, module: Any, details: dict[str, Any]) -> dict[str, float]:
    cp = gpu.cp
    grid, block = _launch_config(gpu)
    threads = grid[0] * block[0]
    out32 = cp.zeros(1, dtype=cp.float32)
    out64 = cp.zeros(1, dtype=cp.float64)
    fma32, fma64 = module.get_function("probe_fma32"), module.get_function("probe_fma64")
    iters32, iters64 = 4096, 2048
    per_iter = 2 * FMA_CHAINS * FMA_UNROLL * threads
    b32, c32 = cp.float32(0.999), cp.float32(1e-3)
    b64, c64 = cp.float64(0.999), cp.float64(1e-3)
    details["fma_iters"] = {"fp32": iters32, "fp64": iters64}
    return {
        "fp32": per_iter
        * iters32
        / _best_seconds(gpu, lambda: fma32(grid, block, (out32, b32, c32, cp.int32(iters32)))),
        "fp64": per_iter
        * iters64
        / _best_seconds(gpu, lambda: fma64(grid, block, (out64, b64, c64, cp.int32(iters64)))),
    }


def _matmul_rate(gpu: ProbeTarget, dtype: str) -> float:
    cp = gpu.cp
    # copy=False: fp32 operands need no cast, and the cast's copy kernel is one more NVRTC
    # compilation on a fresh host's first run.
    a = cp.random.random((MATMUL_N, MATMUL_N), dtype=cp.float32).astype(dtype, copy=False)
    b = cp.random.random((MATMUL_N, MATMUL_N), dtype=cp.float32).astype(dtype, copy=False)
    c = cp.empty_like(a)
    return 2.0 * MATMUL_N**3 / _best_seconds(gpu, lambda: cp.matmul(a, b, out=c))


def _matmul_fp16(gpu: ProbeTarget) -> float:
    return _matmul_rate(gpu, "float16")


def _matmul_tf32(gpu: ProbeTarget) -> float:
    """fp32 `cupy.matmul` with CuPy's compute type for float32 set to TF32 for the probe.

    CuPy reads `CUPY_TF32` once, at the first float32 product, into a per-dtype compute type
    that `cupy._core._routines_linalg.set_compute_type` changes; the setting in force before
    is restored, so the probe leaves the process's fp32 products as they were.
    """
    cp = gpu.cp
    linalg = importlib.import_module("cupy._core._routines_linalg")
    before = linalg.get_compute_type(cp.float32)
    linalg.set_compute_type(cp.float32, linalg.COMPUTE_TYPE_TF32)
    try:
        return _matmul_rate(gpu, "float32")
    finally:
        linalg.set_compute_type(cp.float32, before)


def _gemm_bf16(gpu: ProbeTarget) -> float:
    """bf16 x bf16 -> bf16 with fp32 accumulation through cuBLAS `gemmEx` on raw buffers:
    CuPy has no bfloat16 dtype. The operands are the top halves of random fp32 numbers,
    which is how bf16 rounds by truncation."""
    cp = gpu.cp
    cublas = importlib.import_module("cupy_backends.cuda.libs.cublas")
    runtime = cp.cuda.runtime
    np = importlib.import_module("numpy")
    n = MATMUL_N

    def operand() -> Any:
        bits = cp.random.random((n, n), dtype=cp.float32).view(cp.uint32)
        return (bits >> 16).astype(cp.uint16)

    a, b = operand(), operand()
    c = cp.empty((n, n), dtype=cp.uint16)
    alpha = np.ones(1, dtype=np.float32)
    beta = np.zeros(1, dtype=np.float32)
    bf16 = getattr(runtime, "CUDA_R_16BF", 14)
    compute = getattr(cublas, "CUBLAS_COMPUTE_32F", 68)
    algo = getattr(cublas, "CUBLAS_GEMM_DEFAULT_TENSOR_OP", 99)
    op_n = getattr(cublas, "CUBLAS_OP_N", 0)

    def gemm() -> None:
        handle = cp.cuda.device.get_cublas_handle()
        cublas.setStream(handle, cp.cuda.get_current_stream().ptr)
        cublas.gemmEx(
            handle, op_n, op_n, n, n, n,
            alpha.ctypes.data, a.data.ptr, bf16, n, b.data.ptr, bf16, n,
            beta.ctypes.data, c.data.ptr, bf16, n, compute, algo,
        )  # fmt: skip

    return 2.0 * n**3 / _best_seconds(gpu, gemm)
