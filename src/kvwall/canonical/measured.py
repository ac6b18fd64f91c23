"""CANONICAL-NUMBERS §1: the reported KV-slope measurement, kept as reported, and this project's own measurements."""

from __future__ import annotations

from typing import Sequence

from kvwall.canonical.document import Block, Number, Row, Section, label, show_as_given
from kvwall.canonical.tiers import FITS
from kvwall.inputs.reported import Reported

#: Reported values of the platform and model, then the claims and throughput points stated with the fits.
PLATFORM_IDS = ("gb10.platform", "gb10.memory-bandwidth-spec", "gb10.copy-bandwidth", "gb10.copy-fraction-of-spec",
                "qwen2.5-7b.kv-per-token", "qwen2.5-7b.weights")
CLAIM_IDS = ("claim.slopes-within", "claim.fixed-path-improvement", "claim.kv-path-cost-ratio",
             "throughput.batch16-context4k", "throughput.batch16-context16k")
FIT_FIELDS = (("intercept", "a"), ("slope", "b"), ("points", "n"), ("r-squared", "R²"),
              ("fixed-path-bandwidth", "Fixed-path bandwidth"), ("kv-bandwidth", "KV bandwidth"))

def as_reported(value: Reported, number_id: str | None = None, quantity: str | None = None, key: str | None = None) -> Number:
    """A reported value as its source states it (value and unit as written), with its citation and file key."""
    source = f"{value.source}; {value.file} {key or value.id}"
    if value.text is not None:
        return label(number_id or value.id, quantity or value.note or value.id, value.text, "reported", source)
    return Number(number_id or value.id, quantity or value.note or value.id, value.given, value.unit,
                  show_as_given(value.given, value.unit), "reported", source)


def _long(reported: dict[str, Reported], ids: Sequence[str], labels: dict[str, str]) -> tuple[Row, ...]:
    return tuple(Row(labels[i], (as_reported(reported[i], f"s1.{i}", labels[i]),)) for i in ids)


def measured_section(reported: dict[str, Reported], measured_tables: Sequence[tuple[str, str]]) -> Section:
    """§1 from config/reported/kv_slopes.yaml and the Markdown tables of committed measurement records."""
    platform_labels = {
        "gb10.platform": "Platform", "gb10.memory-bandwidth-spec": "Memory bandwidth, specification",
        "gb10.copy-bandwidth": "Achieved streaming copy bandwidth", "gb10.copy-fraction-of-spec": "Copy bandwidth over specification",
        "qwen2.5-7b.kv-per-token": "Qwen2.5-7B-Instruct KV per token (fp16)", "qwen2.5-7b.weights": "Qwen2.5-7B-Instruct weights (fp16)",
    }
    claim_labels = {
        "claim.slopes-within": "KV slopes within", "claim.fixed-path-improvement": "Fixed-path bandwidth improvement",
        "claim.kv-path-cost-ratio": "KV path cost per byte over the fixed path",
        "throughput.batch16-context4k": "Throughput, batch 16 at 4K context",
        "throughput.batch16-context16k": "Throughput, batch 16 at 16K context",
    }
    fits = Block(
        title="Two-term fits of decode-step time, t = a + b · KV_GiB",
        header="Framework",
        columns=tuple(name for _, name in FIT_FIELDS),
        rows=tuple(
            Row(reported[f"fit.{fit}.framework"].text,
                tuple(as_reported(reported[f"fit.{fit}.{key}"], f"s1.fit.{fit}.{key}", f"{name}, {fit}", f"fit.{fit}.*")
                  for key, name in FIT_FIELDS))
            for fit in FITS
        ),
    )
    if measured_tables:
        verbatim = tuple(f"### 1.4 This project's measurements: `{path}`\n\n" + _demoted(text) for path, text in measured_tables)
    else:
        verbatim = ("### 1.4 This project's measurements\n\nNone committed yet. `kvwall measure` records a run under "
                    "`data/measured/`, rendered to `tables/measured/`; committed records appear here, class measured.",)
    return Section(
        number=1,
        title="Measured",
        intro="A decode-step KV-slope measurement published by another body of work, kept exactly as reported: two "
        "frameworks (different attention kernels, paged and unpaged KV) on unified LPDDR5X memory, not HBM. For this "
        "project every value of it is reported; §5 turns it into bandwidths and ratios (derived) and §7 audits the "
        "claims made about it.",
        blocks=(
            Block("Platform and model", _long(reported, PLATFORM_IDS, platform_labels)),
            fits,
            Block("Claims and throughput points stated with the fits", _long(reported, CLAIM_IDS, claim_labels)),
        ),
        verbatim=verbatim,
    )


def _demoted(markdown: str) -> str:
    """A committed table's Markdown with its headings pushed below this document's (# -> ####)."""
    return "\n".join("###" + line if line.startswith("#") else line for line in markdown.strip().splitlines())
