"""config/measure.yaml as typed settings: the model, the batch x context grid per device, repeats and targets."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Mapping

from kvwall.inputs.catalog import Catalog
from kvwall.inputs.errors import SpecError
from kvwall.inputs.loader import checked_base, read_yaml, validate
from kvwall.inputs.specs import Device, FullAttention, Model
from kvwall.measure.profile_grid import ProfileGrid
from kvwall.units import GiB

#: Sweep modes: the full grid for a committed record, and a grid small enough for CI.
MODES = ("full", "quick")


#: The largest copy buffer a run allocates (twice: source and destination), in bytes.
LARGEST_COPY_BUFFER = 16 * GiB

@dataclass(frozen=True)
class Sweep:
    """The grid one device runs: ``layers`` of the model in ``dtype``, every batch at every context."""

    layers: int
    dtype: str
    batches: tuple[int, ...]
    contexts: tuple[int, ...]
    repeats: int
    warmup: int
    copy_buffer_bytes: int

    @property
    def points(self) -> tuple[tuple[int, int], ...]:
        """(batch, context) pairs, smallest KV first."""
        return tuple(sorted(((b, c) for b in self.batches for c in self.contexts), key=lambda p: (p[0] * p[1], p)))

    def as_record(self) -> dict:
        return {"layers": self.layers, "dtype": self.dtype, "batches": list(self.batches), "contexts": list(self.contexts),
                "repeats": self.repeats, "warmup": self.warmup, "copy_buffer_bytes": self.copy_buffer_bytes}


@dataclass(frozen=True)
class MeasureConfig:
    """One run's settings, resolved against the catalogue."""

    file: str
    mode: str
    model: Model
    block_size: int
    tile_tokens: int
    seed: int
    confidence: float
    targets: Mapping[str, float]
    min_r_squared: float  # a fit below it marks the run invalid
    max_load_per_cpu: float  # other work's load average per CPU above which the run is invalid
    max_spread: float  # repeats spread wider than this (a share of their median) make a kernel invalid
    min_batch_growth: float  # a step growing slower than this share of its KV bytes at a fixed context is invalid
    device_specs: Mapping[str, str]  # GPU name fragment -> device id
    reported_platform: str  # id prefix of the reported platform in config/reported/
    reported_fits: tuple[str, ...]  # ids of the reported fits, fit.<id>.*
    sweeps: Mapping[str, Sweep]  # device kind (cpu, cuda) -> grid
    profile: ProfileGrid  # what `kvwall measure --profile` times in this mode


def _sweep(node: Mapping, file: str, key: str, model: Model, tile_tokens: int, block_size: int) -> Sweep:
    copy_bytes = checked_base(node["copy_buffer"]["value"], node["copy_buffer"]["unit"], "bytes", file, f"{key}.copy_buffer")
    if copy_bytes > LARGEST_COPY_BUFFER:
        raise SpecError(file, f"{key}.copy_buffer.value", f"{node['copy_buffer']['value']} {node['copy_buffer']['unit']} is "
                        f"more than the {LARGEST_COPY_BUFFER / GiB:g} GiB a copy buffer may take (two are allocated)")
    if node["layers"] > model.n_layers:
        raise SpecError(file, f"{key}.layers", f"{model.id} has {model.n_layers} layers (got {node['layers']})")
    for i, context in enumerate(node["contexts"]):
        if context % tile_tokens or context % block_size:
            raise SpecError(file, f"{key}.contexts[{i}]", f"{context} is not a multiple of tile_tokens ({tile_tokens}) and block_size ({block_size})")
    sweep = Sweep(node["layers"], node["dtype"], tuple(node["batches"]), tuple(node["contexts"]), node["repeats"], node["warmup"], int(copy_bytes))
    if len({b * c for b, c in sweep.points}) < 2 or len(sweep.points) < 3:
        raise SpecError(file, key, "a fit needs at least three (batch, context) points at two or more KV sizes")
    return sweep


def named_device(catalog: Catalog, device_specs: Mapping[str, str], name: str) -> Device | None:
    """The catalogue device whose name fragment (device_specs of the settings) appears in a GPU's ``name``."""
    for fragment, device_id in device_specs.items():
        if fragment.lower() in name.lower():
            return catalog.devices[device_id]
    return None


def load_measure_config(path: str | Path, catalog: Catalog, mode: str = "full", model_id: str | None = None) -> MeasureConfig:
    """Read and validate config/measure.yaml; ``model_id`` replaces its model (``kvwall measure --model``)."""
    file = str(path)
    document = read_yaml(path)
    validate(document, "measure", file)
    key = "model" if model_id is None else "--model"
    model_id = model_id or document["model"]
    if model_id not in catalog.models:
        raise SpecError(file, key, f"model {model_id!r} does not exist in {catalog.files['models']}")
    model = catalog.models[model_id]
    if not isinstance(model.attention, FullAttention) or model.attention.has_window:
        raise SpecError(file, key, f"{model_id} uses {model.attention.label}; the benchmark times MHA/GQA attention without windows")
    for fragment, device_id in document["device_specs"].items():
        if device_id not in catalog.devices:
            raise SpecError(file, f"device_specs.{fragment}", f"device {device_id!r} does not exist in {catalog.files['devices']}")
    if document["tile_tokens"] % document["block_size"]:
        raise SpecError(file, "tile_tokens", f"must be a whole number of {document['block_size']}-token blocks")
    sweeps = {
        device: _sweep(node, file, f"sweeps.{mode}.{device}", model, document["tile_tokens"], document["block_size"])
        for device, node in document["sweeps"][mode].items()
    }
    if sweeps["cpu"].dtype != "fp32":
        raise SpecError(file, f"sweeps.{mode}.cpu.dtype", "the numpy kernels hold KV in fp32 (numpy has no half-precision BLAS)")
    return MeasureConfig(
        file=file,
        mode=mode,
        model=model,
        block_size=document["block_size"],
        tile_tokens=document["tile_tokens"],
        seed=document["seed"],
        confidence=document["confidence"],
        targets=MappingProxyType(dict(document["targets"])),
        min_r_squared=document["validity"]["r_squared"],
        max_load_per_cpu=document["validity"]["load_per_cpu"],
        max_spread=document["validity"]["spread"],
        min_batch_growth=document["validity"]["batch_growth"],
        device_specs=MappingProxyType(dict(document["device_specs"])),
        reported_platform=document["reported"]["platform"],
        reported_fits=tuple(document["reported"]["fits"]),
        sweeps=MappingProxyType(sweeps),
        profile=ProfileGrid(**{key: tuple(value) if isinstance(value, list) else value
                               for key, value in document["profile"][mode].items()},
                            step_within=document["profile"]["step_within"]),
    )
