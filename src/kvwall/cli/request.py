"""What a command line asks for, read against the catalogue: the catalogue itself (--config, --specs, --hf-config),
the model and device named, the storage formats and compute precision chosen, the context and the deployment; a
mistake is a CommandError, printed as one line."""

from __future__ import annotations

import argparse
import difflib
import sys
from dataclasses import replace
from pathlib import Path

from kvwall.cli.hf_config import with_hf_config
from kvwall.formats import thousands
from kvwall.inputs.catalog import Catalog
from kvwall.inputs.deployment import Deployment, checked_deployment
from kvwall.inputs.errors import DeploymentError
from kvwall.inputs.loader import LARGEST, load_catalog, load_user_specs
from kvwall.inputs.packaged import packaged_config_dir
from kvwall.inputs.plausibility import catalogue_findings
from kvwall.inputs.specs import Device, Model, WeightFormats
from kvwall.model.params import architecture_params
from kvwall.units import UnitError, parse_tokens

DEFAULT_CONFIG = Path("config")


class CommandError(Exception):
    """A mistake on the command line: printed as one line, exit status 2."""


def catalog_of(args: argparse.Namespace) -> Catalog:
    """The config directory's catalogue plus the devices and models of every --specs file: --config DIR, else a
    checkout's ./config when present, else the catalogue shipped with kvwall."""
    config = args.config
    if config is None:
        config = DEFAULT_CONFIG if (DEFAULT_CONFIG / "devices.yaml").is_file() else packaged_config_dir()
    if not Path(config).is_dir():
        raise CommandError(f"--config {config}: not a directory")
    catalog = load_catalog(config)
    reference, files = catalog.devices, dict(catalog.files)
    for path in args.specs:
        before = set(catalog.models) | set(catalog.devices)
        catalog = load_user_specs(path, catalog)
        files.update({item: str(path) for item in (set(catalog.models) | set(catalog.devices)) - before})
    for finding in catalogue_findings(catalog.models, catalog.devices, reference, files, architecture_params):
        print(f"kvwall: {finding}", file=sys.stderr)
    if getattr(args, "hf_config", None):
        catalog, args.model = with_hf_config(catalog, args.hf_config)
    elif hasattr(args, "hf_config") and not args.model:
        raise CommandError("give --model ID or --hf-config PATH")
    return catalog


def with_formats(catalog: Catalog, **formats: str | None) -> Catalog:
    """The catalogue with the storage formats or compute precision chosen on the command line (None: as configured);
    assumptions, as the defaults in config/assumptions.yaml are."""
    chosen = {name: value for name, value in formats.items() if value}
    return replace(catalog, assumptions=replace(catalog.assumptions, **chosen)) if chosen else catalog


def weight_dtype(args: argparse.Namespace, model) -> str | WeightFormats | None:
    """The --weight-dtype asked for, with ``native`` read as the formats the model's checkpoint ships its parts in."""
    if args.weight_dtype != "native":
        return args.weight_dtype
    if model.weight_format is None:
        raise CommandError(f"--weight-dtype native: {model.id} records no weight_format in config/models.yaml")
    return model.weight_format


def kv_dtype(text: str | None, model) -> str | None:
    """A --kv-dtype, with ``native`` read as the KV format the model's checkpoint states (kv_cache_quant_algo)."""
    if text != "native":
        return text
    if model.kv_format is None:
        raise CommandError(f"--kv-dtype native: {model.id} records no kv_format (its checkpoint states no KV cache "
                           "format, kv_cache_quant_algo)")
    return model.kv_format


def papers_workloads_at(catalog: Catalog, model: Model, context: float) -> tuple[str, ...]:
    """The paper's workloads (SoK Table 6) a question asks for: its evaluation model at a workload's context."""
    if model.id != catalog.evaluation.model:
        return ()
    return tuple(workload.id.upper() for workload in catalog.workloads.values() if workload.context == context)


def paper_extrapolation(catalog: Catalog, model: Model, context: float) -> str | None:
    """The one line that says the paper's own workloads run the model past the context it is configured for, on
    purpose (SoK Table 6: Llama-3-70B, configured for 8,192 tokens, at 128k); None for any other question."""
    workloads = papers_workloads_at(catalog, model, context)
    if not workloads or not (model.max_context and context > model.max_context):
        return None
    return (f"  The SoK's {', '.join(workloads)} run {model.name} at {thousands(context)} tokens, past the "
            f"{thousands(model.max_context)} it is configured for (max_position_embeddings): the paper's frame "
            "extrapolates its architecture on purpose (SoK Table 6)")


def warn_beyond_context(model: Model, context: float, text: str, catalog: Catalog) -> None:
    """One warning line where the context exceeds the model's maximum (max_context, max_position_embeddings), except
    at the paper's own workloads, whose answer says so once (paper_extrapolation)."""
    if papers_workloads_at(catalog, model, context):
        return
    if model.max_context and context > model.max_context:
        print(f"kvwall: warning: --context {text}: {thousands(context)} tokens exceed the {thousands(model.max_context)} "
              f"{model.name} is configured for (max_context, max_position_embeddings); the answer extrapolates its "
              "architecture", file=sys.stderr)


def deployment_of(args: argparse.Namespace, model, catalog: Catalog) -> Deployment:
    """The deployment of --devices --tp --pp --ep --dp (devices default to TP x PP x DP), checked against the model."""
    tp, pp, ep, dp = args.tp, args.pp, args.ep, args.dp
    devices = args.devices if args.devices is not None else tp * pp * dp
    a = catalog.assumptions
    try:
        return checked_deployment(model, Deployment(devices, tp, pp, ep, dp, a.weight_dtype, a.kv_dtype))
    except DeploymentError as err:
        raise CommandError(str(err)) from None


def precision_of(catalog: Catalog, device) -> str:
    precision = catalog.assumptions.compute_precision
    if precision not in device.dense_flops:
        raise CommandError(f"compute precision {precision} (--compute-precision, or compute_precision of the "
                           f"assumptions): {device.name} lists no dense rate for it (it lists "
                           f"{', '.join(sorted(device.dense_flops)) or 'none: its datasheet states no dense rate'})")
    return precision


def pick(collection, item_id: str, kind: str):
    by_hf_id = {item.hf_id: item for item in collection.values() if getattr(item, "hf_id", None)}
    if item_id in by_hf_id and item_id not in collection:
        return by_hf_id[item_id]
    if item_id not in collection:
        close = difflib.get_close_matches(item_id, list(collection), n=3)
        hint = f"did you mean {' or '.join(close)}? " if close else ""
        raise CommandError(f"unknown {kind} {item_id!r} ({hint}known {kind}s: {', '.join(sorted(collection))}; "
                           "add one with --specs FILE)")
    return collection[item_id]


def context_of(args: argparse.Namespace, catalog: Catalog) -> tuple[float, str]:
    """The context in tokens, and how it was read (the size of a 'k' is an assumption)."""
    k = catalog.assumptions.tokens_per_k
    try:
        context = parse_tokens(args.context, k=k)
    except UnitError as err:
        raise CommandError(f"--context: {err}") from None
    if not context <= LARGEST["tokens"] or context != int(context):
        raise CommandError(f"--context {args.context[:20]!r}: must be a whole number of tokens, at most {LARGEST['tokens']:g}")
    return context, f"--context {args.context}, 1k = {k:g} tokens (assumption tokens_per_k)"


def model_on_device(args: argparse.Namespace) -> tuple[Catalog, Model, Device, str]:
    """The catalogue with the formats asked for, the model and device named, and the compute precision to use."""
    catalog = catalog_of(args)
    model = pick(catalog.models, args.model, "model")
    catalog = with_formats(catalog, weight_dtype=weight_dtype(args, model), kv_dtype=kv_dtype(args.kv_dtype, model),
                            compute_precision=args.compute_precision)
    device = pick(catalog.devices, args.device, "device")
    return catalog, model, device, precision_of(catalog, device)
