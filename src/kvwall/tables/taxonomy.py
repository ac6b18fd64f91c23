"""SoK Table 2: the five mitigation domains, each scaling one factor of Eq. 2 (config/techniques.yaml)."""

from __future__ import annotations

from kvwall.inputs.catalog import Catalog
from kvwall.render import Column, Table, keyed


@keyed("domain_id")
def domains(catalog: Catalog, selections: dict) -> Table:
    """The taxonomy as configured: mechanism, scaled factor, losslessness and representative methods."""
    return Table(
        id="table2_taxonomy",
        title="Table 2. Five-domain taxonomy of KV-cache mitigation",
        caption="Each domain scales one factor of Eq. 2 or relocates bytes across tiers. *Transport codecs such as "
        "CacheGen optionally quantize, making the link lossy by choice.",
        columns=(
            Column("domain_id", "id", printed=False),
            Column("domain", "Domain"),
            Column("mechanism", "Mechanism", "assumption"),
            Column("scales", "Scales", "assumption"),
            Column("lossless", "Lossless", "assumption"),
            Column("methods", "Representative methods", "assumption"),
        ),
        rows=tuple(
            {"domain_id": d.id, "domain": d.name, "mechanism": d.mechanism, "scales": d.scales,
             "lossless": d.lossless.capitalize(), "methods": ", ".join(d.methods)}
            for d in catalog.domains.values()
        ),
        sources=(catalog.files["techniques"],),
    )
