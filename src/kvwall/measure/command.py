"""`kvwall measure`: run the KV-slope benchmark on this machine and write its record.

    kvwall measure                      # full sweep -> data/measured/<platform>-<date>.json
    kvwall measure --quick              # a few seconds -> logs/measure/<platform>-<date>-quick.json
    kvwall measure --model llama-3-8b --output run.json
    python -m kvwall.measure --output DIR   # the same, where the kvwall entry point is not installed
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path


def register(subparsers) -> None:
    """Add the `measure` subcommand to the kvwall command line."""
    parser = subparsers.add_parser(
        "measure", help="measure the KV slope t = a + b * KV_GiB of decode attention on this machine",
        description="Time decode attention over a batch x context grid (numpy: contiguous and paged KV; torch SDPA "
        "when installed, on CUDA when present), time a streaming copy beside it, fit t = a + b * KV_GiB per kernel, "
        "and write the record. Exit status 1 when the run is invalid, with the reason: a bandwidth above its bound "
        "(a measurement bug), a fit below validity.r_squared of config/measure.yaml, a step that does not grow with the batch at "
        "a fixed context (validity.batch_growth), or a paged kernel faster than "
        "the contiguous one.",
    )
    parser.add_argument("--quick", action="store_true", help="the small grid of config/measure.yaml (CI, a few seconds)")
    parser.add_argument("--model", help="model id from config/models.yaml (default: the model of config/measure.yaml)")
    parser.add_argument("--output", metavar="PATH", help="record path, or a folder to write <platform>-<date>.json into "
                        "(default: data/measured/<platform>-<date>.json, -2, -3, ... when taken; with --quick, logs/measure/)")
    parser.add_argument("--config", metavar="DIR", default="config", help="config directory (default: ./config)")
    parser.add_argument("--measure-config", metavar="PATH", help="benchmark settings (default: <config>/measure.yaml)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--check", metavar="RECORD", help="measure nothing: judge a record's kept timings by the "
                        "validity checks of the settings, kernel by kernel (exit status 1 where one fails)")
    parser.add_argument("--step-table", metavar="CSV", help="measure nothing: hold a table of whole decode steps timed "
                        "on a device (batch, context, step_ms, p10_ms, p90_ms, weight_bytes, kv_bytes) against kvwall's "
                        "bound of the same step; needs --model and --device")
    parser.add_argument("--device", help="catalogue id of the device a --step-table was timed on")
    parser.add_argument("--profile", action="store_true", help="time the decode operations of --model (or --hf-config) "
                        "one by one, then the whole step (config/measure.yaml, profile; --quick for its small grid), "
                        "and write the record (default: data/measured/profiles/<platform>-<date>-<model>.json)")
    parser.add_argument("--hf-config", metavar="PATH", help="with --profile: the model of a published config.json")
    parser.set_defaults(func=run_command)


def _named_file(output: str | None, settings: str | Path) -> Path | None:
    """The record file ``--output`` names, checked before the run as every written file is (None for a folder or no
    --output): not the settings, not a file git tracks, in a folder that exists."""
    from kvwall.render import checked_output

    if output is None or os.path.isdir(output):
        return None
    return checked_output(output, "--output", [settings])


def check_command(path: str, config) -> int:
    """Print each kernel of the record at ``path`` as valid or with the checks it fails; 0 when all pass."""
    from kvwall.measure.record import read_record
    from kvwall.measure.recheck import recheck

    judged = recheck(read_record(path), config)
    for device, kernels in judged.items():
        for kernel, flags in kernels.items():
            print(f"{device} {kernel}: " + ("valid" if not flags else "INVALID: " + "; ".join(flags)))
    return 0 if not any(flags for kernels in judged.values() for flags in kernels.values()) else 1


def step_command(path: str, catalog, model_id: str | None, device_id: str | None) -> int:
    """Print each measured step beside the datasheet bound of the same step and their ratio."""
    from kvwall.inputs.errors import SpecError
    from kvwall.measure.step import read_step_table, realization

    for flag, value, known in (("--model", model_id, catalog.models), ("--device", device_id, catalog.devices)):
        if value is None:
            raise SpecError(path, flag, "--step-table needs --model and --device: the model and device the steps ran")
        if value not in known:
            raise SpecError(path, flag, f"{value!r} does not exist in the catalogue")
    model, device = catalog.models[model_id], catalog.devices[device_id]
    rows = realization(read_step_table(path), model, device, path=path)
    print(f"{model.name} on one {device.name}, bf16 weights and KV: each timed step (measured) beside the datasheet "
          "bound of the same step, max(bytes / HBM bandwidth, FLOPs / dense peak) (derived), and bound over measured")
    print(f"  {'batch':>6} {'context':>8} {'bound':>10} {'measured':>10} {'realization':>11}")
    for row in rows:
        print(f"  {row['batch']:>6} {row['context']:>8} {row['bound_ms']:>7.2f} ms {row['measured_ms']:>7.2f} ms "
              f"{row['realization']:>11.2f}")
    low, high = min(r["realization"] for r in rows), max(r["realization"] for r in rows)
    print(f"  the steps realize {low:.2f}-{high:.2f} of the datasheet bound's speed (derived)")
    return 0


def profile_command(args: argparse.Namespace, catalog, config, settings) -> int:
    """Profile the model's decode operations, write the record, print its summary; 1 where it is invalid."""
    from kvwall.inputs.errors import ImportRefused, SpecError
    from kvwall.inputs.hf_import import load_imported, read_config
    from kvwall.measure.profile import ProfileRefused, profile, summary_lines
    from kvwall.measure.record import profile_path, write_profile

    if args.model and args.model not in catalog.models:
        raise SpecError(settings, "--model", f"model {args.model!r} does not exist in {catalog.files['models']}")
    model = catalog.models[args.model] if args.model else config.model
    if args.hf_config:
        try:
            model = load_imported(catalog, read_config(args.hf_config), None, None, args.hf_config)
        except ImportRefused as err:
            raise SpecError(err.file, err.key, err.reason) from None
    named = _named_file(args.output, settings)
    try:
        record = profile(model, config.profile, catalog, dict(config.device_specs), config.mode, config.seed)
    except ProfileRefused as err:
        raise SpecError(args.hf_config or settings, "--profile", str(err)) from None
    path = named or free_path(Path(args.output) / profile_path(record).name if args.output else profile_path(record))
    path = write_profile(record, path)
    print("\n".join(summary_lines(record)))
    print(f"record: {path}")
    return 0 if record["valid"] else 1


def run_command(args: argparse.Namespace) -> int:
    """Measure, write the record, print the summary; 0 for a valid run, 1 for an invalid one."""
    from kvwall.inputs.errors import SpecError
    from kvwall.inputs.loader import load_catalog
    from kvwall.measure.config import load_measure_config
    from kvwall.measure.record import default_path, free_path, write_record
    from kvwall.measure.run import measure
    from kvwall.measure.summary import summary_lines

    catalog = load_catalog(args.config)
    if args.step_table:
        return step_command(args.step_table, catalog, args.model, args.device)
    settings = args.measure_config or Path(args.config) / "measure.yaml"
    # a profile times any model's operations; the KV-slope sweep needs one of full attention (load_measure_config)
    config = load_measure_config(settings, catalog, "quick" if args.quick else "full", None if args.profile else args.model)
    if args.check:
        return check_command(args.check, config)
    if args.profile:
        return profile_command(args, catalog, config, settings)
    named = _named_file(args.output, settings)
    record = measure(config, catalog, progress=not args.no_progress)
    path = named or free_path(Path(args.output) / default_path(record).name if args.output else default_path(record))
    try:
        path = write_record(record, path)
    except OSError as err:
        raise SpecError(path, "", f"cannot be written ({err.strerror})") from None
    print("\n".join(summary_lines(record)))
    print(f"record: {path}")
    return 0 if record["valid"] else 1
