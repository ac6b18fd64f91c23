"""The measured leg on a GPU, held to one H200's measurements (tests/fixtures/h200-measurements): a kernel whose
time does not grow with the batch is refused by name, a whole decode step is held to the datasheet bound of the same
step, and the engines' attention layout computes decode GQA."""

from pathlib import Path

import numpy as np
import pytest

from kvwall.cli.main import main
from kvwall.inputs.errors import SpecError
from kvwall.measure.analysis import batch_growth, growth_check
from kvwall.measure.config import load_measure_config
from kvwall.measure.record import RECORDS_DIR, read_record
from kvwall.measure.recheck import recheck
from kvwall.measure.run import timed
from kvwall.measure.step import read_step_table, realization

H200 = Path(__file__).parent / "fixtures" / "h200-measurements"
INVALID = H200 / "kvwall-measure-record-invalid.json"
STEPS = H200 / "decode_step_gqa.csv"


@pytest.fixture(scope="module")
def settings(catalog, root):
    return load_measure_config(root / "config" / "measure.yaml", catalog, "full")


def _point(batch, context, ms):
    return {"batch": batch, "context": context, "median_ms": ms}


def test_batch_growth_by_hand():
    # all KV: the step grows as its bytes, 4x from batch 1 to 4; half of a step fixed: 2.5 / 1 - 1 over 3 = 0.5
    assert batch_growth([_point(1, 1024, 1.0), _point(4, 1024, 4.0)]) == 1.0
    assert batch_growth([_point(1, 1024, 2.0), _point(4, 1024, 5.0), _point(1, 2048, 2.0), _point(2, 2048, 2.0)]) == 0.25
    assert batch_growth([_point(1, 1024, 2.0), _point(1, 2048, 3.0)]) is None  # no context at two batches
    assert growth_check([_point(1, 1024, 2.0), _point(4, 1024, 5.0)], 0.25) == []
    (flag,) = growth_check([_point(1, 1024, 2.0), _point(16, 1024, 2.1)], 0.25)
    assert flag.startswith("time does not grow with the batch: at a fixed context the step grows 0.3% as fast as its "
                           "KV bytes") and "validity.batch_growth" in flag


def test_the_packed_kernels_h200_record_is_refused_for_not_growing_with_the_batch(settings):
    record = read_record(INVALID)
    packed = record["devices"]["cuda"]["kernels"]["torch-sdpa"]
    # its own check caught it by the fit alone: R^2 0.31
    assert not packed["valid"] and round(packed["fit"]["r_squared"], 2) == 0.31
    # 1.7, 3.0, 5.6 and 10.9 ms at 4k to 32k tokens, at batch 1 as at 16
    by_context = {p["context"]: p["median_ms"] for p in packed["points"] if p["batch"] == 16}
    assert [round(by_context[c], 1) for c in (4096, 8192, 16384, 32768)] == [1.7, 3.1, 5.7, 11.0]
    assert batch_growth(packed["points"]) < 0.01
    judged = recheck(record, settings)
    assert any(flag.startswith("time does not grow with the batch") for flag in judged["cuda"]["torch-sdpa"])
    assert judged["cpu"] == {"numpy-contiguous": [], "numpy-paged": []}  # the CPU kernels grow with the batch


def test_every_committed_record_still_passes_every_check(root, settings):
    for path in sorted((root / RECORDS_DIR).glob("*.json")):
        judged = recheck(read_record(path), settings)
        assert all(flags == [] for kernels in judged.values() for flags in kernels.values()), (path.name, judged)


def test_the_check_command_names_the_failed_check(root, monkeypatch, capsys):
    monkeypatch.chdir(root)
    assert main(["measure", "--check", str(INVALID)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == ["cpu numpy-contiguous: valid", "cpu numpy-paged: valid"]
    assert lines[2].startswith("cuda torch-sdpa: INVALID: poor fit: R^2 0.309") and "does not grow with the batch" in lines[2]


def test_a_measured_h200_step_realizes_066_to_088_of_its_datasheet_bound(catalog):
    points = read_step_table(STEPS)
    rows = realization(points, catalog.models["llama-3.1-8b"], catalog.devices["h200-sxm"], path=STEPS)
    first = rows[0]
    # batch 1 at 1,024 tokens: 15,009,335,040 B of weights (15,009,316,864 B in the table, less the one embedding row
    # a real step gathers) and 1,024 x 131,072 B of KV over 4.8 TB/s, its FLOPs far under 989.5 TFLOP/s
    assert (first["batch"], first["context"]) == (1, 1024)
    assert first["bound_ms"] == pytest.approx((15_009_335_040 + 1024 * 131_072) / 4.8e12 * 1e3, rel=1e-12)
    assert round(first["bound_ms"], 3) == 3.155 and first["measured_ms"] == 4.5177
    assert round(first["realization"], 2) == 0.70
    shares = [row["realization"] for row in rows]
    assert (round(min(shares), 2), round(max(shares), 2)) == (0.66, 0.88)
    best = max(rows, key=lambda row: row["realization"])
    assert (best["batch"], best["context"]) == (32, 16384)  # the largest KV share streams closest to the datasheet


def test_a_step_table_of_another_model_is_refused(catalog):
    with pytest.raises(SpecError, match=r"batch 1, context 1024: kv_bytes: 134,217,728 B is not Llama-3-70B's"):
        realization(read_step_table(STEPS), catalog.models["llama-3-70b"], catalog.devices["h200-sxm"], path=STEPS)


@pytest.mark.parametrize("edit, key, reason", [
    (lambda rows: [r.replace(",p90_ms", ",p95_ms") for r in rows], "p90_ms", "needs the columns"),
    (lambda rows: rows[:1] + ["1,1024,-4.5,4.5,4.7,15009316864,134217728"] + rows[2:], "line 2, step_ms", "must be a positive"),
    (lambda rows: rows[:1] + ["1.5,1024,4.5,4.5,4.7,15009316864,134217728"] + rows[2:], "line 2, batch", "positive whole"),
    (lambda rows: rows[:1] + ["1,1024,4.9,4.5,4.7,15009316864,134217728"] + rows[2:], "line 2, step_ms", "between p10_ms"),
    (lambda rows: rows[:1] + ["1,1024,abc,4.5,4.7,15009316864,134217728"] + rows[2:], "line 2, step_ms", "not a number"),
])
def test_a_bad_step_table_is_refused_by_file_and_key(tmp_path, edit, key, reason):
    bad = tmp_path / "steps.csv"
    bad.write_text("\n".join(edit(STEPS.read_text(encoding="utf-8").splitlines())) + "\n", encoding="utf-8")
    with pytest.raises(SpecError) as refused:
        read_step_table(bad)
    assert str(refused.value).startswith(f"{bad}: {key}") and reason in str(refused.value)


def test_the_step_command_prints_the_three_numbers_with_their_classes(root, monkeypatch, capsys):
    monkeypatch.chdir(root)
    assert main(["measure", "--step-table", str(STEPS), "--model", "llama-3.1-8b", "--device", "h200-sxm"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "(measured)" in out[0] and "(derived)" in out[0]
    assert out[2].split() == ["1", "1024", "3.15", "ms", "4.52", "ms", "0.70"]
    assert out[-1] == "  the steps realize 0.66-0.88 of the datasheet bound's speed (derived)"
    assert main(["measure", "--step-table", str(STEPS), "--model", "llama-3.1-8b"]) == 2
    assert "--device: --step-table needs --model and --device" in capsys.readouterr().err


def test_a_step_that_keeps_its_own_clock_is_timed_by_it():
    class EventTimed:
        def __call__(self):
            raise AssertionError("a self-timed step is not called around a host clock")

        def elapsed(self):
            return 0.125

    assert timed(EventTimed()) == 0.125


def test_the_engines_layout_computes_decode_gqa():
    pytest.importorskip("torch")
    from kvwall.measure.numpy_decode import reference_decode
    from kvwall.measure.torch_decode import TorchSdpaGqa

    rng = np.random.default_rng(5)
    queries = rng.standard_normal((2, 3, 2, 4, 16), dtype=np.float32)  # layers, sequences, KV heads, group, dim
    k, v = (rng.standard_normal((2, 3, 2, 40, 16), dtype=np.float32) for _ in range(2))
    out = TorchSdpaGqa.from_arrays(queries, k, v)().numpy()
    np.testing.assert_allclose(out, reference_decode(queries, k, v), rtol=1e-5, atol=1e-6)


def test_on_the_cpu_torch_runs_packed_by_the_host_clock_and_on_cuda_as_the_engines_do_by_events(settings):
    pytest.importorskip("torch")
    from kvwall.measure.kernels import HOST_CLOCK, torch_kernel
    from kvwall.measure.torch_timing import GRAPH_EVENTS

    cpu, cuda = torch_kernel(settings, "cpu"), torch_kernel(settings, "cuda")
    assert (cpu.name, cpu.layout, cpu.timing) == ("torch-sdpa", "contiguous", HOST_CLOCK)
    assert (cuda.name, cuda.timing) == ("torch-sdpa-gqa", GRAPH_EVENTS) and "enable_gqa" in cuda.layout
