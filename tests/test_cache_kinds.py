"""The cache kinds of 2026's layouts (kvwall.inputs.specs.LayerGroup): keys that double as values, a sparse-attention
indexer's keys, compressed layers (a window plus pooled entries), and what one TP rank holds of each; values computed
by hand in each test."""

from dataclasses import replace

import pytest

from kvwall.inputs.deployment import Deployment
from kvwall.inputs.errors import SpecError
from kvwall.inputs.loader import load_user_specs
from kvwall.inputs.specs import LatentAttention, LayerGroup, LayerStack
from kvwall.inputs.engines import EngineMemory
from kvwall.model.capacity import deployment_capacity_crossover
from kvwall.model.footprint import context_holding, kv_bytes, kv_bytes_per_token, kv_bytes_per_token_beyond_window
from kvwall.model.sharding import kv_bytes_per_device, resident_weight_bytes_per_device
from kvwall.model.workloads import prefill_flops

BF16 = 2.0

# DeepSeek-V4-Flash's layout: one 512-wide head cached as key and value over a 128-token window in every layer;
# 21 CSA layers add one pooled entry per 4 tokens with a 128-wide index key, 20 HCA layers one per 128 tokens.
WINDOW = LayerGroup("window", 2, n_q_heads=64, n_kv_heads=1, head_dim=512, span=128.0, kv_tensors=1)
CSA = LayerGroup("compressed", 21, n_q_heads=64, n_kv_heads=1, head_dim=512, span=128.0, kv_tensors=1,
                 compress_ratio=4.0, index_head_dim=128)
HCA = LayerGroup("compressed", 20, n_q_heads=64, n_kv_heads=1, head_dim=512, span=128.0, kv_tensors=1,
                 compress_ratio=128.0)
V4 = LayerStack((WINDOW, CSA, HCA))


@pytest.fixture
def v4(llama70):
    return replace(llama70, attention=V4, n_layers=43, n_kv_heads=1, head_dim=512, moe=None)


def test_a_compressed_layer_holds_its_window_and_pooled_entries():
    # below the window a CSA layer adds 512 (window) + (512 + 128) / 4 = 672 elements per token, an HCA layer
    # 512 + 512 / 128 = 516; beyond it only the pooled entries grow: 160 and 4.
    assert CSA.kv_elements_per_token == 21 * 672 and HCA.kv_elements_per_token == 20 * 516
    assert CSA.growing_elements_per_token == 21 * 160 and HCA.growing_elements_per_token == 20 * 4
    assert WINDOW.kv_elements_per_token == 2 * 512 and WINDOW.growing_elements_per_token == 0
    # at 1M tokens: 128 window positions and 262,144 (CSA) or 8,192 (HCA) pooled entries per layer
    s = 1_048_576
    assert float(CSA.elements(s)) == 21 * (512 * 128 + 640 * s / 4)
    assert float(HCA.elements(s)) == 20 * (512 * 128 + 512 * s / 128)
    assert float(CSA.positions(s)) == 128 + s / 4


def test_v4_footprint_below_and_beyond_the_window(v4):
    below = (2 * 512 + 21 * 672 + 20 * 516) * BF16  # (1,024 + 14,112 + 10,320) x 2 = 50,912 B/token
    beyond = (21 * 160 + 20 * 4) * BF16  # 6,880 B/token
    assert kv_bytes_per_token(v4, BF16) == below == 50_912
    assert kv_bytes_per_token_beyond_window(v4, BF16) == pytest.approx(beyond, rel=1e-15)
    s = 8192.0
    assert float(kv_bytes(v4, s, BF16)) == pytest.approx(below * 128 + beyond * (s - 128), rel=1e-12)
    assert float(context_holding(v4, float(kv_bytes(v4, s, BF16, batch=3)), BF16, batch=3)) == pytest.approx(s, rel=1e-12)
    assert V4.label == "SWA+compressed"


def test_v4_prefill_attends_to_the_window_and_the_pooled_entries(v4):
    # 1,000 new tokens: each attends to min(p, 128) window positions and p / ratio pooled ones (4 L n_q d_h each)
    window = 128**2 / 2 + 128 * (1000 - 128)
    per_position = 4 * 64 * 512
    expected = per_position * (2 * window + 21 * (window + 1000**2 / 2 / 4) + 20 * (window + 1000**2 / 2 / 128))
    assert float(prefill_flops(v4, 1000)) == pytest.approx(2 * v4.params_nominal * 1000 + expected, rel=1e-12)


def test_keys_that_double_as_values_halve_the_cache():
    both = LayerGroup("full", 4, n_q_heads=32, n_kv_heads=4, head_dim=512)
    one = replace(both, kv_tensors=1)
    assert both.kv_elements_per_token == 2 * 4 * 4 * 512 and one.kv_elements_per_token == 4 * 4 * 512
    with pytest.raises(ValueError, match="kv_tensors is 2"):
        replace(both, kv_tensors=3)


def test_an_indexer_key_beside_a_latent():
    # GLM-5: 78 layers x (512 + 64) x 2 B of latent = 89,856 B/token, and 78 index keys of 128 in fp8 with one fp32
    # scale per 128 values, 78 x 132 = 10,296 B whatever the KV format; attention FLOPs over the latent only
    latent = LatentAttention(78, 64, 512, 64, index_head_dim=128)
    assert latent.kv_elements_per_token * BF16 == 89_856 and latent.index_bytes_per_token == 10_296
    assert latent.attention_flops_per_position == 2 * 78 * 64 * (576 + 512)
    (group,) = latent.groups
    assert group.kv_elements_per_token == latent.kv_elements_per_token and group.on_tensor_rank(8) == group
    assert group.index_bytes_per_token == latent.index_bytes_per_token
    with pytest.raises(ValueError, match="index keys on latent layers of a stack"):
        LayerStack((group,))


def test_what_one_tensor_rank_holds():
    full = LayerGroup("full", 10, n_q_heads=32, n_kv_heads=4, head_dim=512, index_head_dim=128)
    # TP 2: 2 of 4 heads, the index key whole: 10 x (2 x 2 x 512 + 128) elements per token
    assert full.on_tensor_rank(2).kv_elements_per_token == 10 * (2 * 2 * 512 + 128)
    # TP 8 > 4 heads: one whole head per rank
    assert full.on_tensor_rank(8).n_kv_heads == 1
    state = LayerGroup("state", 45, state_elements=1_085_440.0, state_heads=64)
    assert state.on_tensor_rank(4).state_elements == 1_085_440 / 4
    # 64 heads over TP 128: one whole head per rank, 1/64 of the state
    assert state.on_tensor_rank(128).state_elements == 1_085_440 / 64
    # heads not given: every TP rank holds its 1/TP share, as the engines shard a layer's state
    assert LayerGroup("state", 1, state_elements=10.0).on_tensor_rank(4).state_elements == 10.0 / 4
    assert CSA.on_tensor_rank(8) == CSA  # one KV head: replicated


def test_a_stack_splits_each_group_its_own_way_over_tensor_parallel_ranks(llama70):
    # 15 full layers of 2 KV heads x 256 and 45 state layers of 1,085,440 elements split over 64 heads (Qwen3.5-397B)
    stack = LayerStack((LayerGroup("full", 15, n_q_heads=32, n_kv_heads=2, head_dim=256),
                        LayerGroup("state", 45, state_elements=1_085_440.0, state_heads=64)), state_bytes_per_element=4.0)
    model = replace(llama70, attention=stack, n_layers=60, n_kv_heads=2, head_dim=256, moe=None)
    d = Deployment(devices=4, tensor_parallel=4)  # bf16 weights and KV
    # TP 4: each rank 1 of 2 KV heads (2 x 15 x 1 x 256 x 2 B = 15,360 B/token) and a quarter of the state
    state = 45 * 1_085_440 * 4
    assert float(kv_bytes_per_device(model, d, 1000, 1)) == pytest.approx(15_360 * 1000 + state / 4, rel=1e-15)
    free = 10e9
    s_cap = (free - state / 4) / 15_360
    hbm = free + resident_weight_bytes_per_device(model, d)  # leaves `free` for KV under a rule that takes it all
    everything = EngineMemory("trtllm", "free_gpu_memory_fraction", "free", 1.0, "the whole free memory")
    assert float(deployment_capacity_crossover(model, d, hbm, everything)) == pytest.approx(s_cap, rel=1e-9)


COMPRESSED_SPEC = """evidence: spec
sources:
  hand: "a hand-written test model"
models:
  pooled:
    name: Pooled
    source: hand
    attention:
      kind: layers
      groups:
        - {kind: window, layers: {value: 2, unit: count}, n_q_heads: {value: 8, unit: count}, n_kv_heads: {value: 1, unit: count}, head_dim: {value: 64, unit: count}, span: {value: 128, unit: tokens}, kv_tensors: {value: 1, unit: count}}
        - {kind: compressed, layers: {value: 6, unit: count}, n_q_heads: {value: 8, unit: count}, n_kv_heads: {value: 1, unit: count}, head_dim: {value: 64, unit: count}, span: {value: 128, unit: tokens}, compress_ratio: {value: 4, unit: count}, index_head_dim: {value: 32, unit: count}EXTRA}
    n_layers: {value: 8, unit: count}
    n_q_heads: {value: 8, unit: count}
    n_kv_heads: {value: 1, unit: count}
    head_dim: {value: 64, unit: count}
    hidden_size: {value: 512, unit: count}
    intermediate_size: {value: 1024, unit: count}
    vocab_size: {value: 1000, unit: count}
    params_nominal: {value: 1.0e7, unit: count}
"""


def test_a_compressed_entry_loads(tmp_path, catalog):
    spec = tmp_path / "pooled.yaml"
    spec.write_text(COMPRESSED_SPEC.replace("EXTRA", ""))
    model = load_user_specs(spec, catalog).models["pooled"]
    # 2 x 64 (window, one tensor) + 6 x (2 x 64 + (2 x 64 + 32) / 4) = 128 + 6 x 168 = 1,136 elements per token
    assert kv_bytes_per_token(model, BF16) == (2 * 64 + 6 * (2 * 64 + 160 / 4)) * BF16
    assert model.provenance["attention.groups[1].compress_ratio"].value == 4


@pytest.mark.parametrize("extra, key, reason", [
    (", state_heads: {value: 4, unit: count}", "models.pooled.attention.groups[1].state_heads", "not a dimension of a compressed layer"),
    (", kv_tensors: {value: 3, unit: count}", "models.pooled.attention.groups[1].kv_tensors", "2 (a key and a value) or 1"),
])
def test_a_compressed_entry_with_a_bad_field_is_refused(tmp_path, catalog, extra, key, reason):
    spec = tmp_path / "pooled.yaml"
    spec.write_text(COMPRESSED_SPEC.replace("EXTRA", extra))
    with pytest.raises(SpecError) as err:
        load_user_specs(spec, catalog)
    assert err.value.key == key and reason in err.value.reason
