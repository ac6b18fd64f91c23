"""Numbers that do not depend on the CPU: fits without BLAS, jobs on numpy's baseline kernels and glibc's generic libm."""

import json
import os
import random
import subprocess
import sys

import numpy as np
import pytest

from kvwall.measure.fit import fit_line
from kvwall.numerics import numpy_dispatch_targets, pinned_environment

FIT_SCRIPT = """
import json, sys
from kvwall.measure.fit import fit_line
x = [0.5 * i + 0.1 * (i % 3) for i in range(40)]
y = [3.2 + 16.34 * xi + 0.7 * ((7 * i) % 5 - 2) for i, xi in enumerate(x)]
f = fit_line(x, y)
print(json.dumps([f.slope.hex(), f.intercept.hex(), f.r_squared.hex(), f.slope_ci[0].hex(), f.intercept_ci[1].hex()]))
"""

UFUNC_SCRIPT = """
import json
import numpy as np
from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
x = np.linspace(0.01, 50.0, 20001)
values = [float(np.sum(np.power(x, 0.37))), float(np.sum(np.log10(x))), float(np.sum(np.exp(-x)))]
print(json.dumps({"dispatch_on": [t for t in __cpu_dispatch__ if __cpu_features__.get(t)],
                  "values": [v.hex() for v in values]}))
"""


def _run(script: str, **env: str) -> str:
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                            env={**os.environ, **env})
    return result.stdout


def test_the_pinned_environment_turns_off_every_numpy_dispatch_target_and_glibc_fma():
    pinned = pinned_environment({})
    assert set(pinned["NPY_DISABLE_CPU_FEATURES"].split()) == set(numpy_dispatch_targets())
    assert numpy_dispatch_targets()  # x86-64 and aarch64 builds of numpy dispatch beyond their baseline
    assert pinned["GLIBC_TUNABLES"].startswith("glibc.cpu.hwcaps=") and "-FMA" in pinned["GLIBC_TUNABLES"]


def test_other_glibc_tunables_are_kept_and_an_earlier_hwcaps_replaced():
    pinned = pinned_environment({"GLIBC_TUNABLES": "glibc.malloc.arena_max=2:glibc.cpu.hwcaps=-AVX512F"})
    parts = pinned["GLIBC_TUNABLES"].split(":")
    assert parts[0] == "glibc.malloc.arena_max=2" and len(parts) == 2 and "-AVX512F" not in parts[1]


def test_a_process_in_the_pinned_environment_dispatches_to_no_simd_target():
    pinned = json.loads(_run(UFUNC_SCRIPT, **pinned_environment(os.environ)))
    assert pinned["dispatch_on"] == []


def test_ufuncs_in_the_pinned_environment_ignore_further_cpu_masks():
    """What a CPU without FMA or AVX2 computes (its features masked) is what the pinned environment computes."""
    pinned = pinned_environment(os.environ)
    masked = {**pinned, "GLIBC_TUNABLES": pinned["GLIBC_TUNABLES"] + ",-AVX,-SSE4_2"}
    assert json.loads(_run(UFUNC_SCRIPT, **pinned))["values"] == json.loads(_run(UFUNC_SCRIPT, **masked))["values"]


@pytest.mark.parametrize("coretype", ["Prescott", "Sandybridge"])
def test_a_fit_is_the_same_to_the_bit_whatever_blas_kernel_is_loaded(coretype):
    assert _run(FIT_SCRIPT) == _run(FIT_SCRIPT, OPENBLAS_CORETYPE=coretype)


def test_a_fit_is_the_same_to_the_bit_in_any_order_of_its_points():
    rng = np.random.default_rng(3)
    x = rng.uniform(0.1, 40.0, 200)
    y = 2.0 + 16.34 * x + rng.normal(0.0, 3.0, x.size)
    order = list(range(x.size))
    random.Random(5).shuffle(order)
    first, shuffled = fit_line(x, y), fit_line(x[order], y[order])
    assert (first.slope, first.intercept, first.r_squared, first.slope_ci) == (
        shuffled.slope, shuffled.intercept, shuffled.r_squared, shuffled.slope_ci)


def test_this_test_session_runs_in_the_pipelines_numeric_environment():
    """tests/conftest.py starts the session again with the pins, so in-process numbers match the jobs' on any CPU."""
    from numpy._core._multiarray_umath import __cpu_features__

    assert [t for t in numpy_dispatch_targets() if __cpu_features__.get(t)] == []
    assert os.environ["GLIBC_TUNABLES"] == pinned_environment(os.environ)["GLIBC_TUNABLES"]


def test_the_pinned_environment_runs_openblas_on_one_thread_and_on_x86_64_its_baseline_kernels(monkeypatch):
    import kvwall.numerics as numerics

    monkeypatch.setattr(numerics.platform, "machine", lambda: "x86_64")
    assert pinned_environment({})["OPENBLAS_CORETYPE"] == "Prescott"
    assert pinned_environment({})["OPENBLAS_NUM_THREADS"] == "1"
    monkeypatch.setattr(numerics.platform, "machine", lambda: "aarch64")
    assert "OPENBLAS_CORETYPE" not in pinned_environment({})
