"""Every catalogue device with its memory, dense rates and scale-up link, as the datasheets give them."""

from __future__ import annotations

from kvwall.inputs.catalog import Catalog
from kvwall.inputs.specs import Device
from kvwall.render import Column, Table, keyed


def _link(device: Device) -> str:
    """The scale-up link as printed: NVLink 5, 1800 GB/s bidirectional; Infinity Fabric, 7 x 128 GB/s."""
    link = device.scale_up
    if link is None:
        return ""
    rate = f"{link.bandwidth / 1e9:g} GB/s"
    return f"{link.name}, {f'{link.links} x ' if link.links else ''}{rate} ({link.direction})"


def _spec_rate(device: Device, precision: str) -> float | None:
    """A dense rate a datasheet states; None where there is none or only an assumed one."""
    given = device.provenance.get(f"dense_flops.{precision}")
    return given.value if given is not None and given.evidence == "spec" else None


@keyed("device_id")
def device_catalogue(catalog: Catalog, selections: dict) -> Table:
    """All devices of the catalogue, whatever the paper's Table 3 selects."""
    return Table(
        id="device_catalogue",
        title="The device catalogue: memory, dense compute and scale-up link per accelerator",
        caption=f"Every device of {catalog.files['devices']}, per accelerator (GB200 and GB300: per GPU). Dense "
        "tensor-core rates in TFLOP/s; blank where no datasheet states one (config/device_assumptions.yaml estimates some). The scale-up link as the datasheet prints "
        "it, per accelerator or per link, with the direction it states.",
        columns=(Column("device_id", "id", printed=False), Column("device", "Device"),
                 Column("package", "Package", "spec"),
                 Column("hbm_capacity", "HBM", "spec", "gb_label", "B"),
                 Column("hbm_bandwidth", "β_agg", "spec", "tbps", "B/s"),
                 Column("bf16_dense", "BF16", "spec", "tflops", "FLOP/s"),
                 Column("fp8_dense", "FP8", "spec", "tflops", "FLOP/s"),
                 Column("scale_up", "Scale-up link", "spec")),
        rows=tuple(
            {"device_id": d.id, "device": d.name, "package": d.package, "hbm_capacity": d.hbm_capacity,
             "hbm_bandwidth": d.hbm_bandwidth, "bf16_dense": _spec_rate(d, "bf16"), "fp8_dense": _spec_rate(d, "fp8"),
             "scale_up": _link(d)}
            for d in catalog.devices.values()
        ),
        sources=(catalog.files["devices"],),
    )
