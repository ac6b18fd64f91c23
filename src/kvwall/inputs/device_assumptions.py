"""Device numbers no datasheet states (config/device_assumptions.yaml), added to the devices they describe: dense
rates estimated from the datasheets, and the fabric a device is deployed in (how many devices one scale-up link
connects, and the scale-out link past them).

Each keeps its evidence class, assumption, in the device's provenance; a datasheet rate is never overridden.
"""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType
from typing import Mapping

from kvwall.inputs.deployment import MAX_DEVICES
from kvwall.inputs.errors import SpecError
from kvwall.inputs.specs import Device, Fabric


def read_fabric(entry: Mapping, key: str, prov: dict, reader) -> Fabric:
    """A fabric node: its domain and, unless the domain holds every deployment searched, its scale-out link."""
    prov["fabric.domain"] = reader.quantity(entry["domain"], f"{key}.fabric.domain", "count")
    scale_out = entry.get("scale_out")
    if scale_out is None and prov["fabric.domain"].value < MAX_DEVICES:
        raise SpecError(reader.file, f"{key}.fabric.scale_out", f"missing: deployments of up to {MAX_DEVICES} devices "
                        f"leave this {int(prov['fabric.domain'].value)}-device domain; give the link past it")
    if scale_out is None:
        return Fabric(int(prov["fabric.domain"].value), None, None)
    prov["fabric.scale_out"] = reader.quantity(scale_out["bandwidth"], f"{key}.fabric.scale_out.bandwidth", "bytes/s")
    return Fabric(int(prov["fabric.domain"].value), scale_out["name"], prov["fabric.scale_out"].value)


def with_assumptions(devices: Mapping[str, Device], document: Mapping, reader) -> dict[str, Device]:
    """The devices with the assumed dense rates and fabrics of ``document`` added."""
    result = dict(devices)
    for device_id, entry in document["device_assumptions"].items():
        key = f"device_assumptions.{device_id}"
        if device_id not in result:
            raise SpecError(reader.file, key, f"device {device_id!r} is not in the devices file")
        device = result[device_id]
        flops, prov = dict(device.dense_flops), dict(device.provenance)
        for precision, node in entry.get("dense_flops", {}).items():
            if precision in flops:
                raise SpecError(reader.file, f"{key}.dense_flops.{precision}", "the datasheet states this rate; an assumption cannot replace it")
            prov[f"dense_flops.{precision}"] = reader.quantity(node, f"{key}.dense_flops.{precision}", "FLOP/s")
            flops[precision] = prov[f"dense_flops.{precision}"].value
        fabric = device.fabric
        if "fabric" in entry:
            if device.fabric is not None:
                raise SpecError(reader.file, f"{key}.fabric", "the devices file states this device's fabric; an assumption cannot replace it")
            if device.scale_up is None:
                raise SpecError(reader.file, f"{key}.fabric", "a fabric needs the device's scale-up link (devices.yaml scale_up)")
            fabric = read_fabric(entry["fabric"], key, prov, reader)
        result[device_id] = replace(device, dense_flops=MappingProxyType(flops), fabric=fabric,
                                    provenance=MappingProxyType(prov))
    return result
