"""`kvwall footprint`: KV bytes per token, KV bytes of a batch at a context and the resident weights (SoK Eq. 1,
section 1.2), per KV storage format: its parser and its printer."""

from __future__ import annotations

import argparse

from kvwall.cli import answers, request, show
from kvwall.cli.options import CONTEXT_HELP, common, format_option, model_option, positive_int
from kvwall.formats import thousands, tokens
from kvwall.units import DTYPE_BYTES


def register(subparsers) -> None:
    """Add `kvwall footprint` to the command's subparsers."""
    p = subparsers.add_parser(
        "footprint", parents=[common()], help="KV bytes per token and per batch, and weights (Eq. 1)",
        description="KV bytes per token (SoK Eq. 1: 2 L n_kv d_h w_kv, MLA L (d_c + d_r) w_kv, window layers capped), "
        "the KV bytes of a batch at a context, and the model's resident weight bytes (section 1.2), for one or "
        "more KV storage formats.")
    model_option(p)
    p.add_argument("--context", default="128k", help=CONTEXT_HELP + "; default 128k")
    p.add_argument("--batch", type=positive_int, default=1, help="sequences in the batch (default 1)")
    p.add_argument("--kv-dtype", nargs="+", choices=[*sorted(DTYPE_BYTES), "native"], metavar="DTYPE",
                   help=f"KV storage format(s): {', '.join(DTYPE_BYTES)}, or native (the checkpoint's, kv_format of "
                        "config/models.yaml) (default: kv_dtype of the assumptions)")
    p.add_argument("--weight-dtype", **format_option("weight"))
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """KV bytes per token, KV bytes of the batch at the context, and weights (SoK Eq. 1, section 1.2)."""
    catalog = request.catalog_of(args)
    model = request.pick(catalog.models, args.model, "model")
    catalog = request.with_formats(catalog, weight_dtype=request.weight_dtype(args, model))
    context, context_basis = request.context_of(args, catalog)
    dtypes = [request.kv_dtype(d, model) for d in args.kv_dtype] if args.kv_dtype else [catalog.assumptions.kv_dtype]
    request.warn_beyond_context(model, context, args.context, catalog)
    dtype_basis = "--kv-dtype" if args.kv_dtype else "kv_dtype (assumption)"
    weights = answers.weights(model, catalog.assumptions)
    rows = [answers.footprint(model, context, args.batch, dtype, dtype_basis) for dtype in dtypes]
    if args.json:
        show.as_json({"command": "footprint", "model": model.id,
                      "context": answers.stated(context, "tokens", context_basis),
                      "batch": answers.stated(args.batch, "count", "the batch asked for"), "weights": weights, "kv": rows})
        return 0
    print(f"{model.name}: batch {args.batch}, context {tokens(context)} ({thousands(context)} tokens)")
    extrapolation = request.paper_extrapolation(catalog, model, context)
    if extrapolation:
        print(extrapolation)
    print(show.line("weights", weights))
    for row in rows:
        print(show.line(f"KV per token, {row.kv_dtype}", row.kv_bytes_per_token))
        print(show.line(f"KV of batch x context, {row.kv_dtype}", row.kv_bytes))
    if model.attention.state_bytes:
        print(show.line("state per sequence", answers.state(model, catalog.assumptions)))
    return 0
