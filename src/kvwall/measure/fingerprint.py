"""What a measurement ran on: CPU, cores, memory, GPU, operating system and library versions, and a short slug."""

from __future__ import annotations

import os
import platform
import re
from pathlib import Path

import numpy as np
import scipy

from kvwall.measure import torch_decode


def _cpu_model() -> str:
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def _memory_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def _blas() -> str:
    info = np.show_config(mode="dicts").get("Build Dependencies", {}).get("blas", {})
    return f"{info.get('name', 'unknown')} {info.get('version', '')}".strip()


def worker_count() -> int:
    """Cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def load_average() -> list[float] | None:
    """The machine's load average over 1, 5 and 15 minutes (runnable processes), None where the system gives none."""
    try:
        return [round(value, 2) for value in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def fingerprint() -> dict:
    """The platform of this process, as a record stores it."""
    return {
        "cpu": _cpu_model(),
        "cores": worker_count(),
        "memory_bytes": _memory_bytes(),
        "gpu": torch_decode.gpu_fingerprint(),
        "os": f"{platform.system()} {platform.release()}",
        "machine": platform.machine(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "blas": _blas(),
        "scipy": scipy.__version__,
        "torch": torch_decode.torch_version(),
    }


def slugify(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def platform_slug(platform_info: dict) -> str:
    """A file-name slug: the GPU's name when one was measured, else the CPU's model and core count."""
    if platform_info["gpu"]:
        return slugify(platform_info["gpu"]["name"])
    cpu = re.sub(r"\((R|TM)\)|\bCPU\b|@.*$|\b\d+-Core Processor\b", " ", platform_info["cpu"], flags=re.IGNORECASE)
    return f"{slugify(cpu)}-{platform_info['cores']}c"


def cpu_steal_seconds() -> float | None:
    """Seconds the hypervisor has taken from this machine's CPUs since boot (Linux /proc/stat), or None."""
    stat = Path("/proc/stat")
    if not stat.is_file():
        return None
    fields = stat.read_text(encoding="utf-8").splitlines()[0].split()
    return int(fields[8]) / os.sysconf("SC_CLK_TCK") if len(fields) > 8 else None
