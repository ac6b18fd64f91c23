"""The numeric environment of every pipeline job: the same floating-point results on every CPU (docs/byte-stability.md).

Three libraries choose a code path by the CPU they run on, and the path changes the last bits of a result:
- numpy dispatches its ufuncs (power, exp, log10, sin, ...) to AVX2 or AVX-512 kernels (Intel's SVML on AVX-512);
- glibc's libm resolves exp, log, pow and sin to FMA variants where the CPU has FMA (about 1 in 1,400 results of
  pow differs by one ulp);
- OpenBLAS picks its BLAS and LAPACK kernels by CPU (OPENBLAS_CORETYPE) and splits work by thread count.
kvwall's line fits call no BLAS (closed forms summed by ``math.fsum``, kvwall.measure.fit); the engine constants'
least squares (scipy, kvwall.validation.calibration) do, through LAPACK. All three are pinned here to their baseline
paths, which every CPU of the architecture runs, for every job the workflow starts (workflow/rules/common.smk), so
that code kvwall does not own (matplotlib's log axes, scipy's solvers) computes the same bits too: OpenBLAS to its
Prescott kernels on x86-64 (SSE3, no FMA) and one thread.
"""

from __future__ import annotations

import platform
from collections.abc import Mapping

#: The OpenBLAS kernels every x86-64 CPU runs (OPENBLAS_CORETYPE); elsewhere OpenBLAS keeps its own choice.
OPENBLAS_BASELINE = {"x86_64": "Prescott", "AMD64": "Prescott"}

#: glibc's CPU features whose libm variants (exp, log, pow, sin, ...) round differently; both spellings, glibc 2.26
#: to 2.32 and 2.33 on (an unknown name is ignored).
GLIBC_HWCAPS_OFF = ("-AVX2_Usable", "-FMA_Usable", "-AVX2", "-FMA", "-FMA4")


def numpy_dispatch_targets() -> tuple[str, ...]:
    """The SIMD targets this numpy build dispatches to beyond its baseline (X86_V3, X86_V4, ... on x86-64)."""
    from numpy._core._multiarray_umath import __cpu_dispatch__

    return tuple(__cpu_dispatch__)


def pinned_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables to set in ``environ`` so that a child process computes on numpy's baseline kernels, glibc's
    generic libm and OpenBLAS's baseline kernels on one thread: NPY_DISABLE_CPU_FEATURES (every dispatch target),
    GLIBC_TUNABLES (its hwcaps, kept beside any other tunable already set), OPENBLAS_NUM_THREADS and, on x86-64,
    OPENBLAS_CORETYPE."""
    tunables = [t for t in environ.get("GLIBC_TUNABLES", "").split(":") if t and not t.startswith("glibc.cpu.hwcaps=")]
    pinned = {
        "NPY_DISABLE_CPU_FEATURES": " ".join(numpy_dispatch_targets()),
        "GLIBC_TUNABLES": ":".join([*tunables, "glibc.cpu.hwcaps=" + ",".join(GLIBC_HWCAPS_OFF)]),
        "OPENBLAS_NUM_THREADS": "1",
    }
    if platform.machine() in OPENBLAS_BASELINE:
        pinned["OPENBLAS_CORETYPE"] = OPENBLAS_BASELINE[platform.machine()]
    return pinned
