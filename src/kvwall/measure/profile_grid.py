"""The grid `kvwall measure --profile` times (config/measure.yaml, profile)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ProfileGrid:
    """The points a profile times: every batch at every context in every format, ``repeats`` timed runs each."""

    batches: tuple[int, ...]
    contexts: tuple[int, ...]
    formats: tuple[str, ...]
    repeats: int
    warmup: int
    step_within: float  # the whole step should lie within this share of the sum of its operations (a target)

    def as_record(self) -> dict:
        return {"batches": list(self.batches), "contexts": list(self.contexts), "formats": list(self.formats),
                "repeats": self.repeats, "warmup": self.warmup, "step_within": self.step_within}
