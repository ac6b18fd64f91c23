"""CANONICAL-NUMBERS §2 (capacity), §3 (crossovers and regimes) and §6 (the SoK comparison matrix).

These numbers are read from the derived tables by column name, never re-typed: each table is described once here
(which columns, in which unit and printed format, by which equation from which spec keys).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Mapping

from kvwall.canonical.document import Block, Number, Row, Section, label
from kvwall.inputs.catalog import Catalog
from kvwall.inputs.specs import Model
from kvwall.model.equations import ceiling_equation, crossover_equation, for_model, kv_equation, step_kv_formula
from kvwall.model.footprint import kv_bytes
from kvwall.formats import format_value

if TYPE_CHECKING:  # the tables arrive as DataFrames; the Snakefile imports TABLE_INPUTS without pandas
    import pandas as pd


@dataclass(frozen=True)
class Column:
    """One CSV column shown in a wide block: its header, the unit of its values and the format it is printed in."""

    name: str
    header: str
    unit: str
    fmt: str
    suffix: str = ""


@dataclass(frozen=True)
class WideTable:
    """A derived table shown row by row. ``key`` (number ids), ``row_label`` and ``inputs`` (the spec keys) are
    formatted with the row's fields, its context as the paper names it, and the spec files; ``in_model_terms``
    rewrites the dense-GQA ``equation`` for the model of each row (kvwall.model.equations)."""

    artifact: str
    title: str
    key: str
    row_label: str
    header: str
    columns: tuple[Column, ...]
    equation: str
    inputs: str
    note: str = ""
    in_model_terms: Callable[[Model, str], str] | None = None


#: Every table the document reads, by artifact path under tables/ (without suffix).
TABLE_INPUTS = (
    "derived/table1_kv_per_token",
    "derived/footprint_examples",
    "derived/capacity_crossover",
    "derived/table3_ridge",
    "derived/intensity_limits",
    "derived/table4_traffic_crossover",
    "derived/table6_workloads",
    "derived/table5_roofline_bounds",
    "derived/placement_ceilings",
    "derived/placement_gaps",
    "derived/table7_speedups",
    "derived/combinations",
    "derived/prefix_sharing_w3",
    "derived/reuse_w4",
    "reported/table7_quality",
    "audit/reproduction",
)

RIDGE = WideTable(
    "derived/table3_ridge", "Ridge points (SoK Table 3)", "{device_id}", "{device}", "Device",
    (Column("partition_bandwidth", "Per-partition bandwidth", "B/s", "tbps"),
     Column("ridge_point", "Ridge point I*", "FLOP/B", "int", " FLOP/B")),
    "β_part = β_agg / partitions; I* = F / β_agg (SoK Table 3)",
    "{devices} devices.{device_id}.hbm_bandwidth, package.partitions, dense_flops; {assumptions} compute_precision",
)
TRAFFIC_CROSSOVER = WideTable(
    "derived/table4_traffic_crossover", "Traffic crossover s*(b) (SoK Table 4)", "{model_id}", "{model}", "Model",
    tuple(Column(f"b{b}", f"b = {b}", "tokens", "tokens", " tokens") for b in (1, 8, 32, 128, 256)),
    "s*(b) = P w_p / (b · 2 L n_kv d_h w_kv) (SoK §3.4)",
    "{models} models.{model_id}; {assumptions} weight_dtype, kv_dtype",
    note="Above s*(b) the KV bytes read per step exceed the weight bytes.",
    in_model_terms=crossover_equation,
)
REGIMES = WideTable(
    "derived/table6_workloads", "Regimes of the workloads W1-W4 (SoK Table 6)", "{workload_id}", "{workload_id}", "Workload",
    (Column("traffic_crossover", "s*(b)", "tokens", "tokens", " tokens"),
     Column("capacity_crossover", "s_cap(b)", "tokens", "capacity_tokens", " tokens"),
     Column("regime", "Regime", "", "text"),
     Column("devices_needed", "Devices needed", "count", "int")),
    "weight-bound below s*, KV-bound between s* and s_cap, capacity-bound above s_cap (SoK §3.5, §5.1)",
    "{workloads} workloads and evaluation (model, device)",
)
ROOFLINE_BOUNDS = WideTable(
    "derived/table5_roofline_bounds", "Speedup law on the roofline (SoK Table 5)", "{context:.0f}/{config_id}",
    "{context_label}, {configuration}", "Context, configuration",
    (Column("kv_bytes", "KV", "B", "gb1", " GB"),
     Column("step_time", "T_step", "s", "ms1", " ms"),
     Column("token_rate", "Tokens/s", "tokens/s", "fixed1"),
     Column("speedup", "Speedup S(c)", "ratio", "times2"),
     Column("arithmetic_intensity", "AI", "FLOP/B", "fixed1", " FLOP/B")),
    "T_step = B / β; S(c) = (W + K) / (W + K / c) (SoK §3.5, Eqs. of Table 5)",
    "{techniques} configurations; evaluation model and device ({workloads} evaluation)",
)
PLACEMENT = WideTable(
    "derived/placement_ceilings", "Placement ceilings R_inf (SoK §3.3, Corollary 1)", "{device_id}/{layout}", "{device}",
    "Device and layout",
    (Column("effective_bandwidth", "Effective bandwidth", "B/s", "tbps"),
     Column("token_rate_ceiling", "R_inf", "tokens/s", "mega1", " tokens/s")),
    "R_inf = β_eff / (2 L n_kv d_h w_kv) (SoK §3.3)",
    "{devices} devices.{device_id}; evaluation model ({workloads} evaluation)",
    in_model_terms=ceiling_equation,
)
SPEEDUPS = WideTable(
    "derived/table7_speedups", "Derived decode speedups (SoK Table 7)", "{technique_id}", "{method}", "Method",
    (Column("compression_label", "c", "", "text"),
     Column("kv_bytes", "KV", "B", "gb1", " GB"),
     Column("speedup_w1", "W1", "ratio", "times2"),
     Column("speedup_w2", "W2", "ratio", "times2")),
    "S(c) = (W + K) / (W + K / c) at W1 and W2 (SoK §3.5, Table 7)",
    "{techniques} techniques.{technique_id}; {workloads} workloads w1, w2",
)


def _source(table: WideTable, row: Mapping, files: Mapping[str, str], model: Model | None) -> str:
    equation = table.equation if table.in_model_terms is None else table.in_model_terms(model, table.equation)
    return f"{equation}; {table.inputs.format(**row, **files)}; tables/{table.artifact}.csv"


def _cell(number_id: str, quantity: str, value, column: Column, evidence: str, source: str) -> Number:
    if column.fmt == "text":
        return label(number_id, quantity, str(value), evidence, source)
    return Number(number_id, quantity, float(value), column.unit, format_value(float(value), column.fmt) + column.suffix,
                  evidence, source)


def _context_label(value: float) -> str:
    return format_value(value, "context")


def wide_block(section: int, table: WideTable, frame: pd.DataFrame, files: Mapping[str, str],
               model_of: Callable[[Mapping], Model] | None = None) -> Block:
    """One row per CSV row, one number per listed column, all derived from the same source; ``model_of`` gives the
    model of a row where the table's equation is written in the model's terms."""
    stem = table.artifact.split("/")[1]
    rows = []
    for record in frame.to_dict("records"):
        fields = {**record, "context_label": _context_label(record["context"])} if "context" in record else record
        name, key = table.row_label.format(**fields), table.key.format(**fields)
        source = _source(table, record, files, model_of(record) if model_of else None)
        rows.append(Row(name, tuple(
            _cell(f"s{section}.{stem}.{key}.{c.name}", f"{c.header}, {name}", record[c.name], c, "derived", source)
            for c in table.columns)))
    return Block(table.title, tuple(rows), note=table.note, header=table.header, columns=tuple(c.header for c in table.columns))


def in_text_block(section: int, title: str, artifact: str, frame: pd.DataFrame) -> Block:
    """An in-text table (id, quantity, value, unit, format, equation) as one number per row, printed as the paper does."""
    stem = artifact.split("/")[1]
    rows = tuple(
        Row(r["quantity"], (Number(f"s{section}.{stem}.{r['id']}", r["quantity"], float(r["value"]), r["unit"],
                                   format_value(float(r["value"]), r["format"]), "derived",
                                   f"{r['equation']}; tables/{artifact}.csv {r['id']}"),))
        for r in frame.to_dict("records")
    )
    return Block(title, rows)


def _kv_footprints(catalog: Catalog, frame: pd.DataFrame) -> Block:
    contexts = catalog.evaluation.table5_contexts
    files = catalog.files
    columns = (Column("kv_bytes_per_token", "KV per token", "B", "thousands", " B"),
               *(Column(f"kv_{context:.0f}", f"KV at {_context_label(context)}", "B", "gb1", " GB") for context in contexts))
    rows = []
    for record in frame.to_dict("records"):
        model = catalog.models[record["model_id"]]
        values = {"kv_bytes_per_token": record["kv_bytes_per_token"],
                  **{f"kv_{context:.0f}": float(kv_bytes(model, context, catalog.assumptions.kv_bytes_per_element))
                     for context in contexts}}
        source = (f"{kv_equation(model)}; per sequence {for_model(model, step_kv_formula(model))} at b = 1; {files['models']} "
                  f"models.{record['model_id']}; {files['assumptions']} kv_dtype; {files['techniques']} "
                  "configurations.contexts; tables/derived/table1_kv_per_token.csv")
        rows.append(Row(record["model"], tuple(
            _cell(f"s2.kv.{record['model_id']}.{c.name}", f"{c.header}, {record['model']}", values[c.name], c, "derived", source)
            for c in columns)))
    return Block("KV bytes per token and per sequence (SoK Table 1, Eq. 1)", tuple(rows), header="Model",
                 columns=tuple(c.header for c in columns),
                 note="Per sequence at the evaluation contexts of SoK Table 5.")


def _hbm_capacities(catalog: Catalog, frame: pd.DataFrame) -> Block:
    """HBM of the devices the capacity crossovers are shown for."""
    rows = tuple(
        Row(d.name, (Number(f"s2.hbm.{d.id}", f"HBM capacity, {d.name}", d.hbm_capacity, "B", format_value(d.hbm_capacity, "gb_label"),
                            "spec", f"{catalog.files['devices']} devices.{d.id}.hbm_capacity ({d.provenance['hbm_capacity'].source})"),))
        for d in (catalog.devices[i] for i in dict.fromkeys(frame["device_id"]))
    )
    return Block("HBM capacity per device", rows, header="Device")


def _per_device(frame: pd.DataFrame) -> tuple[list[str], list[str], dict]:
    models = list(dict.fromkeys(frame["model_id"]))
    devices = list(dict.fromkeys(frame["device_id"]))
    cells = {(r["model_id"], r["device_id"]): r for r in frame.to_dict("records")}
    return models, devices, cells


def _weights_against_hbm(catalog: Catalog, frame: pd.DataFrame) -> Block:
    models, devices, cells = _per_device(frame)
    rows = []
    for model_id in models:
        first = cells[(model_id, devices[0])]
        source = (f"P w_p / HBM; {catalog.files['models']} models.{model_id}.params_nominal; {catalog.files['assumptions']} "
                  f"weight_dtype; {catalog.files['devices']} hbm_capacity; tables/derived/capacity_crossover.csv weight_bytes")
        numbers = [Number(f"s2.weights.{model_id}", f"Weights, {first['model']}", float(first["weight_bytes"]), "B",
                          format_value(float(first["weight_bytes"]), "gb1") + " GB", "derived", source)]
        for device_id in devices:
            ratio = float(cells[(model_id, device_id)]["weight_bytes"]) / catalog.devices[device_id].hbm_capacity
            numbers.append(Number(f"s2.weights-over-hbm.{model_id}.{device_id}", f"Weights over HBM, {first['model']} on "
                                  f"{catalog.devices[device_id].name}", ratio, "ratio", format_value(ratio, "times2"), "derived", source))
        rows.append(Row(first["model"], tuple(numbers)))
    return Block("Weights against HBM", tuple(rows), header="Model",
                 columns=("Weights P w_p", *(f"Weights / HBM, {catalog.devices[d].name}" for d in devices)),
                 note="Above 1× the weights alone do not fit on one device.")


def _capacity_crossovers(catalog: Catalog, frame: pd.DataFrame) -> Block:
    models, devices, cells = _per_device(frame)
    rows = []
    for model_id in models:
        name = cells[(model_id, devices[0])]["model"]
        equation = crossover_equation(catalog.models[model_id], "s_cap = (HBM - P w_p) / (2 L n_kv d_h w_kv) at b = 1 (SoK §3.4)")
        source = (f"{equation}; {catalog.files['models']} models.{model_id}; "
                  f"{catalog.files['devices']} hbm_capacity; {catalog.files['assumptions']} weight_dtype, kv_dtype; "
                  "tables/derived/capacity_crossover.csv")
        rows.append(Row(name, tuple(
            Number(f"s3.capacity-crossover.{model_id}.{d}", f"s_cap, {name} on {catalog.devices[d].name}",
                   float(cells[(model_id, d)]["capacity_crossover"]), "tokens",
                   format_value(float(cells[(model_id, d)]["capacity_crossover"]), "capacity_tokens"), "derived", source)
            for d in devices)))
    return Block("Capacity crossover s_cap at batch 1 (SoK §3.4)", tuple(rows), header="Model",
                 columns=tuple(catalog.devices[d].name for d in devices),
                 note="The longest context one sequence can hold beside the weights; 'cannot load' where the weights alone exceed HBM.")


def _quality(frame: pd.DataFrame) -> Block:
    rows = tuple(
        Row(r["method"], (label(f"s6.quality.{r['technique_id']}", f"Quality delta, {r['method']}", r["quality_delta"],
                                "reported", f"{r['source']}; tables/reported/table7_quality.csv"),))
        for r in frame.to_dict("records") if isinstance(r["quality_delta"], str) and r["quality_delta"]
    )
    return Block("Quality, as reported (SoK Table 7), apart from the derived speedups", rows, header="Method",
                 note="Within-paper values on the benchmarks each paper names; not comparable across rows.")


def capacity_section(catalog: Catalog, tables: Mapping[str, pd.DataFrame]) -> Section:
    """§2: KV bytes per token and per sequence, the paper's footprint examples, weights against HBM."""
    return Section(
        number=2,
        title="Capacity",
        intro="What must be resident: KV bytes per token for the catalogue, footprints per sequence, and the weights "
        "against each device's HBM.",
        blocks=(
            _kv_footprints(catalog, tables["derived/table1_kv_per_token"]),
            in_text_block(2, "Footprint examples (SoK §1.2, §2.1)", "derived/footprint_examples", tables["derived/footprint_examples"]),
            _hbm_capacities(catalog, tables["derived/capacity_crossover"]),
            _weights_against_hbm(catalog, tables["derived/capacity_crossover"]),
        ),
    )


def crossover_section(catalog: Catalog, tables: Mapping[str, pd.DataFrame]) -> Section:
    """§3: ridge points, intensity limits, s*(b), s_cap, regimes, the speedup law and placement ceilings."""
    files = catalog.files
    return Section(
        number=3,
        title="Crossovers and regimes",
        intro="Where the bottleneck moves from weights to KV (s*), where the KV stops fitting (s_cap), the regime each "
        "workload falls in, what a byte saving buys in each regime, and the ceilings page placement sets.",
        blocks=(
            wide_block(3, RIDGE, tables[RIDGE.artifact], files),
            in_text_block(3, "Arithmetic-intensity limits (SoK §1.1, §3.2)", "derived/intensity_limits", tables["derived/intensity_limits"]),
            wide_block(3, TRAFFIC_CROSSOVER, tables[TRAFFIC_CROSSOVER.artifact], files,
                       lambda row: catalog.models[row["model_id"]]),
            _capacity_crossovers(catalog, tables["derived/capacity_crossover"]),
            wide_block(3, REGIMES, tables[REGIMES.artifact], files),
            wide_block(3, ROOFLINE_BOUNDS, tables[ROOFLINE_BOUNDS.artifact], files),
            wide_block(3, PLACEMENT, tables[PLACEMENT.artifact], files, lambda row: catalog.model),
            in_text_block(3, "Placement and link gaps (SoK §2.5, §3.3)", "derived/placement_gaps", tables["derived/placement_gaps"]),
        ),
    )


def comparison_section(catalog: Catalog, tables: Mapping[str, pd.DataFrame]) -> Section:
    """§6: the SoK comparison matrix: derived speedups and workload numbers, reported quality apart."""
    return Section(
        number=6,
        title="The SoK comparison matrix",
        intro="Llama-3-70B on B200 with striped pages at 128k context, as the SoK evaluates it: decode speedups and "
        "footprints are derived; quality deltas are reported by each method's paper and kept apart.",
        blocks=(
            wide_block(6, SPEEDUPS, tables[SPEEDUPS.artifact], catalog.files),
            in_text_block(6, "Combinations (SoK §2.6, §4.6)", "derived/combinations", tables["derived/combinations"]),
            in_text_block(6, "Prefix sharing, W3 (SoK App. A)", "derived/prefix_sharing_w3", tables["derived/prefix_sharing_w3"]),
            in_text_block(6, "Reuse: fetch against recompute, W4 (SoK §4.5)", "derived/reuse_w4", tables["derived/reuse_w4"]),
            _quality(tables["reported/table7_quality"]),
        ),
    )
