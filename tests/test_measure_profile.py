"""`kvwall measure --profile`: the operations of a decode step by shape (their bytes and FLOPs by hand, summing to
the step the bound prices), refused in one line where a run cannot time them, and a profile record written on the CPU
that round-trips."""

from dataclasses import replace

import pytest

from kvwall.inputs.specs import FullAttention
from kvwall.measure import profile as profile_module
from kvwall.measure.operations import ATTENTION, EXPERTS, decode_operations, not_covered
from kvwall.measure.profile import ProfileRefused, profile, refusals, summary_lines
from kvwall.measure.profile_grid import ProfileGrid
from kvwall.measure.record import profile_path, read_profile, write_profile
from kvwall.model.sharding import kv_bytes_per_device
from kvwall.inputs.deployment import Deployment

GRID = ProfileGrid(batches=(1, 2), contexts=(64,), formats=("bf16",), repeats=2, warmup=1, step_within=0.1)


def _by_name(ops):
    return {op.name: op for op in ops}


def test_a_dense_steps_operations_by_hand(catalog):
    llama = catalog.models["llama-3.1-8b"]
    ops = _by_name(decode_operations(llama, 8, 4096))
    assert list(ops) == ["qkv", "attention", "o", "gate_up", "down", "lm_head"]
    qkv = ops["qkv"]
    # [8, 4096] x [4096, (32 + 2 x 8) x 128]: weights once, activations in and out, in bf16
    assert (qkv.m, qkv.n, qkv.k, qkv.count) == (8, 6144, 4096, 32)
    assert qkv.moved_bytes == 4096 * 6144 * 2 + 8 * (4096 + 6144) * 2 == 50_495_488
    assert qkv.flops == 2 * 8 * 6144 * 4096
    attention = ops["attention"]
    # K and V of 8 sequences x 4,096 tokens x 8 KV heads x 128 in bf16, and 32 query heads in and out
    assert attention.moved_bytes == 2 * 8 * 4096 * 8 * 128 * 2 + 2 * 8 * 32 * 128 * 2
    assert attention.flops == 4 * 8 * 32 * 128 * 4096


def test_the_operations_read_the_step_the_bound_prices(catalog):
    # the weights of every layer and the LM head are the 15,009,316,864 B one H200 step of Llama-3.1-8B read
    # (tests/fixtures/h200-measurements/decode_step_gqa.csv), its KV the bytes of SoK Eq. 1
    llama = catalog.models["llama-3.1-8b"]
    ops = decode_operations(llama, 32, 16384)
    weights = sum(op.count * op.k * op.n * 2 for op in ops if op.kind != ATTENTION)
    assert weights == 15_009_316_864
    kv = sum(op.count * 2 * op.m * op.context * op.k * op.head_dim * 2 for op in ops if op.kind == ATTENTION)
    assert kv == float(kv_bytes_per_device(llama, Deployment(), 16384, 32)) == 68_719_476_736


def test_an_moe_steps_experts_are_those_a_batch_touches(catalog):
    qwen = catalog.models["qwen3-235b-a22b"]
    ops = _by_name(decode_operations(qwen, 8, 4096))
    assert "gate_up" not in ops  # every layer is an MoE layer
    experts = ops["experts_gate_up"]
    # 8 tokens x 8 of 128 experts: 128 (1 - (1 - 8/128)^8) = 51.6 touched, 64 / 52 = 1 token each
    assert (experts.kind, experts.groups, experts.m, experts.n, experts.k) == (EXPERTS, 52, 1, 2 * 1536, 4096)
    assert experts.moved_bytes == 52 * (4096 * 3072 * 2 + (4096 + 3072) * 2)
    assert ops["router"].n == 128 and ops["experts_down"].n == 4096


def test_window_layers_read_their_window_and_other_cache_kinds_are_not_covered(catalog):
    oss = _by_name(decode_operations(catalog.models["gpt-oss-120b"], 8, 4096))
    assert (oss["attention"].count, oss["attention"].context) == (18, 4096)
    assert (oss["attention_window"].count, oss["attention_window"].context) == (18, 128)
    assert not_covered(catalog.models["deepseek-v3"]) == ["attention of MLA: only full and window GQA layers are timed"]
    with pytest.raises(ValueError, match="deepseek-v3: attention of MLA"):
        decode_operations(catalog.models["deepseek-v3"], 1, 1024)


def test_without_torch_the_profile_is_refused_in_one_line(catalog, monkeypatch):
    monkeypatch.setattr(profile_module, "torch_installed", lambda: False)
    with pytest.raises(ProfileRefused, match=r"install the extra \(uv sync --frozen --extra torch\)"):
        profile(catalog.models["llama-3.1-8b"], GRID, catalog, {}, "quick")


def test_what_cannot_be_timed_is_refused_before_any_allocation(catalog):
    assert refusals(catalog.models["deepseek-v3"], GRID, "cpu") == [
        "deepseek-v3: attention of MLA: only full and window GQA layers are timed"]
    huge = replace(GRID, batches=(1, 10**6), contexts=(10**6,))
    (reason,) = refusals(catalog.models["llama-3.1-8b"], huge, "cpu")
    assert reason.startswith("llama-3.1-8b: the inputs of batch 1000000 at 1,000,000 tokens take ") and "free on the cpu" in reason


def test_fp8_on_the_cpu_is_refused():
    pytest.importorskip("torch")
    from kvwall.measure.torch_operations import format_refusal

    assert format_refusal("fp8", "cpu") == "fp8 GEMMs (torch._scaled_mm) need a CUDA GPU"
    assert format_refusal("fp4", "cpu").startswith("'fp4' is not a format the profile multiplies in")
    assert format_refusal("bf16", "cpu") is None


@pytest.fixture
def tiny(catalog):
    """A two-layer GQA model small enough to profile on the CPU in a second."""
    qwen = catalog.models["qwen2.5-7b"]
    attention = FullAttention(n_layers=2, n_q_heads=4, n_kv_heads=2, head_dim=16)
    return replace(qwen, id="tiny", name="Tiny", attention=attention, n_layers=2, n_q_heads=4, n_kv_heads=2, head_dim=16,
                   hidden_size=64, intermediate_size=128, vocab_size=256)


def test_a_profile_on_the_cpu_round_trips(catalog, tiny, tmp_path):
    pytest.importorskip("torch")
    record = profile(tiny, GRID, catalog, {}, "quick")
    assert record["evidence"] == "measured" and record["device"]["kind"] == "cpu" and record["device"]["spec"] is None
    assert [(p["batch"], p["context"]) for p in record["points"]] == [(1, 64), (2, 64)]
    first = record["points"][0]
    assert [row["name"] for row in first["operations"]] == [op.name for op in decode_operations(tiny, 1, 64)]
    assert first["step"]["timing"].startswith("host clock") and len(first["step"]["times_s"]) == GRID.repeats
    summed = sum(row["median_s"] * row["count"] for row in first["operations"])
    assert first["sum_of_operations_s"] == summed and first["step_over_sum"] == first["step"]["median_s"] / summed
    path = write_profile(record, tmp_path / profile_path(record).name)
    assert read_profile(path) == record
    assert profile_path(record).name.endswith("-tiny-profile-quick.json")
    lines = summary_lines(record)
    assert lines[0].startswith("kvwall measure --profile (quick): Tiny decode operations on") and lines[-1] == "valid profile"
