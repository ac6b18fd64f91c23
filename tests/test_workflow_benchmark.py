"""`kvwall benchmark` prints every build target PASS or MISS beside what it measured, wall time and CPU seconds
(kvwall.cli.benchmark)."""

import os
import sys

import pytest

from kvwall.cli import benchmark


def _result(**changed):
    values = dict(cold_build=28.04, noop_build=2.1, contributor_loop=12.25, loop_jobs=7, load_average=0.0,
                  kind_floors=(benchmark.KindFloor("write_tables", 13, 0.25), benchmark.KindFloor("figure", 9, 0.6)),
                  cores=2, grid_points=1, grid_throughput=1e8, validation_rows=1, validation_time=0.1,
                  noop_kvwall_build=0.31, build_cpu=(50.5, 2.25, 0.12, 20.0))
    return benchmark.BenchmarkResult(**{**values, **changed})


def test_each_build_target_is_printed_pass_or_miss_beside_its_wall_time_and_cpu():
    lines = _result().target_lines()
    floor = (13 * 0.25 + 9 * 0.6) / min(2, os.cpu_count() or 1)
    assert lines[:6] == [
        "MISS  every job kind's floor <= 0.5 s: figure 0.60 s, the slowest",
        f"{'PASS' if 28.04 <= 1.3 * floor else 'MISS'}  cold build <= 1.3 x floor: {28.04 / floor:.2f} x floor",
        "PASS  cold build <= 30 s: 28.0 s, 50.5 s of CPU",
        "MISS  device and model added, rebuild <= 10 s: 12.2 s, 20.0 s of CPU",
        "MISS  no-op rebuild <= 1 s: 2.10 s, 2.25 s of CPU, `snakemake --cores 2`",
        "PASS  no-op rebuild, kvwall build <= 1 s: 0.31 s, 0.12 s of CPU, `kvwall build --cores 2`",
    ]
    assert [line.split("  ", 1)[0] for line in lines] == ["PASS" if ok else "MISS" for ok in _result().targets().values()]
    assert _result(cold_build=30.5).target_lines()[2].startswith("MISS  cold build <= 30 s: 30.5 s")


def test_a_timed_command_counts_the_cpu_of_its_processes(tmp_path):
    burn = "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass\n"
    wall, cpu, output = benchmark._timed([sys.executable, "-c", burn + "print('done')"], tmp_path, "burn")
    assert cpu >= 0.3 and wall >= 0.3 and output == "done\n"
    with pytest.raises(benchmark.BenchmarkError, match="^`fails` failed:"):
        benchmark._timed([sys.executable, "-c", "raise SystemExit(3)"], tmp_path, "fails")
