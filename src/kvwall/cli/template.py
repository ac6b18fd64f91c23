"""`kvwall template device|model`: a spec file to copy and fill in, for `--specs` or for config/.

The file has the header every spec file needs (``evidence: spec`` and the ``sources:`` its numbers cite) and one
entry per kind asked for, in the format of config/devices.yaml and config/models.yaml: every number a value with
its unit and a source id. A device comes with its scale-up link and the fabric of its system, so it can be deployed
on several. The example numbers describe no real product; replace them from the datasheet or the
model's config.json. examples/my-hardware.yaml is `kvwall template device model` as shipped.
"""

from __future__ import annotations

import argparse

HEADER = """\
# Devices and models to add to kvwall's catalogue: `kvwall regime --specs THIS_FILE ...`, or copy the entries into
# config/devices.yaml and config/models.yaml. Every number is {value, unit, source}: decimal GB and TB/s, dense
# tensor-core TFLOP/s, GiB only where the source uses it; `source` names an id listed under `sources:`.
evidence: spec            # every number here is copied from a datasheet or a published config
sources:
"""
SOURCES = {
    "device": '  my-accelerator-datasheet: "Example accelerator datasheet (replace with the URL or title of yours)"\n',
    "model": '  my-model-config: "https://huggingface.co/ORG/MODEL/blob/main/config.json (replace with yours)"\n',
}
ENTRIES = {
    "device": """\
devices:
  my-accelerator:                          # the id for --device
    name: My Accelerator                   # as tables and figures print it
    hbm_capacity: {value: 144, unit: GB, source: my-accelerator-datasheet}
    hbm_bandwidth: {value: 6.0, unit: TB/s, source: my-accelerator-datasheet}
    package:
      description: 2 dies                  # how the package is built, in words
      partitions: {value: 2, unit: count, source: my-accelerator-datasheet}   # dies or HBM stacks
    dense_flops:                           # dense (not sparse) tensor rates, one per precision
      bf16: {value: 1500, unit: TFLOP/s, source: my-accelerator-datasheet}
      fp8: {value: 3000, unit: TFLOP/s, source: my-accelerator-datasheet}
    scale_up:                              # the link between accelerators of one node, as the datasheet prints it
      name: My Link
      bandwidth: {value: 800, unit: GB/s, source: my-accelerator-datasheet}   # per accelerator (or per link, with links)
      direction: bidirectional             # one-way, bidirectional or unstated (both: halved for one way)
    fabric:                                # the system it ships in, as that system's datasheet states it
      domain: {value: 8, unit: count, source: my-accelerator-datasheet}       # accelerators one scale-up link connects
      scale_out: {name: My NIC 400 Gb/s, bandwidth: {value: 400, unit: Gb/s, source: my-accelerator-datasheet}}
""",
    "model": """\
models:
  my-model:                                # the id for --model
    name: My-Model-12.6B
    source: my-model-config                # the source of every number of the entry
    attention: {kind: full}                # full (MHA/GQA); mla (kv_lora_rank, qk_rope_head_dim); sliding_window
    n_layers: {value: 40, unit: count}     # num_hidden_layers
    n_q_heads: {value: 40, unit: count}    # num_attention_heads
    n_kv_heads: {value: 8, unit: count}    # num_key_value_heads
    head_dim: {value: 128, unit: count}    # head_dim as published, never hidden_size / heads
    hidden_size: {value: 5120, unit: count}
    intermediate_size: {value: 13824, unit: count}
    vocab_size: {value: 152064, unit: count}
    params_nominal: {value: 12.57e9, unit: count}  # the count the model is published as
""",
}
KINDS = tuple(ENTRIES)


def template(kinds: list[str]) -> str:
    """The spec file with one entry of each kind, in the order device, model."""
    chosen = [kind for kind in KINDS if kind in kinds]
    return HEADER + "".join(SOURCES[k] for k in chosen) + "".join(ENTRIES[k] for k in chosen)


def run_command(args: argparse.Namespace) -> int:
    print(template(args.kinds), end="")
    return 0


def register(subparsers) -> None:
    """Add the `template` subcommand to the kvwall command line."""
    parser = subparsers.add_parser(
        "template", help="print a spec-file skeleton for a new device or model (for --specs or config/)",
        description="Print a spec file with the header every spec file needs (evidence and sources) and one example "
        "entry per kind, every number with its unit and source. Save it, replace the example numbers, and pass it "
        "with --specs, or copy the entries into config/devices.yaml and config/models.yaml. "
        "Example: kvwall template device model > my-hardware.yaml",
    )
    parser.add_argument("kinds", nargs="+", choices=KINDS, metavar="KIND",
                        help=f"what the file adds: {' and/or '.join(KINDS)}")
    parser.set_defaults(func=run_command)
