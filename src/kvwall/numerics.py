"""The numeric environment of every pipeline job: the same floating-point results on every CPU (README, "Byte-stable").

Three libraries choose a code path by the CPU they run on, and the path changes the last bits of a result:
- numpy dispatches its ufuncs (power, exp, log10, sin, ...) to AVX2 or AVX-512 kernels (Intel's SVML on AVX-512);
- glibc's libm resolves exp, log, pow and sin to FMA variants where the CPU has FMA (about 1 in 1,400 results of
  pow differs by one ulp);
- OpenBLAS picks its BLAS and LAPACK kernels by CPU (OPENBLAS_CORETYPE) and splits work by thread count.
kvwall's own numbers call no BLAS (fits are closed forms summed by ``math.fsum``, kvwall.measure.fit). The first two
are pinned here to their baseline paths, which every CPU of the architecture runs, for every job the workflow starts
(workflow/rules/common.smk), so that code kvwall does not own (matplotlib's log axes) draws the same pixels too.
"""

from __future__ import annotations

from collections.abc import Mapping

#: glibc's CPU features whose libm variants (exp, log, pow, sin, ...) round differently; both spellings, glibc 2.26
#: to 2.32 and 2.33 on (an unknown name is ignored).
GLIBC_HWCAPS_OFF = ("-AVX2_Usable", "-FMA_Usable", "-AVX2", "-FMA", "-FMA4")


def numpy_dispatch_targets() -> tuple[str, ...]:
    """The SIMD targets this numpy build dispatches to beyond its baseline (X86_V3, X86_V4, ... on x86-64)."""
    from numpy._core._multiarray_umath import __cpu_dispatch__

    return tuple(__cpu_dispatch__)


def pinned_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables to set in ``environ`` so that a child process computes on numpy's baseline kernels and
    glibc's generic libm: NPY_DISABLE_CPU_FEATURES (every dispatch target) and GLIBC_TUNABLES (its hwcaps, kept
    beside any other tunable already set)."""
    tunables = [t for t in environ.get("GLIBC_TUNABLES", "").split(":") if t and not t.startswith("glibc.cpu.hwcaps=")]
    return {
        "NPY_DISABLE_CPU_FEATURES": " ".join(numpy_dispatch_targets()),
        "GLIBC_TUNABLES": ":".join([*tunables, "glibc.cpu.hwcaps=" + ",".join(GLIBC_HWCAPS_OFF)]),
    }
