"""Every table artifact of the pipeline, by path under tables/ (without suffix), and the function that builds it.

Each builder takes the catalogue and the resolved workflow selections and returns a kvwall.render.Table.
"""

from __future__ import annotations

from typing import Callable

from kvwall.catalog import Catalog
from kvwall.render import Table
from kvwall.tables import architecture

Builder = Callable[[Catalog, dict], Table]

ARTIFACTS: dict[str, Builder] = {
    "spec/table1_architectures": architecture.architectures,
    "derived/table1_kv_per_token": architecture.kv_per_token,
    "paper/table1": architecture.paper_view,
}
