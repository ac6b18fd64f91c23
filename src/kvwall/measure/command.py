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
        "(a measurement bug), a fit below validity.r_squared of config/measure.yaml, or a paged kernel faster than "
        "the contiguous one.",
    )
    parser.add_argument("--quick", action="store_true", help="the small grid of config/measure.yaml (CI, a few seconds)")
    parser.add_argument("--model", help="model id from config/models.yaml (default: the model of config/measure.yaml)")
    parser.add_argument("--output", metavar="PATH", help="record path, or a folder to write <platform>-<date>.json into "
                        "(default: data/measured/<platform>-<date>.json, -2, -3, ... when taken; with --quick, logs/measure/)")
    parser.add_argument("--config", metavar="DIR", default="config", help="config directory (default: ./config)")
    parser.add_argument("--measure-config", metavar="PATH", help="benchmark settings (default: <config>/measure.yaml)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.set_defaults(func=run_command)


def _named_file(output: str | None, settings: str | Path) -> Path | None:
    """The record file ``--output`` names, checked before the run as every written file is (None for a folder or no
    --output): not the settings, not a file git tracks, in a folder that exists."""
    from kvwall.render import checked_output

    if output is None or os.path.isdir(output):
        return None
    return checked_output(output, "--output", [settings])


def run_command(args: argparse.Namespace) -> int:
    """Measure, write the record, print the summary; 0 for a valid run, 1 for an invalid one."""
    from kvwall.inputs.errors import SpecError
    from kvwall.inputs.loader import load_catalog
    from kvwall.measure.config import load_measure_config
    from kvwall.measure.record import default_path, free_path, write_record
    from kvwall.measure.run import measure
    from kvwall.measure.summary import summary_lines

    catalog = load_catalog(args.config)
    settings = args.measure_config or Path(args.config) / "measure.yaml"
    config = load_measure_config(settings, catalog, "quick" if args.quick else "full", args.model)
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
