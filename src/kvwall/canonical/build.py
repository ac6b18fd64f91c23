"""Assemble CANONICAL-NUMBERS from its inputs: the catalogue, the tier scenarios, reported values, the derived
tables and committed measurements, in the section order Figure 3.1's footer relies on (§4 economics, §5 constraints)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import pandas as pd

from kvwall.canonical.document import Document
from kvwall.canonical.audit import economics_audit, reproduction_audit, slope_audit
from kvwall.canonical.derived import TABLE_INPUTS, capacity_section, comparison_section, crossover_section
from kvwall.canonical.measured import measured_section
from kvwall.canonical.tiers import constraints_section, economics_section
from kvwall.canonical.validation import VALIDATION_TABLE_INPUTS, validation_section
from kvwall.inputs.catalog import Catalog
from kvwall.inputs.specs import Reported
from kvwall.inputs.views import View
from kvwall.tier.inputs import TierSpecs, load_tiers


@dataclass(frozen=True)
class CanonicalInputs:
    """Everything the document is built from, already read and validated."""

    catalog: Catalog
    tiers: TierSpecs
    reported: Mapping[str, Reported]
    tables: Mapping[str, pd.DataFrame]
    measured: tuple[tuple[str, str], ...]  # (path, Markdown) of each committed measurement table


def load_inputs(view: View, tiers_file: str, table_paths: Mapping[str, str], measured_paths: Sequence[str]) -> CanonicalInputs:
    """Read the inputs beside the catalogue ``view`` holds (kvwall.inputs.views): the tier scenarios, tables by artifact
    (CSV path), measurement tables (Markdown paths), in the order given."""
    return CanonicalInputs(
        catalog=view.catalog,
        tiers=load_tiers(tiers_file, view.catalog),
        reported=view.reported,
        tables={artifact: pd.read_csv(path, keep_default_na=False, na_values=[""]) for artifact, path in table_paths.items()},
        measured=tuple((str(path), Path(path).read_text(encoding="utf-8")) for path in sorted(measured_paths)),
    )


def table_paths(folder: str = "tables") -> dict[str, str]:
    """The CSV path of every table the document reads, by artifact."""
    return {artifact: f"{folder}/{artifact}.csv" for artifact in (*TABLE_INPUTS, *VALIDATION_TABLE_INPUTS)}


def build_document(inputs: CanonicalInputs) -> Document:
    """The eight sections: measured, capacity, crossovers, tier economics, the four constraints, the matrix, the audit,
    and the validation against measured serving points."""
    catalog, tiers, reported, tables = inputs.catalog, inputs.tiers, dict(inputs.reported), inputs.tables
    files = dict(catalog.files)
    return Document(
        sections=(
            measured_section(reported, inputs.measured),
            capacity_section(catalog, tables),
            crossover_section(catalog, tables),
            economics_section(tiers, files),
            constraints_section(tiers, files, reported),
            comparison_section(catalog, tables),
        ),
        audit_intro="Published numbers recomputed from their own inputs: the SoK's printed numbers that the reproduction "
        "audit (tables/audit/reproduction.md) finds different from ours, then every number stated about the reported "
        "KV-slope measurement and the published tier economics. A published number agrees when ours rounds to it at "
        "its printed precision.",
        audit=(*reproduction_audit(tables["audit/reproduction"]), *slope_audit(reported, catalog),
               *economics_audit(reported, catalog, tiers)),
        after_audit=(validation_section(tables),),
    )
