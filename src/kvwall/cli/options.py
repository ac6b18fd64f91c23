"""Argument types the `kvwall` commands share: the serving engine whose rules an answer follows."""

from __future__ import annotations

import argparse

from kvwall.inputs.engines import ENGINE_NAMES, ENGINES


def engine_option(parser: argparse.ArgumentParser) -> None:
    """``--engine vllm|sglang|trtllm``: the engine whose rules apply (None: the engine of config/assumptions.yaml)."""
    parser.add_argument("--engine", choices=ENGINES, metavar="ENGINE",
                        help=f"serving engine whose rules the answer follows: {', '.join(ENGINES)} "
                             f"({', '.join(ENGINE_NAMES.values())}), its own rule for the KV memory of a device "
                             "(default: engine of the assumptions)")
