"""The SLURM profile (profiles/slurm): a dry run through snakemake-executor-plugin-slurm (the slurm dependency group) plans
every job with its resources: table and figure jobs on the CPU partition, the measured leg on a GPU partition with
one GPU. No cluster is needed: a dry run submits nothing."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

#: Builds, notebooks, rendered figures or a browser: `pytest -m "not slow"` leaves these out (docs/benchmark.md).
pytestmark = pytest.mark.slow

TABLE = "tables/derived/table4_traffic_crossover.csv"


@pytest.fixture(scope="module")
def planned(root):
    pytest.importorskip("snakemake_executor_plugin_slurm", reason="the slurm group is not installed (uv run --group slurm)")
    snakemake = Path(sys.executable).with_name("snakemake")
    run = subprocess.run([str(snakemake), "--profile", "profiles/slurm", "--workflow-profile", "none", "-n",
                          "--forcerun", "tables_crossovers", "measure", TABLE], cwd=root, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
    jobs = {}
    for block in re.split(r"\n(?=\[.*\]\nrule )", run.stdout + run.stderr):
        rule = re.search(r"^rule (\w+):", block, re.M)
        resources = re.search(r"^\s+resources: (.*)$", block, re.M)
        if rule and resources:
            jobs[rule[1]] = dict(item.split("=", 1) for item in resources[1].split(", "))
    return jobs


def test_the_measured_leg_goes_to_a_gpu_partition_with_one_gpu(planned):
    measure = planned["measure"]
    assert measure["slurm_partition"] == "gpu" and measure["gpu"] == "1"
    assert measure["cpus_per_task"] == "8" and measure["mem_mb"] == "64000" and measure["runtime"] == "120"


def test_a_table_job_goes_to_the_cpu_partition(planned):
    table = planned["tables_crossovers"]
    assert table["slurm_partition"] == "cpu" and "gpu" not in table
    assert table["cpus_per_task"] == "1" and table["mem_mb"] == "4000" and table["runtime"] == "15"


def test_the_profile_names_the_slurm_executor(root):
    text = (root / "profiles" / "slurm" / "config.yaml").read_text(encoding="utf-8")
    assert re.search(r"^executor: slurm$", text, re.M)
