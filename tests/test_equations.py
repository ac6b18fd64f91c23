"""The paper's equations printed in each model's terms (kvwall.model.equations): dense GQA as the paper writes them,
MLA's latent L (d_c + d_r) w_kv, window layers' min(s, W), a layer stack's groups, and an MoE step's W(b) and
2P_active. Every expected text is written out here by hand."""

from dataclasses import replace

import pytest

from kvwall.model.equations import (
    CAPACITY_EQUATION,
    TRAFFIC_EQUATION,
    ceiling_equation,
    crossover_equation,
    for_model,
    intensity_equation,
    kv_equation,
    step_kv_formula,
    weights_read,
)

CEILING = "R_inf = β_eff / (2 L n_kv d_h w_kv) (SoK §3.3)"


@pytest.fixture(scope="module")
def latent(catalog):
    """DeepSeek-V2's latent attention without its experts: MLA alone."""
    return replace(catalog.models["deepseek-v2"], moe=None)


def test_dense_gqa_keeps_the_papers_form(llama70):
    assert kv_equation(llama70) == "SoK Eq. 1: 2 L n_kv d_h w_kv"
    assert crossover_equation(llama70, TRAFFIC_EQUATION) == "SoK section 3.4, Table 4: s*(b) = P w_p / (b 2 L n_kv d_h w_kv)"
    assert crossover_equation(llama70, CAPACITY_EQUATION) == "SoK section 3.4: s_cap(b) = (HBM - P w_p) / (b 2 L n_kv d_h w_kv)"
    assert intensity_equation(llama70) == "SoK section 3.1: b (2P + 4 L n_q d_h s) / (P w_p + 2 b L n_kv d_h s w_kv)"
    assert ceiling_equation(llama70, CEILING) == CEILING
    assert weights_read(llama70) == "P w_p"
    assert for_model(llama70, step_kv_formula(llama70)) == "b s 2 L n_kv d_h w_kv"


def test_mla_caches_the_latent(latent):
    assert kv_equation(latent) == "SoK Eq. 1, Table 1 (MLA): L (d_c + d_r) w_kv"
    assert crossover_equation(latent, TRAFFIC_EQUATION) == "SoK section 3.4, Table 4: s*(b) = P w_p / (b L (d_c + d_r) w_kv)"
    assert crossover_equation(latent, CAPACITY_EQUATION) == "SoK section 3.4: s_cap(b) = (HBM - P w_p) / (b L (d_c + d_r) w_kv)"
    assert intensity_equation(latent) == "SoK section 3.1: b (2P + 2 L n_q (2 d_c + d_r) s) / (P w_p + b L (d_c + d_r) s w_kv)"
    assert ceiling_equation(latent, CEILING) == "R_inf = β_eff / (L (d_c + d_r) w_kv) (SoK §3.3)"
    assert for_model(latent, step_kv_formula(latent)) == "b s L (d_c + d_r) w_kv"


def test_window_layers_hold_min_s_w(catalog):
    gemma = catalog.models["gemma-3-27b"]
    assert kv_equation(gemma) == "SoK Eq. 1 over every layer: 2 L n_kv d_h w_kv, the rate below the window"
    assert crossover_equation(gemma, CAPACITY_EQUATION) == (
        "SoK section 3.4: s_cap(b) = (HBM - P w_p) / (b 2 L n_kv d_h w_kv), "
        "solved on b 2 n_kv d_h w_kv (L_full s + L_window min(s, W))")
    assert ceiling_equation(gemma, CEILING) == "R_inf = β_eff / (2 L_full n_kv d_h w_kv) (SoK §3.3)"
    assert intensity_equation(gemma) == ("SoK section 3.1: b (2P + 4 L n_q d_h s) / (P w_p + 2 b L n_kv d_h s w_kv), "
                                         "s the positions a layer caches on average (window layers capped)")
    assert step_kv_formula(gemma) == "b 2 n_kv d_h w_kv (L_full s + L_window min(s, W))"


def test_an_moe_step_reads_the_experts_its_batch_touches(catalog):
    mixtral = catalog.models["mixtral-8x7b"]
    assert weights_read(mixtral) == "W(b)"
    assert crossover_equation(mixtral, TRAFFIC_EQUATION) == "SoK section 3.4, Table 4: s*(b) = W(b) / (b 2 L n_kv d_h w_kv)"
    # the capacity crossover holds every expert resident: P w_p stays
    assert crossover_equation(mixtral, CAPACITY_EQUATION) == "SoK section 3.4: s_cap(b) = (HBM - P w_p) / (b 2 L n_kv d_h w_kv)"
    assert intensity_equation(mixtral) == "SoK section 3.1: b (2P_active + 4 L n_q d_h s) / (W(b) + 2 b L n_kv d_h s w_kv)"


def test_mla_and_moe_together(catalog):
    deepseek = catalog.models["deepseek-v2"]
    assert intensity_equation(deepseek) == "SoK section 3.1: b (2P_active + 2 L n_q (2 d_c + d_r) s) / (W(b) + b L (d_c + d_r) s w_kv)"
    assert crossover_equation(deepseek, TRAFFIC_EQUATION) == "SoK section 3.4, Table 4: s*(b) = W(b) / (b L (d_c + d_r) w_kv)"


def test_a_layer_stack_sums_its_groups(catalog):
    stack = catalog.models["qwen3.5-397b-a17b"]
    assert kv_equation(stack) == ("SoK Eq. 1 per layer group: sum of 2 L_g n_kv,g d_h,g w_kv (key-value layers; 1 x "
                                  "where keys are values) and L_g (d_c + d_r) w_kv (latent layers), plus L_g d_I w_kv of "
                                  "index keys and a compressed layer's pooled entries per ratio of tokens, every caching "
                                  "layer counted")
    assert step_kv_formula(stack) == ("b (sum over groups of per-token bytes x positions held, s, min(s, W) or "
                                      "min(s, W) + s / ratio, + constant state)")
    assert crossover_equation(stack, TRAFFIC_EQUATION) == (
        "SoK section 3.4, Table 4: s*(b) = W(b) / (b 2 L n_kv d_h w_kv), solved on b (sum over groups of per-token "
        "bytes x positions held, s, min(s, W) or min(s, W) + s / ratio, + constant state)")
    assert ceiling_equation(stack, CEILING) == "R_inf = β_eff / (the per-token bytes of the growing layer groups) (SoK §3.3)"


def test_mla_with_index_keys_names_them(catalog):
    glm = catalog.models["glm-5"]  # a latent of 512 + 64 and an indexer key of 128 per token and layer, in fp8
    assert kv_equation(glm) == "SoK Eq. 1, Table 1 (MLA): L ((d_c + d_r) w_kv + d_I w_I)"
    assert crossover_equation(glm, TRAFFIC_EQUATION) == (
        "SoK section 3.4, Table 4: s*(b) = W(b) / (b L ((d_c + d_r) w_kv + d_I w_I))")
