"""Plausibility of specs: numbers that load but are likely mistyped, each reported with the file and key.

Warnings: a derived parameter count more than 3% off the nominal one (a wrong head_dim or expert count), HBM
bandwidth or capacity outside the range of the catalogue's accelerators by more than 10x, a window longer than the
model's context. Errors (numbers that cannot be right, refused by the loader): n_q not a multiple of n_kv.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Mapping

from kvwall.inputs.specs import Device, Model

#: Relative difference between the derived and the nominal parameter count above which a model is reported.
PARAMS_TOLERANCE = 0.03
#: Factor beyond the catalogue's range of HBM bandwidth or capacity at which a device is reported.
RANGE_FACTOR = 10.0


@dataclass(frozen=True)
class Finding:
    """One implausible number: where it is and why it looks wrong."""

    file: str
    key: str
    reason: str

    def __str__(self) -> str:
        return f"warning: {self.file}: {self.key}: {self.reason}"


def model_findings(model: Model, file: str, derived_params: Callable[[Model], float | None]) -> list[Finding]:
    """A derived parameter count far from the nominal one; a window longer than the context."""
    found = []
    derived = derived_params(model)
    if derived is not None and abs(derived / model.params_nominal - 1.0) > PARAMS_TOLERANCE:
        found.append(Finding(file, f"models.{model.id}.params_nominal",
                             f"{model.params_nominal:.4g} is {abs(derived / model.params_nominal - 1):.1%} off the count "
                             f"the architecture implies, {derived:.4g} (a wrong head_dim or expert count?)"))
    if model.max_context and model.attention.has_window and model.attention.window > model.max_context:
        found.append(Finding(file, f"models.{model.id}.attention",
                             f"window {model.attention.window:g} is longer than the context {model.max_context:g}"))
    return found


def device_findings(device: Device, file: str, reference: Iterable[Device]) -> list[Finding]:
    """HBM bandwidth or capacity more than RANGE_FACTOR outside the range of the ``reference`` devices."""
    reference = list(reference)
    found = []
    for name, unit, scale in (("hbm_bandwidth", "TB/s", 1e12), ("hbm_capacity", "GB", 1e9)):
        values = [getattr(d, name) for d in reference]
        low, high, value = min(values), max(values), getattr(device, name)
        if value < low / RANGE_FACTOR or value > high * RANGE_FACTOR:
            found.append(Finding(file, f"devices.{device.id}.{name}",
                                 f"{value / scale:g} {unit} is more than {RANGE_FACTOR:g}x outside the catalogue's range "
                                 f"{low / scale:g}-{high / scale:g} {unit} (a unit typed wrong?)"))
    return found


def catalogue_findings(models: Mapping[str, Model], devices: Mapping[str, Device], reference: Mapping[str, Device],
                       files: Mapping[str, str], derived_params: Callable[[Model], float | None]) -> list[Finding]:
    """Every finding over the given models and devices, against the ``reference`` devices' range."""
    found = []
    for model in models.values():
        found += model_findings(model, files.get(model.id, files["models"]), derived_params)
    for device in devices.values():
        found += device_findings(device, files.get(device.id, files["devices"]), reference.values())
    return found
