"""Dense rates no datasheet states (config/device_assumptions.yaml), added to the devices they estimate.

Each keeps its evidence class, assumption, in the device's provenance; a datasheet rate is never overridden.
"""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType
from typing import Mapping

from kvwall.inputs.specs import Device


def with_assumed_rates(devices: Mapping[str, Device], document: Mapping, reader) -> dict[str, Device]:
    """The devices with the assumed dense rates of ``document`` added."""
    from kvwall.inputs.loader import SpecError

    result = dict(devices)
    for device_id, entry in document["device_assumptions"].items():
        key = f"device_assumptions.{device_id}"
        if device_id not in result:
            raise SpecError(reader.file, key, f"device {device_id!r} is not in the devices file")
        device = result[device_id]
        flops, prov = dict(device.dense_flops), dict(device.provenance)
        for precision, node in entry["dense_flops"].items():
            if precision in flops:
                raise SpecError(reader.file, f"{key}.dense_flops.{precision}", "the datasheet states this rate; an assumption cannot replace it")
            prov[f"dense_flops.{precision}"] = reader.quantity(node, f"{key}.dense_flops.{precision}", "FLOP/s")
            flops[precision] = prov[f"dense_flops.{precision}"].value
        result[device_id] = replace(device, dense_flops=MappingProxyType(flops), provenance=MappingProxyType(prov))
    return result
