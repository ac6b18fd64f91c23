"""Argument types and options the `kvwall` commands share: counts, the catalogue (--config, --specs), --json, the
model, the storage formats, the deployment, the serving engine whose rules an answer follows."""

from __future__ import annotations

import argparse

from kvwall.inputs.engines import ENGINE_NAMES, ENGINES
from kvwall.inputs.loader import LARGEST
from kvwall.units import DTYPE_BYTES

CONTEXT_HELP = "context length in tokens: 131072, 128k, 1M, 1e6 (k per config/assumptions.yaml tokens_per_k)"
DEVICE_HELP = "device id from config/devices.yaml or a --specs file (for example b200)"


def positive_int(text: str) -> int:
    """A count on the command line (a batch, a parallel degree): a whole number from 1 to LARGEST's count."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    if value > LARGEST["count"]:
        raise argparse.ArgumentTypeError(f"{text[:20]!r}{'...' if len(text) > 20 else ''} must be at most {LARGEST['count']:g}")
    return value


def parameter_count(text: str) -> float:
    """A published parameter count (8.03e9): a whole number of at least 1 and at most LARGEST's count."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of parameters (examples: 8.03e9, 70553706496)") from None
    if not 1 <= value <= LARGEST["count"] or value != int(value):
        raise argparse.ArgumentTypeError(f"{text!r} must be a whole number from 1 to {LARGEST['count']:g}")
    return value


def points(text: str) -> int:
    """A number of grid points, at least 1; 1e6 reads as 1000000."""
    try:
        value = int(float(text))
    except (ValueError, OverflowError):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of points (examples: 1000000, 1e6)") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return value


def catalogue_options() -> argparse.ArgumentParser:
    """The parent parser of --config DIR and --specs PATH: where the catalogue is read from."""
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument("--config", metavar="DIR", help="config directory with devices.yaml, models.yaml, ... "
                         "(default: ./config when present, else the catalogue shipped with kvwall)")
    options.add_argument("--specs", metavar="PATH", action="append", default=[],
                         help="YAML file adding devices and/or models in the format of config/ (header evidence: spec "
                         "and sources:, then devices: and/or models:); repeatable. Example: examples/my-hardware.yaml; "
                         "a skeleton: kvwall template device model")
    return options


def common() -> argparse.ArgumentParser:
    """The parent parser of the catalogue's options and --json."""
    options = argparse.ArgumentParser(add_help=False, parents=[catalogue_options()])
    options.add_argument("--json", action="store_true", help="machine-readable output, each number with its evidence class")
    return options


def model_option(p: argparse.ArgumentParser) -> None:
    """``--model ID`` or ``--hf-config PATH``, one of the two."""
    group = p.add_mutually_exclusive_group()
    group.add_argument("--model", help="model id of the catalogue, or its Hugging Face id (meta-llama/Llama-3.1-70B)")
    group.add_argument("--hf-config", metavar="PATH",
                       help="a published config.json to answer for directly (parameter count derived from it)")


def format_option(stored: str) -> dict:
    """The arguments of ``--weight-dtype`` (``stored`` weight) or ``--kv-dtype`` (kv): a format, or native."""
    if stored == "weight":
        return {"choices": [*sorted(DTYPE_BYTES), "native"], "metavar": "DTYPE",
                "help": f"weight storage format of every part: {', '.join(DTYPE_BYTES)}, or native (the formats "
                        "the model's checkpoint ships each part in, weight_format of config/models.yaml) "
                        "(default: weight_dtype of the assumptions)"}
    return {"choices": [*sorted(DTYPE_BYTES), "native"], "metavar": "DTYPE",
            "help": f"{stored} storage format: {', '.join(DTYPE_BYTES)}, or native (the KV format the model's "
                    "checkpoint states, kv_format of config/models.yaml) (default: kv_dtype of the assumptions)"}


def deployment_options(p: argparse.ArgumentParser) -> None:
    """``--devices --tp --pp --ep --dp``: the deployment, each degree a count (default 1)."""
    p.add_argument("--devices", type=positive_int, metavar="N",
                   help="devices the model is deployed on; must equal TP x PP x DP (default: TP x PP x DP)")
    p.add_argument("--tp", type=positive_int, default=1, metavar="T",
                   help="tensor-parallel degree: heads and matrices of each layer split over T devices (default 1)")
    p.add_argument("--pp", type=positive_int, default=1, metavar="P",
                   help="pipeline stages: the layers split over P stages run one after the other (default 1)")
    p.add_argument("--ep", type=positive_int, default=1, metavar="E",
                   help="expert-parallel degree: the routed experts spread over E devices; must divide the "
                        "experts and TP x DP (default 1)")
    p.add_argument("--dp", type=positive_int, default=1, metavar="D",
                   help="attention data-parallel degree: the sequences split over D attention replicas (default 1)")


def engine_option(parser: argparse.ArgumentParser) -> None:
    """``--engine vllm|sglang|trtllm``: the engine whose rules apply (None: the engine of config/assumptions.yaml)."""
    parser.add_argument("--engine", choices=ENGINES, metavar="ENGINE",
                        help=f"serving engine whose rules the answer follows: {', '.join(ENGINES)} "
                             f"({', '.join(ENGINE_NAMES.values())}), its own rule for the KV memory of a device "
                             "(default: engine of the assumptions)")
