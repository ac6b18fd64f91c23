"""CANONICAL-NUMBERS §4 (tier economics) and §5 (the four constraints, with numbers for stated scenarios)."""

from __future__ import annotations

from typing import Callable

from kvwall.canonical.document import Block, Row, Section, label, quantity
from kvwall.units import in_unit
from kvwall.model.equations import for_model, kv_equation, step_kv_formula
from kvwall.model.footprint import kv_bytes_per_token
from kvwall.tier.prefetch import simulate_scenario
from kvwall.inputs.reported import Reported
from kvwall.inputs.specs import LayerStack, Model, Sourced
from kvwall.tier.economics import block_bytes, linear_regenerate_time, move_time, regenerate_time
from kvwall.tier.inputs import TierSpecs
from kvwall.tier.constraints import capacity, hbm_side, hiding, ingress, slope_bandwidth, stored_weight_bytes

#: The two reported fits, by id prefix in config/reported/kv_slopes.yaml.
FITS = ("hf-sdpa", "vllm-fa2")


def _kv_of_tokens(model: Model, tokens: str) -> str:
    """The KV bytes of ``tokens`` tokens of one sequence, in the model's terms (window layers hold min(s, W))."""
    if model.attention.has_window or isinstance(model.attention, LayerStack):
        return f"{for_model(model, step_kv_formula(model))} at b = 1, s = {tokens}"
    return f"{kv_equation(model)} × {tokens}"


def _cited(sourced: Sourced, key: str) -> str:
    return f"{key} ({sourced.source})"


def _percent_label(fraction: float) -> str:
    return f"{in_unit(fraction, 'percent'):g}%"


def _economics_inputs(tiers: TierSpecs, catalog_files: dict) -> tuple[Row, ...]:
    e, file = tiers.economics, tiers.file
    model, device, workload = e.model, e.device, e.sequence_workload
    precision = tiers.compute_precision
    rows = [
        Row("Block", (quantity("s4.block-tokens", "Tokens per block", e.block_tokens, "tokens", 0, "assumption",
                               _cited(e.provenance["block"], f"{file} economics.block")),)),
        Row(f"Sequence ({workload.id.upper()} context)", (quantity(
            "s4.sequence-tokens", "Tokens per sequence", workload.context, "tokens", 0, "assumption",
            _cited(workload.provenance["context"], f"{catalog_files['workloads']} workloads.{workload.id}.context")),)),
        Row(f"{model.name} KV bytes per token", (quantity(
            "s4.kv-bytes-per-token", "KV bytes per token", kv_bytes_per_token(model, tiers.kv_bytes_per_element), "B", 0,
            "derived", f"{kv_equation(model)}; {catalog_files['models']} models.{model.id}; {catalog_files['assumptions']} kv_dtype"),)),
        Row(f"{model.name} weights P w_p", (quantity(
            "s4.weight-bytes", "Weight bytes", stored_weight_bytes(model, tiers.weight_bytes_per_param), "GB", 1,
            "derived", f"P w_p; {catalog_files['models']} models.{model.id}.params_nominal; {catalog_files['assumptions']} weight_dtype"),)),
        Row(f"{device.name} dense {precision.upper()}", (quantity(
            "s4.peak-flops", "Dense compute rate", device.dense_flops[precision], "TFLOP/s", 1, "spec",
            _cited(device.provenance[f"dense_flops.{precision}"], f"{catalog_files['devices']} devices.{device.id}.dense_flops.{precision}")),)),
    ]
    for i, mfu in enumerate(e.mfu):
        rows.append(Row(f"Model FLOP utilization {i + 1}", (quantity(
            f"s4.mfu.{i}", "MFU", mfu, "percent", 0, "assumption", _cited(e.provenance[f"mfu[{i}]"], f"{file} economics.mfu[{i}]")),)))
    for link in e.links:
        rows.append(Row(f"{link.name}", (quantity(
            f"s4.link.{link.id}", "Link bandwidth, one direction", link.bandwidth, "GB/s", 0, link.origin.evidence,
            _cited(link.origin, link.key)),)))
    return tuple(rows)


def _moving_against_regenerating(title: str, links, mfus, payload: str, verb: str, nbytes: float, move_unit: str,
                                 move_decimals: int, source: str, regenerate: Callable[[float], float], note: str) -> Block:
    """Per link: the time to move one ``payload`` of ``nbytes``, and the ``verb`` time over it at each stated MFU."""
    return Block(
        title=title,
        note=note,
        header="Link",
        columns=(f"Move one {payload}", *(f"{verb} / move at {_percent_label(m)} MFU" for m in mfus)),
        rows=tuple(
            Row(link.name, (
                quantity(f"s4.move-{payload}.{link.id}", f"Move one {payload}", move_time(nbytes, link.bandwidth), move_unit,
                         move_decimals, "derived", source),
                *(quantity(f"s4.{payload}-ratio.{link.id}.mfu{i}", f"{verb} over move, one {payload}",
                           regenerate(mfu) / move_time(nbytes, link.bandwidth), "×", 0, "derived", source)
                  for i, mfu in enumerate(mfus)),
            ))
            for link in links
        ),
    )


def economics_section(tiers: TierSpecs, catalog_files: dict) -> Section:
    """§4: moving a block (and a whole sequence) over each link against regenerating it, at each stated MFU."""
    e, file = tiers.economics, tiers.file
    model, device = e.model, e.device
    peak = device.dense_flops[tiers.compute_precision]
    block = block_bytes(model, e.block_tokens, tiers.kv_bytes_per_element)
    sequence = e.sequence_workload.context
    sequence_bytes = block_bytes(model, sequence, tiers.kv_bytes_per_element)
    inputs = f"inputs §4.1 ({file} economics)"
    block_rows = (
        Row("Block bytes", (quantity("s4.block-bytes", "KV bytes of one block", block, "MB", 2, "derived",
                                     f"{_kv_of_tokens(model, 'block tokens')}; {inputs}"),)),
        Row("Block bytes, binary units", (quantity("s4.block-bytes-mib", "KV bytes of one block", block, "MiB", 2, "derived",
                                                   f"{_kv_of_tokens(model, 'block tokens')}; {inputs}"),)),
        Row("Sequence bytes", (quantity("s4.sequence-bytes", "KV bytes of one sequence", sequence_bytes, "GB", 1, "derived",
                                        f"{_kv_of_tokens(model, 'sequence tokens')}; {inputs}"),)),
    )
    mfu_labels = [_percent_label(m) for m in e.mfu]
    regen_source = (f"FLOPs / (F · MFU): 2 P per token (linear term); SoK App. A causal prefill FLOPs of the block after "
                    f"the rest of the sequence, and of the whole sequence; {inputs}")
    regenerate = Block(
        title="Regenerating: one block, and one whole sequence",
        note="Linear term only, as the published comparison counts it; then with the attention term of a block at the "
        "end of the sequence, and the causal prefill of the whole sequence.",
        header="MFU",
        columns=("Block, linear term", "Block at the end of the sequence", "Whole sequence"),
        rows=tuple(
            Row(mfu_label, (
                quantity(f"s4.regenerate-block.mfu{i}", "Regenerate one block, linear term", linear_regenerate_time(model, e.block_tokens, peak, mfu), "ms", 2, "derived", regen_source),
                quantity(f"s4.regenerate-block-at-end.mfu{i}", "Regenerate one block at the end of the sequence", regenerate_time(model, e.block_tokens, sequence - e.block_tokens, peak, mfu), "ms", 2, "derived", regen_source),
                quantity(f"s4.recompute-sequence.mfu{i}", "Recompute the whole sequence", regenerate_time(model, sequence, 0.0, peak, mfu), "s", 1, "derived", regen_source),
            ))
            for i, (mfu, mfu_label) in enumerate(zip(e.mfu, mfu_labels))
        ),
    )
    block_source = f"block bytes / B_link; regenerate: 2 P per token / (F · MFU); {inputs}"
    move_block = _moving_against_regenerating(
        "Moving one block against regenerating it", e.links, e.mfu, "block", "Regenerate", block, "us", 1, block_source,
        lambda mfu: linear_regenerate_time(model, e.block_tokens, peak, mfu),
        note="Move time = block bytes / link bandwidth; the ratios divide the linear-term regenerate time at each MFU by it.")
    sequence_source = f"sequence bytes / B_link; recompute: SoK App. A prefill FLOPs / (F · MFU); {inputs}"
    move_sequence = _moving_against_regenerating(
        "Moving one sequence against recomputing it", e.links, e.mfu, "sequence", "Recompute", sequence_bytes, "s", 3, sequence_source,
        lambda mfu: regenerate_time(model, sequence, 0.0, peak, mfu),
        note="Move time = sequence bytes / link bandwidth; the ratios divide the causal-prefill recompute time at each MFU by it.")
    return Section(
        number=4,
        title="Tier economics",
        intro=f"Moving stored KV of {model.name} over a link against regenerating it on {device.name}, per block and "
        f"per {e.sequence_workload.id.upper()} sequence. Model FLOP utilization is an assumption, stated in §4.1; "
        "compute rates are dense.",
        blocks=(
            Block("Inputs", _economics_inputs(tiers, catalog_files)),
            Block("Bytes moved", block_rows),
            regenerate,
            move_block,
            move_sequence,
        ),
    )


def _scenario_inputs(tiers: TierSpecs, catalog_files: dict) -> tuple[Block, Block]:
    file = tiers.file
    tier_rows = [
        Row("Tier capacity", (quantity("s5.tier.capacity", "Tier capacity", tiers.capacity, "TB", 1, "assumption",
                                       _cited(tiers.provenance["tier.capacity"], f"{file} tier.capacity")),)),
        Row("Latency per transfer", (quantity("s5.tier.latency", "Latency per transfer", tiers.latency, "us", 1, "assumption",
                                              _cited(tiers.provenance["tier.latency"], f"{file} tier.latency")),)),
    ]
    for link in tiers.links.values():
        tier_rows.append(Row(link.name, (quantity(f"s5.link.{link.id}", "Link bandwidth, one direction", link.bandwidth, "GB/s", 0,
                                                  link.origin.evidence, _cited(link.origin, link.key)),)))
    scenario_rows = []
    for spec in tiers.scenarios.values():
        source = f"{file} scenarios.{spec.id}; {catalog_files['workloads']} workloads.{spec.workload.id}"
        p = spec.provenance
        scenario_rows.append(Row(spec.id, (
            label(f"s5.scenario.{spec.id}.setting", "Model on device", f"{spec.model.name} on {spec.device.name}", "assumption", source),
            quantity(f"s5.scenario.{spec.id}.batch", "Batch", spec.workload.batch, "count", 0, "assumption", source),
            quantity(f"s5.scenario.{spec.id}.context", "Context", spec.workload.context, "tokens", 0, "assumption", source),
            quantity(f"s5.scenario.{spec.id}.tier-fraction", "KV behind the link", p["residency.tier_fraction"].value, "percent", 1, "assumption", source),
            quantity(f"s5.scenario.{spec.id}.layers-per-transfer", "Layers per transfer", spec.residency.layers_per_transfer, "count", 0, "assumption", source),
            quantity(f"s5.scenario.{spec.id}.depth", "Prefetch depth (layers)", spec.prefetch.depth, "count", 0, "assumption", source),
            quantity(f"s5.scenario.{spec.id}.slack", "Slack before the step", spec.prefetch.slack, "us", 0, "assumption", source),
        )))
    scenario_block = Block(
        title="Scenarios",
        note="; ".join(f"{s.id}: {s.description}" for s in tiers.scenarios.values()) + ".",
        header="Scenario",
        columns=("Model on device", "Batch", "Context", "KV behind the link", "Layers per transfer", "Prefetch depth (layers)",
                 "Slack before the step"),
        rows=tuple(scenario_rows),
    )
    return Block("Tier and links", tuple(tier_rows)), scenario_block


def _slope_block(reported: dict[str, Reported]) -> Block:
    """Constraint 2 as measured elsewhere: the reported slopes and intercepts turned into bandwidths and ratios."""
    def r(key: str) -> Reported:
        return reported[key]

    def cite(*keys: str) -> str:
        return "derived from reported " + ", ".join(f"{k} ({r(k).file})" for k in keys)

    rows = []
    for fit in FITS:
        slope, intercept, weights = f"fit.{fit}.slope", f"fit.{fit}.intercept", "qwen2.5-7b.weights"
        rows.append(Row(r(f"fit.{fit}.framework").text, (
            quantity(f"s5.slope-bandwidth.{fit}", "KV bandwidth = 1 GiB / slope", slope_bandwidth(r(slope).value), "GB/s", 2, "derived",
                     "1 / b and weights / a; " + cite(slope, intercept, weights)),
            quantity(f"s5.fixed-path-bandwidth.{fit}", "Fixed-path bandwidth = weights / intercept", r(weights).value / r(intercept).value, "GB/s", 2, "derived",
                     "1 / b and weights / a; " + cite(slope, intercept, weights)),
            quantity(f"s5.fixed-over-kv.{fit}", "KV path cost per byte over the fixed path", r(weights).value / r(intercept).value / slope_bandwidth(r(slope).value), "×", 2, "derived",
                     "1 / b and weights / a; " + cite(slope, intercept, weights)),
        )))
    return Block(
        title="HBM-side bandwidth as measured: the reported slopes as bandwidths",
        note="A slope of b ms per GiB of KV is a KV read bandwidth of 1 GiB / b; an intercept a over the weight bytes is "
        "the fixed-path bandwidth. Computed from the reported values of §1, so derived, naming them.",
        header="Fit",
        columns=("KV bandwidth", "Fixed-path bandwidth", "KV cost per byte over fixed"),
        rows=tuple(rows),
    )


def slope_comparison(reported: dict[str, Reported]) -> dict[str, float]:
    """The ratios the reported measurement is summarised by, recomputed from its fits."""
    hf, vllm = (reported[f"fit.{f}.slope"].value for f in FITS)
    hf_a, vllm_a = (reported[f"fit.{f}.intercept"].value for f in FITS)
    return {
        "slope_ratio": vllm / hf,
        "slope_difference": vllm / hf - 1.0,
        "fixed_path_gain": hf_a / vllm_a - 1.0,
        "fixed_path_gain_of_faster": 1.0 - vllm_a / hf_a,
        "largest_inferred_over_copy": max(reported["qwen2.5-7b.weights"].value / a for a in (hf_a, vllm_a))
        / reported["gb10.copy-bandwidth"].value,
    }


def _slope_ratio_block(reported: dict[str, Reported]) -> Block:
    c = slope_comparison(reported)
    slopes = "fit.hf-sdpa.slope, fit.vllm-fa2.slope (config/reported/kv_slopes.yaml)"
    intercepts = "fit.hf-sdpa.intercept, fit.vllm-fa2.intercept (config/reported/kv_slopes.yaml)"
    return Block(
        title="HBM-side bandwidth as measured: how far apart the two frameworks are",
        rows=(
            Row("KV slope, vLLM over HuggingFace", (quantity("s5.slope-ratio", "Slope ratio", c["slope_ratio"], "×", 3, "derived",
                                                              f"b_vLLM / b_HF; derived from reported {slopes}"),)),
            Row("KV slopes apart", (quantity("s5.slope-difference", "Slope difference", c["slope_difference"], "percent", 1, "derived",
                                             f"b_vLLM / b_HF - 1; derived from reported {slopes}"),)),
            Row("Fixed-path bandwidth gain, HuggingFace to vLLM", (quantity(
                "s5.fixed-path-gain", "Fixed-path gain", c["fixed_path_gain"], "percent", 1, "derived",
                f"a_HF / a_vLLM - 1 (the weights cancel); derived from reported {intercepts}"),)),
            Row("Largest inferred bandwidth over achieved copy bandwidth", (quantity(
                "s5.inferred-over-copy", "Inferred over copy bandwidth", c["largest_inferred_over_copy"], "×", 2, "derived",
                "max(weights / a) / copy bandwidth (above 1 would be a measurement bug); derived from reported "
                "qwen2.5-7b.weights, fit.*.intercept, gb10.copy-bandwidth (config/reported/kv_slopes.yaml)"),)),
        ),
    )


def _verdict(holds: bool, hidden: bool) -> str:
    return f"{'sustained' if holds else 'not sustained'}; {'hidden' if hidden else 'stalls'}"


def constraints_section(tiers: TierSpecs, catalog_files: dict, reported: dict[str, Reported]) -> Section:
    """§5: capacity, HBM-side bandwidth, tier ingress and transfer latency for every scenario at every link."""
    tier_block, scenario_block = _scenario_inputs(tiers, catalog_files)
    first_link = next(iter(tiers.links))
    capacity_rows, hbm_rows, ingress_rows, hiding_rows, simulation_rows = [], [], [], [], []
    for sid in tiers.scenarios:
        s = tiers.scenario(sid, first_link)
        inputs = f"inputs §5.1-5.2 (scenario {sid})"
        c, h = capacity(s), hbm_side(s)
        src = f"kvwall.tier.constraints.capacity: (HBM - P w_p - staging) / ((1 - f) kv/token), tier capacity / (f kv/token); {inputs}"
        capacity_rows.append(Row(sid, (
            quantity(f"s5.capacity.{sid}.tokens-without", "KV tokens resident without the tier", c.tokens_without, "tokens", 0, "derived", src),
            quantity(f"s5.capacity.{sid}.tokens-with", "KV tokens resident with the tier", c.tokens_with, "tokens", 0, "derived", src),
            quantity(f"s5.capacity.{sid}.sequences-without", "Whole sequences without the tier", c.sequences_without, "count", 0, "derived", src),
            quantity(f"s5.capacity.{sid}.sequences-with", "Whole sequences with the tier", c.sequences_with, "count", 0, "derived", src),
            label(f"s5.capacity.{sid}.verdict", "Capacity", "relieved" if c.relieved else "not relieved", "derived", src),
        )))
        src = for_model(s.model, f"kvwall.tier.constraints.hbm_side: T_step = max((P w_p + b kv/token s) / β_striped, "
                                 f"F_step / F) (SoK §3.3); {inputs}")
        hbm_rows.append(Row(sid, (
            quantity(f"s5.hbm.{sid}.read-bytes", "HBM bytes read per step, with or without the tier", h.read_bytes, "GB", 1, "derived", src),
            quantity(f"s5.hbm.{sid}.step-time", "Step time, with or without the tier", h.step_time, "ms", 2, "derived", src),
            quantity(f"s5.hbm.{sid}.tier-writes", "Prefetched KV written into HBM per step", h.tier_write_bytes, "GB", 2, "derived", src),
            label(f"s5.hbm.{sid}.verdict", "HBM-side bandwidth", "unchanged", "derived", src),
        )))
        for lid, link in tiers.links.items():
            s = tiers.scenario(sid, lid)
            inputs = f"inputs §5.1-5.2 (scenario {sid}, link {lid})"
            g, d, t = ingress(s), hiding(s), simulate_scenario(s)
            row = f"{sid} at {in_gbps(link.bandwidth)}"
            src = f"kvwall.tier.constraints.ingress: f · b kv/token s / T_step <= B_link; {inputs}"
            ingress_rows.append(Row(row, (
                quantity(f"s5.ingress.{sid}.{lid}.bytes", "KV across the link per step", g.bytes_per_step, "GB", 2, "derived", src),
                quantity(f"s5.ingress.{sid}.{lid}.required", "Required ingress rate", g.required_rate, "GB/s", 1, "derived", src),
                label(f"s5.ingress.{sid}.{lid}.verdict", "Sustainability", "holds" if g.holds else "fails", "derived", src),
                quantity(f"s5.ingress.{sid}.{lid}.max-fraction", "Largest fraction of active KV behind the link", g.max_fraction, "percent", 2, "derived", src),
                quantity(f"s5.ingress.{sid}.{lid}.link-bound-step", "Step time if the link sets the pace", g.link_bound_step_time, "ms", 2, "derived", src),
            )))
            worst = int((d.times - d.windows).argmax())
            src = f"kvwall.tier.constraints.hiding: latency + size / B_link <= overlapped compute + slack, per transfer; {inputs}"
            hiding_rows.append(Row(row, (
                quantity(f"s5.hiding.{sid}.{lid}.transfers", "Transfers per step", len(d.layers), "count", 0, "derived", src),
                quantity(f"s5.hiding.{sid}.{lid}.worst-time", "Tightest transfer: time", d.times[worst], "us", 0, "derived", src),
                quantity(f"s5.hiding.{sid}.{lid}.worst-window", "Tightest transfer: window", d.windows[worst], "us", 0, "derived", src),
                quantity(f"s5.hiding.{sid}.{lid}.late", "Transfers longer than their window", d.late_transfers, "count", 0, "derived", src),
                label(f"s5.hiding.{sid}.{lid}.verdict", "Hiding", "holds" if d.all_hidden else "fails", "derived", src),
            )))
            src = f"kvwall.tier.prefetch.simulate: one step, FIFO link, compute waits on each transfer; {inputs}"
            simulation_rows.append(Row(row, (
                quantity(f"s5.simulation.{sid}.{lid}.step-time", "Simulated step time", t.step_time, "ms", 2, "derived", src),
                quantity(f"s5.simulation.{sid}.{lid}.stall", "Time lost to stalls", t.stall_time, "ms", 2, "derived", src),
                quantity(f"s5.simulation.{sid}.{lid}.stalled", "Transfers that stall compute", t.late_transfers, "count", 0, "derived", src),
                quantity(f"s5.simulation.{sid}.{lid}.utilization", "Link utilization", t.link_utilization, "percent", 0, "derived", src),
                quantity(f"s5.simulation.{sid}.{lid}.queue-wait", "Longest wait for the link", float(t.queue_waits.max(initial=0.0)), "us", 0, "derived", src),
                label(f"s5.simulation.{sid}.{lid}.verdict", "Outcome", _verdict(g.holds, t.late_transfers == 0), "derived", src),
            )))
    return Section(
        number=5,
        title="The four constraints",
        intro="Capacity is relieved by a tier, HBM-side bandwidth is unchanged, tier-ingress bandwidth (sustainability, "
        "an aggregate over the decode set) and transfer latency (hiding, per transfer) are created. Each stated scenario "
        "is evaluated at each link of §5.1; the simulation adds what neither check sees alone: contention on the link "
        "and stalls that delay later layers.",
        blocks=(
            tier_block,
            scenario_block,
            Block("Constraint 1, capacity (relieved)", tuple(capacity_rows), header="Scenario",
                  columns=("Tokens without tier", "Tokens with tier", "Sequences without", "Sequences with", "Capacity")),
            Block("Constraint 2, HBM-side bandwidth (unchanged)", tuple(hbm_rows), header="Scenario",
                  note="Attention reads all the active KV out of HBM every step wherever it is stored between steps; "
                  "the tier only adds the prefetched bytes written into HBM.",
                  columns=("HBM bytes read per step", "Step time", "Tier writes into HBM per step", "HBM-side bandwidth")),
            _slope_block(reported),
            _slope_ratio_block(reported),
            Block("Constraint 3, tier ingress: sustainability (created)", tuple(ingress_rows), header="Scenario at link",
                  columns=("KV across the link per step", "Required rate", "Sustainability", "Largest fraction behind the link",
                           "Step time if link-bound")),
            Block("Constraint 4, transfer latency: hiding (created)", tuple(hiding_rows), header="Scenario at link",
                  note="Each transfer alone against its window: the compute it overlaps, plus the slack before the step "
                  "for the first ones. The tightest transfer is the one with the least margin.",
                  columns=("Transfers per step", "Tightest transfer time", "Its window", "Transfers over their window", "Hiding")),
            Block("Prefetch simulation", tuple(simulation_rows), header="Scenario at link",
                  columns=("Step time", "Stall time", "Transfers that stall", "Link utilization", "Longest queue wait", "Outcome")),
        ),
    )


def in_gbps(bandwidth: float) -> str:
    """A link rate as a row label: '64 GB/s'."""
    return f"{in_unit(bandwidth, 'GB/s'):g} GB/s"
