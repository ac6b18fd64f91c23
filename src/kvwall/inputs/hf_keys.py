"""The keys of a Hugging Face ``config.json``, as data: the keys kvwall reads (``READ``: their meaning shared by the
reference readers, transformers' configuration classes and vLLM's and SGLang's model files), the keys known not to
change the cache or the weights (``NOT_CACHE``), and the rest it refuses (``REFUSED``): a key read only as one named
family reads it, for any other architecture, and a key never modelled, for every one.

An architecture kvwall does not name (its ``model_type``) is read by the convention its fields follow (``convention``)
when every key it gives is read or known not to matter; a key of a named family, or one in no table, could change
the cache and is refused with the key named (``refused_key``). The tables cover every key of every config of the
shared corpus (tests/test_hf_keys.py).
"""

from __future__ import annotations

from typing import Mapping

#: Keys read wherever they appear, with what they give (their meaning in LlamaConfig, DeepseekV3Config,
#: NemotronHConfig, Qwen3NextConfig and vLLM's model files alike).
READ = {
    "model_type": "the architecture", "text_config": "a multimodal wrapper's language model",
    "num_hidden_layers": "layer count", "hidden_size": "model width", "num_attention_heads": "query heads",
    "num_key_value_heads": "KV heads (absent: one per query head)", "head_dim": "head size (absent: width / heads)",
    "vocab_size": "embedding rows", "intermediate_size": "dense MLP width", "tie_word_embeddings": "one embedding matrix",
    "max_position_embeddings": "longest context", "quantization_config": "weight and KV formats",
    "torch_dtype": "unquantized weight dtype", "dtype": "unquantized weight dtype",
    "layer_types": "kind of each layer", "sliding_window": "window of the sliding layers",
    "use_sliding_window": "sliding layers without layer_types (refused)",
    "swa_num_key_value_heads": "KV heads of the sliding layers", "swa_head_dim": "head size of the sliding layers",
    "swa_num_attention_heads": "query heads of the sliding layers", "swa_v_head_dim": "value size of the sliding layers",
    "hybrid_layer_pattern": "sliding (1) or full (0) per layer",
    "full_attention_interval": "every k-th layer full, the rest linear attention (without layer_types)",
    "sliding_window_size": "window of the sliding layers",
    "num_experts_per_token": "experts per token", "num_shared_experts": "shared experts",
    "kv_lora_rank": "MLA latent rank", "q_lora_rank": "MLA query rank", "qk_rope_head_dim": "MLA rotary key size",
    "qk_nope_head_dim": "MLA key size", "v_head_dim": "MLA value size",
    "index_head_dim": "indexer key size", "index_n_heads": "indexer query heads", "index_topk": "positions attended",
    "num_local_experts": "routed experts", "n_routed_experts": "routed experts", "num_experts": "routed experts",
    "num_experts_per_tok": "experts per token", "moe_intermediate_size": "expert width",
    "n_shared_experts": "shared experts", "shared_expert_intermediate_size": "shared expert width",
    "shared_intermediate_size": "shared expert width", "first_k_dense_replace": "leading dense layers",
    "moe_layer_freq": "MoE layers (0/1 per layer, or 1)", "decoder_sparse_step": "MoE every k-th layer (1)",
    "mlp_only_layers": "dense layers among MoE layers (refused when listed)",
    "dense_intermediate_size": "dense MLP width of an MoE model",
    "linear_num_key_heads": "Gated DeltaNet key heads", "linear_num_value_heads": "Gated DeltaNet value heads",
    "linear_key_head_dim": "Gated DeltaNet key size", "linear_value_head_dim": "Gated DeltaNet value size",
    "linear_conv_kernel_dim": "Gated DeltaNet convolution width",
    "linear_attn_config": "Kimi Delta Attention layers, heads, head size and convolution width",
    "hybrid_override_pattern": "Mamba-hybrid block letters", "layers_block_type": "Mamba-hybrid block names",
    "mamba_num_heads": "Mamba-2 heads", "mamba_head_dim": "Mamba-2 head size", "ssm_state_size": "Mamba-2 state size",
    "n_groups": "Mamba-2 groups", "conv_kernel": "Mamba-2 convolution width", "mlp_hidden_act": "expert activation",
    "moe_shared_expert_intermediate_size": "shared expert width", "moe_latent_size": "expert latent width",
    "attn_output_gate": "gated attention output (weights)", "num_kv_shared_layers": "layers reusing a cache (refused)",
    "hidden_size_per_layer_input": "per-layer input embeddings (refused)", "enable_moe_block": "MoE beside the MLP",
    "expert_intermediate_size": "expert width (Gemma 4)", "top_k_experts": "experts per token (Gemma 4)",
    "attention_chunk_size": "chunk of the chunked layers", "interleave_moe_layer_step": "MoE every k-th layer",
    "intermediate_size_mlp": "dense MLP width of an MoE model", "moe_layer_frequency": "MoE every k-th layer",
    "use_residual": "a dense MLP beside the experts",
}

#: Keys that change neither what a layer caches nor the weights kvwall counts, with why.
NOT_CACHE = dict.fromkeys((
    "_name_or_path", "architectures", "auto_map", "transformers_version", "tokenizer_class", "prefix", "finetuning_task",
    "id2label", "label2id", "problem_type", "task_specific_params", "torchscript", "return_dict", "pruned_heads",
    "add_cross_attention", "cross_attention_hidden_size", "is_decoder", "is_encoder_decoder", "tie_encoder_decoder",
    "decoder_start_token_id", "chunk_size_feed_forward", "tf_legacy_loss", "use_bfloat16", "output_attentions",
    "output_hidden_states", "output_scores", "output_router_logits", "return_dict_in_generate", "use_cache",
    "initializer_range", "language_model_only", "num_logits_to_keep", "ignore_index", "model_max_length",
    "parallel_attn_mlp_res"),
    "bookkeeping of the configuration class or the checkpoint")
NOT_CACHE.update(dict.fromkeys((
    "bos_token_id", "eos_token_id", "pad_token_id", "sep_token_id", "image_token_id", "video_token_id",
    "audio_token_id", "boa_token_id", "boi_token_id", "eoa_token_id", "eoa_token_index", "eoi_token_id",
    "media_placeholder_token_id", "video_placeholder", "vision_start_token_id", "vision_end_token_id",
    "vision_soft_tokens_per_image", "use_unified_vision_chunk", "vision_config", "audio_config"),
    "token ids and encoders outside the language model"))
NOT_CACHE.update(dict.fromkeys((
    "bad_words_ids", "begin_suppress_tokens", "suppress_tokens", "diversity_penalty", "do_sample", "early_stopping",
    "encoder_no_repeat_ngram_size", "exponential_decay_length_penalty", "forced_bos_token_id", "forced_eos_token_id",
    "length_penalty", "max_length", "min_length", "no_repeat_ngram_size", "num_beam_groups", "num_beams",
    "num_return_sequences", "remove_invalid_values", "repetition_penalty", "temperature", "top_k", "top_p",
    "typical_p"), "generation defaults"))
NOT_CACHE.update(dict.fromkeys((
    "attention_dropout", "hidden_dropout", "aux_loss_alpha", "router_aux_loss_coef", "router_jitter_noise", "seq_aux",
    "pretraining_tp", "ep_size", "rescale_prenorm_residual", "time_step_floor", "time_step_limit", "time_step_max",
    "time_step_min", "use_mamba_kernels", "chunk_size", "expand", "use_bidirectional_attention"),
    "training or kernel settings"))
NOT_CACHE.update(dict.fromkeys((
    "rope_theta", "rope_scaling", "rope_parameters", "rope_interleave", "partial_rotary_factor", "rotary_dim",
    "use_mrope", "initial_context_length", "compress_rope_theta", "indexer_rope_interleave", "swa_rope_theta",
    "mla_use_nope"),
    "rotary positions: the rotated sizes are the head sizes read"))
NOT_CACHE.update(dict.fromkeys((
    "rms_norm_eps", "norm_eps", "layer_norm_epsilon", "layernorm_epsilon", "use_qk_norm", "qk_norm_type", "use_gemma_norm",
    "residual_in_fp32", "hc_eps", "hidden_act", "hidden_activation", "mamba_hidden_act", "swiglu_alpha",
    "swiglu_limit", "final_logit_softcapping", "attention_bias", "mlp_bias", "qkv_bias", "use_bias", "use_conv_bias",
    "mamba_proj_bias", "add_swa_attention_sink_bias", "add_full_attention_sink_bias", "attention_value_scale"),
    "norms, activations, biases, attention sinks and scales (under 0.1% of the weights, nothing cached)"))
NOT_CACHE.update(dict.fromkeys((
    "norm_topk_prob", "routed_scaling_factor", "scoring_func", "topk_method", "n_group", "topk_group",
    "use_routing_bias", "moe_router_dtype", "moe_shared_expert_overlap", "expert_dtype", "moe_renormalize",
    "moe_router_activation_func", "num_expert_group", "use_grouped_topk", "moe_train_capacity_factor",
    "moe_eval_capacity_factor", "moe_min_capacity", "moe_token_dropping", "enable_expert_tensor_parallelism"),
    "how the router scores experts, not how many or how large"))
NOT_CACHE.update(dict.fromkeys((
    "num_nextn_predict_layers", "num_mtp_modules", "mtp_transformer_layers", "use_mtp", "mtp_num_hidden_layers",
    "mtp_use_dedicated_embeddings", "mtp_hybrid_override_pattern", "mtp_layers_block_type",
    "index_share_for_mtp_iteration"),
    "multi-token-prediction layers, a draft beside the model, not counted"))
NOT_CACHE.update(dict.fromkeys(("mamba_ssm_cache_dtype", "mamba_ssm_dtype"),
                               "the state dtype is an assumption (config/assumptions.yaml state_dtype)"))
NOT_CACHE.update(dict.fromkeys(("max_window_layers",), "read by Qwen2 only with use_sliding_window, which is read"))
NOT_CACHE.update(dict.fromkeys(("qk_head_dim",), "qk_nope_head_dim + qk_rope_head_dim, both read"))

#: Keys read only as the named family's reader reads them: an architecture kvwall does not name is refused on them.
FAMILY_ONLY = {
    **dict.fromkeys(("compress_ratios", "o_groups", "o_lora_rank", "num_hash_layers", "hc_mult", "hc_sinkhorn_iters"),
                    "deepseek_v4"),
    **dict.fromkeys(("global_head_dim", "num_global_key_value_heads", "attention_k_eq_v", "use_double_wide_mlp",
                     "vocab_size_per_layer_input"), "gemma4_text"),
    **dict.fromkeys(("no_rope_layers", "no_rope_layer_interval"), "llama4_text"),
    **dict.fromkeys(("sparse_attention_config", "attention_output_gate", "attn_type_list"), "minimax_m3"),
    **dict.fromkeys(("index_topk_freq", "index_topk_pattern", "indexer_types", "mlp_layer_types",
                     "index_skip_topk_offset"), "glm_moe_dsa"),
    "block_configs": "nemotron-nas", "output_gate_type": "qwen3_5_text",
    "experts_per_token": "gpt_oss",
}
#: Keys that change what a layer caches in ways kvwall does not model, refused whatever the architecture.
NOT_MODELLED = {"kv_lora_rank_per_layer": "per-layer latent ranks are not read"}
#: The refused keys: a named family's keys (for any other architecture) and the keys never modelled, with why.
REFUSED = {**{key: f"read only for model_type {family!r}: its meaning is that family's"
              for key, family in FAMILY_ONLY.items()}, **NOT_MODELLED}

#: The convention an architecture kvwall does not name is read by, chosen by the keys that mark it, in this order.
CONVENTIONS = (
    ("hybrid_override_pattern", "mamba hybrid", "NemotronHConfig's field names"),
    ("layers_block_type", "mamba hybrid", "NemotronHConfig's field names"),
    ("linear_attn_config", "delta hybrid", "KimiLinearConfig's field names"),
    ("kv_lora_rank", "mla", "DeepseekV3Config's field names"),
    (None, "gqa", "LlamaConfig's field names"),
)


def convention(config: Mapping) -> tuple[str, str]:
    """The family and the convention an unnamed architecture's config is read by (the first marking key it holds)."""
    return next((family, names) for key, family, names in CONVENTIONS if key is None or config.get(key) is not None)


def refused_key(config: Mapping) -> tuple[str, str] | None:
    """The first key (sorted) of an unnamed architecture's config that could change the cache and is not read by
    convention, with why; None where every key is read or known not to matter."""
    for key in sorted(config):
        if key in READ or key in NOT_CACHE:
            continue
        if key in REFUSED:
            return key, REFUSED[key]
        return key, "not understood: it could change the cache (kvwall reads no such key)"
    return None


def unknown_keys(config: Mapping) -> list[str]:
    """The keys of a config in none of the tables, sorted."""
    return sorted(k for k in config if k not in READ and k not in NOT_CACHE and k not in REFUSED)
