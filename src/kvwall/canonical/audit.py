"""CANONICAL-NUMBERS §7: where published numbers and ours disagree, and why.

Three sources of published numbers: the SoK's printed numbers (the reproduction audit, tables/audit/reproduction.csv),
the claims made about the reported KV-slope measurement, and the published tier economics. Every one that kvwall
can derive from its inputs is recomputed; a published number agrees when ours rounds to it at its printed precision.
"""

from __future__ import annotations

from decimal import Decimal

import pandas as pd

from kvwall.canonical.document import AuditEntry, Number, label, quantity
from kvwall.units import in_unit
from kvwall.canonical.measured import as_reported
from kvwall.canonical.tiers import FITS, slope_comparison
from kvwall.inputs.catalog import Catalog
from kvwall.model.equations import kv_equation
from kvwall.model.footprint import kv_bytes_per_token
from kvwall.inputs.reported import Reported
from kvwall.tier.economics import block_bytes, linear_regenerate_time, move_time
from kvwall.tier.inputs import TierSpecs
from kvwall.tier.constraints import slope_bandwidth, stored_weight_bytes
from kvwall.units import parse_tokens

AGREES, DIFFERS = "agrees", "differs"

#: Published fetch times and the tier link each was computed for (config/tiers.yaml links).
FETCH_LINKS = {"economics.fetch-121": "cxl-3-x16", "economics.fetch-64": "cxl-mid", "economics.fetch-32": "cxl-low"}
#: Published regenerate times and the published MFU each was computed at.
RECOMPUTE_MFU = {"economics.recompute-mfu50": "economics.mfu-high", "economics.recompute-mfu40": "economics.mfu-mid",
                 "economics.recompute-mfu25": "economics.mfu-low"}
#: The published move-versus-regenerate example: its ratio, numerator, and the fetch time it divides by.
EXAMPLE = ("economics.move-vs-regenerate-example", "economics.example-recompute", "economics.fetch-64")


def printed_decimals(given: float) -> int:
    """Decimals a published number is printed with: 65.7 -> 1, 82 -> 0."""
    return max(0, -Decimal(repr(float(given))).normalize().as_tuple().exponent)


def rounds_to(ours: float, published: float) -> bool:
    """True when ``ours`` rounds to ``published`` at the published precision."""
    half_step = 0.5 * 10.0 ** -printed_decimals(published)
    return abs(ours - published) <= half_step * (1 + 1e-9)


def _ours(entry_id: str, published: Reported, base_value: float, source: str) -> Number:
    """Our value (base units) in the published unit, shown with one decimal more than the published number."""
    return quantity(f"s7.{entry_id}.ours", published.note or published.id, base_value, published.unit,
                    printed_decimals(published.given) + 1, "derived", source)


def _compare(entry_id: str, claim: str, published: Reported, base_value: float, source: str, reason: str,
             agrees: bool | None = None, working: tuple[Number, ...] = ()) -> AuditEntry:
    """Published against ours (base units); agrees when ours rounds to the published number, unless told otherwise."""
    if agrees is None:
        agrees = rounds_to(in_unit(base_value, published.unit), published.given)
    return AuditEntry(f"s7.{entry_id}", claim, as_reported(published, f"s7.{entry_id}.published"),
                      _ours(entry_id, published, base_value, source), AGREES if agrees else DIFFERS, reason, working)


def _reproduces(base_value: float, published: Reported) -> str:
    """Words for whether a value recomputed the source's way rounds to the published one."""
    if rounds_to(in_unit(base_value, published.unit), published.given):
        return "gives the published figure"
    return "still does not give the published figure"


def _working(entry_id: str, key: str, name: str, base_value: float, unit: str, decimals: int, source: str) -> Number:
    """A derived value a reason rests on, shown beside the audit as working."""
    return quantity(f"s7.{entry_id}.working.{key}", name, base_value, unit, decimals, "derived", source)


def slope_audit(reported: dict[str, Reported], catalog: Catalog) -> list[AuditEntry]:
    """The claims about the KV-slope measurement, recomputed from its own fits."""
    r = reported
    file = r["claim.slopes-within"].file
    c = slope_comparison(reported)
    slopes = {f: r[f"fit.{f}.slope"] for f in FITS}
    intercepts = {f: r[f"fit.{f}.intercept"] for f in FITS}
    weights = r["qwen2.5-7b.weights"]
    entries = []

    published = r["claim.slopes-within"]
    entries.append(_compare(
        "slopes-within", "Difference between the KV slopes of the two frameworks", published, c["slope_difference"],
        f"b_vLLM / b_HF - 1; derived from reported fit.*.slope ({file})",
        "The two kernels of the figure are two frameworks (different attention kernels, paged and unpaged KV) on "
        "unified LPDDR5X, not HBM.",
        agrees=in_unit(c["slope_difference"], published.unit) <= published.given,
    ))
    for fit in FITS:
        framework = r[f"fit.{fit}.framework"].text
        entries.append(_compare(
            f"kv-bandwidth.{fit}", f"Inferred KV bandwidth, {framework}", r[f"fit.{fit}.kv-bandwidth"],
            slope_bandwidth(slopes[fit].value), f"1 GiB / b; derived from reported fit.{fit}.slope ({file})",
            "One binary GiB over the slope (kvwall.units)."))
        entries.append(_compare(
            f"fixed-path-bandwidth.{fit}", f"Inferred fixed-path bandwidth, {framework}", r[f"fit.{fit}.fixed-path-bandwidth"],
            weights.value / intercepts[fit].value,
            f"weights / a; derived from reported qwen2.5-7b.weights, fit.{fit}.intercept ({file})",
            "The fp16 weight bytes over the fit's intercept."))

    published = r["claim.fixed-path-improvement"]
    stated = {f: r[f"fit.{f}.fixed-path-bandwidth"].value for f in FITS}
    entries.append(_compare(
        "fixed-path-improvement", "Fixed-path bandwidth improvement between the two frameworks", published,
        c["fixed_path_gain"], f"a_HF / a_vLLM - 1; derived from reported fit.*.intercept ({file})",
        "No reading of the stated numbers gives the published figure: not the intercepts (ours), not the stated "
        "bandwidths, not the change against the faster path (working).",
        working=(
            _working("fixed-path-improvement", "stated", "From the stated bandwidths", stated["vllm-fa2"] / stated["hf-sdpa"] - 1,
                     "percent", 1, f"B_vLLM / B_HF - 1; derived from reported fit.*.fixed-path-bandwidth ({file})"),
            _working("fixed-path-improvement", "faster", "Against the faster path", c["fixed_path_gain_of_faster"], "percent", 1,
                     f"1 - a_vLLM / a_HF; derived from reported fit.*.intercept ({file})"),
        ),
    ))

    hf_ratio = weights.value / intercepts["hf-sdpa"].value / slope_bandwidth(slopes["hf-sdpa"].value)
    entries.append(_compare(
        "kv-path-cost-ratio", "KV path cost per byte over the fixed path", r["claim.kv-path-cost-ratio"],
        weights.value / intercepts["vllm-fa2"].value / slope_bandwidth(slopes["vllm-fa2"].value),
        f"(weights / a) / (1 GiB / b), vLLM fit; derived from reported qwen2.5-7b.weights, fit.vllm-fa2.* ({file})",
        "Stated for the vLLM fit; the HuggingFace fit gives another (working).",
        working=(_working("kv-path-cost-ratio", "hf", "HuggingFace fit", hf_ratio, "ratio", 2,
                          f"(weights / a) / (1 GiB / b), HuggingFace fit; derived from reported qwen2.5-7b.weights, "
                          f"fit.hf-sdpa.* ({file})"),),
    ))
    entries.append(_compare(
        "copy-fraction", "Achieved copy bandwidth over the GB10 specification", r["gb10.copy-fraction-of-spec"],
        r["gb10.copy-bandwidth"].value / r["gb10.memory-bandwidth-spec"].value,
        f"copy / spec bandwidth; derived from reported gb10.* ({file})", "Achieved over specified bandwidth."))

    model, a = catalog.models["qwen2.5-7b"], catalog.assumptions
    per_token = kv_bytes_per_token(model, a.kv_bytes_per_element)
    entries.append(_compare(
        "qwen-kv-per-token", "Qwen2.5-7B KV bytes per token", r["qwen2.5-7b.kv-per-token"], per_token,
        f"{kv_equation(model)}; {catalog.files['models']} models.qwen2.5-7b", "From the model's published config."))
    entries.append(_compare(
        "qwen-weights", "Qwen2.5-7B weight bytes", r["qwen2.5-7b.weights"], stored_weight_bytes(model, a.weight_bytes_per_param),
        f"P w_p; {catalog.files['models']} models.qwen2.5-7b.params_nominal", "Nominal parameter count at fp16's bytes per parameter."))

    batch = r["throughput.batch"].value
    for point, context_id in (("throughput.batch16-context4k", "throughput.context-short"),
                              ("throughput.batch16-context16k", "throughput.context-long")):
        published = r[point]
        context = parse_tokens(r[context_id].text, a.tokens_per_k)
        kv = batch * context * per_token
        rate = {fit: batch / (intercepts[fit].value + slopes[fit].value * kv) for fit in FITS}
        entry_id = point.split(".", 1)[1]
        kv_source = (f"KV = b s kv/token; derived from reported throughput.* ({file}), {catalog.files['models']} "
                     f"models.qwen2.5-7b, {catalog.files['assumptions']} tokens_per_k")
        entries.append(_compare(
            entry_id, f"Throughput at batch {batch:g} and {r[context_id].text} context", published, rate["vllm-fa2"],
            f"b / (a + slope · KV), KV = b s kv/token, vLLM fit; derived from reported throughput.*, fit.vllm-fa2.* ({file}); "
            f"{catalog.files['models']} models.qwen2.5-7b; {catalog.files['assumptions']} tokens_per_k",
            "The point lies off both fit lines (ours: the vLLM fit; working: the step's KV and the HuggingFace fit), and "
            "the source does not say which framework measured it.",
            agrees=any(rounds_to(in_unit(v, published.unit), published.given) for v in rate.values()),
            working=(
                _working(entry_id, "context", "Context of the step", context, "tokens", 0, kv_source),
                _working(entry_id, "kv", "KV read by the step", kv, "GiB", 2, kv_source),
                _working(entry_id, "hf", "HuggingFace fit", rate["hf-sdpa"], published.unit, 1,
                         f"b / (a + slope · KV), HuggingFace fit; derived from reported fit.hf-sdpa.* ({file}); {kv_source}"),
            ),
        ))
    return entries


def economics_audit(reported: dict[str, Reported], catalog: Catalog, tiers: TierSpecs) -> list[AuditEntry]:
    """The published tier economics, recomputed with the same inputs except the compute rate, which is the spec's."""
    r, e = reported, tiers.economics
    model, device, precision = e.model, e.device, tiers.compute_precision
    peak = device.dense_flops[precision]
    published_peak = r["economics.h100-bf16-dense"]
    block = block_bytes(model, e.block_tokens, tiers.kv_bytes_per_element)
    inputs = f"inputs §4.1 ({tiers.file} economics)"
    links = {link.id: link for link in e.links}
    entries = [
        _compare("economics-kv-per-token", f"{model.name} KV bytes per token", r["economics.kv-per-token"],
                 kv_bytes_per_token(model, tiers.kv_bytes_per_element), f"Eq. 1; {catalog.files['models']} models.{model.id}",
                 "The same bytes in binary units."),
        _compare("economics-block", f"Bytes of a {e.block_tokens:g}-token block", r["economics.block-size"], block,
                 f"Eq. 1 × block tokens; {inputs}", "Ours is the same bytes in binary units; the working gives them in decimal units.",
                 working=(_working("economics-block", "mb", "The block in decimal units", block, "MB", 2, f"Eq. 1 × block tokens; {inputs}"),)),
    ]
    for reported_id, link_id in FETCH_LINKS.items():
        link = links[link_id]
        entries.append(_compare(f"economics-fetch.{link_id}", f"Move one block over {link.name}", r[reported_id],
                                float(move_time(block, link.bandwidth)), f"block bytes / B_link; {inputs}",
                                "Block bytes over the link rate."))

    def regenerate(mfu: float, rate: float) -> float:
        return float(linear_regenerate_time(model, e.block_tokens, rate, mfu))

    at_source_rate = f"2 P per token / (F · MFU) with F the source's rate; derived from reported economics.h100-bf16-dense ({r['economics.h100-bf16-dense'].file}); {inputs}"
    for reported_id, mfu_id in RECOMPUTE_MFU.items():
        published, mfu = r[reported_id], r[mfu_id].value
        entry_id = f"economics-regenerate.{mfu_id.rsplit('-', 1)[1]}"
        entries.append(_compare(
            entry_id, f"Regenerate one block, linear term, at {in_unit(mfu, 'percent'):g}% MFU", published,
            regenerate(mfu, peak), f"2 P per token / (F · MFU); {inputs}",
            f"The source divides by a rate it calls BF16 dense, a fraction of the {device.name}'s dense "
            f"{precision.upper()} rate (last row): the dense rate halved as if it were a sparse one. At the "
            f"source's rate the same formula {_reproduces(regenerate(mfu, published_peak.value), published)} (working).",
            working=(_working(entry_id, "at-source-rate", "Ours at the source's rate", regenerate(mfu, published_peak.value),
                              published.unit, 2, at_source_rate),),
        ))

    ratio_id, numerator_id, fetch_id = EXAMPLE
    mfu = min(r[m].value for m in RECOMPUTE_MFU.values())
    link = links[FETCH_LINKS[fetch_id]]
    move = float(move_time(block, link.bandwidth))
    published = r[numerator_id]
    entries.append(_compare(
        "economics-example-regenerate", f"Regenerate time in the move-versus-regenerate example ({in_unit(mfu, 'percent'):g}% MFU)",
        published, regenerate(mfu, peak), f"2 P per token / (F · MFU); {inputs}",
        f"At the source's rate the same formula {_reproduces(regenerate(mfu, published_peak.value), published)} (working).",
        working=(_working("economics-example-regenerate", "at-source-rate", "Ours at the source's rate",
                          regenerate(mfu, published_peak.value), published.unit, 2, at_source_rate),),
    ))
    entries.append(_compare(
        "economics-example-ratio", f"Regenerate over move, one block, {link.name}, {in_unit(mfu, 'percent'):g}% MFU",
        r[ratio_id], regenerate(mfu, peak) / move, f"regenerate / move; {inputs}",
        "Half from the compute rate (working: the ratio at the source's rate); the published numerator is off as well "
        "(previous row).",
        working=(_working("economics-example-ratio", "at-source-rate", "Ours at the source's rate",
                          regenerate(mfu, published_peak.value) / move, "ratio", 0, f"regenerate / move; {at_source_rate}"),),
    ))

    cxl = [links[link_id] for link_id in FETCH_LINKS.values()]
    ratios = [regenerate(m, peak) / float(move_time(block, l.bandwidth)) for m in e.mfu for l in cxl]
    entries.append(AuditEntry(
        "s7.economics-orders", "How much cheaper moving a block is than regenerating it",
        as_reported(r["economics.orders-of-magnitude"], "s7.economics-orders.published"),
        label("s7.economics-orders.ours", "Regenerate over move, CXL links, stated MFU range",
              f"{min(ratios):.0f}× to {max(ratios):.0f}×", "derived", f"regenerate / move over §4.1's CXL links and MFU values; {inputs}"),
        DIFFERS,
        "With the dense compute rate the linear-term comparison spans one to two orders of magnitude, not two to three; "
        "the attention of a block deep in a long sequence raises the regenerate side (§4.3).",
    ))
    entries.append(AuditEntry(
        "s7.economics-peak", f"{device.name} dense {precision.upper()} compute rate",
        as_reported(published_peak, "s7.economics-peak.published"),
        quantity("s7.economics-peak.ours", "Dense compute rate", peak, "TFLOP/s", 1, "spec",
                 f"{catalog.files['devices']} devices.{device.id}.dense_flops.{precision} ({device.provenance[f'dense_flops.{precision}'].source})"),
        AGREES if rounds_to(in_unit(peak, "TFLOP/s"), published_peak.given) else DIFFERS,
        "The datasheet's dense rate; the published figure is half of it (working).",
        (_working("economics-peak", "ratio", "Dense rate over the source's rate", peak / published_peak.value, "ratio", 2,
                  f"F_spec / F_source; derived from {catalog.files['devices']} devices.{device.id}.dense_flops.{precision} "
                  f"and reported economics.h100-bf16-dense ({published_peak.file})"),),
    ))
    return entries


def reproduction_audit(reproduction: pd.DataFrame) -> list[AuditEntry]:
    """The SoK's printed numbers that the reproduction audit found different from ours."""
    entries = []
    for row in reproduction.itertuples(index=False):
        if row.status == "match":
            continue
        entries.append(AuditEntry(
            f"s7.reproduction.{row.id}",
            f"{row.where}: {row.row}, {row.column}",
            label(f"s7.reproduction.{row.id}.published", "As printed", str(row.printed), "reported",
                  f"SoK arXiv:2609.30854 {row.where} (config/paper/printed.yaml)"),
            label(f"s7.reproduction.{row.id}.ours", "Ours at the printed precision", str(row.ours_at_printed), "derived",
                  f"tables/{row.artifact}.csv row {row.row}, column {row.column}; tables/audit/reproduction.csv"),
            DIFFERS,
            str(row.reason),
        ))
    return entries
