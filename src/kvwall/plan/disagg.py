"""Disaggregated serving for `kvwall plan --mode disagg`: a pool of prefill instances and a pool of decode instances
on at most N devices, the requests' prompts prefilled in the one, their tokens decoded in the other.

A decode instance is a layout at a batch (kvwall.plan.search.LayoutCurve, priced without prefill interference): it
emits b / TPOT tokens a second, at most its best within the TPOT target. A prefill instance is a layout whose every
replica prefills one prompt at a time: TTFT is its time to a first token on an idle instance (queueing and the KV's
transfer to the decode pool not priced), and each replica is busy ``busy`` seconds a prompt, so an instance feeds
replicas / busy requests a second, osl decode tokens each. With k_p prefill and k_d decode instances on
k_p n_p + k_d n_d <= N devices, the pools serve min(k_d x b / TPOT, k_p x replicas / busy x osl) tokens a second;
per device, over both pools. Per pair of layouts the counts with the most tokens per second per device are chosen
(fewest devices on a tie); where the prefill pool feeds fewer tokens than the decode pool could emit, the decode
batch is the smallest that emits them, at its lower TPOT. Best first: most tokens/s per device, then fewest devices,
then lowest TPOT, then lowest TTFT.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kvwall.inputs.deployment import Deployment
from kvwall.plan.search import LayoutCurve, Workload

#: Significant digits two rates per device must share to tie.
TIE_DIGITS = 9


@dataclass(frozen=True)
class PrefillLayout:
    """A layout as a prefill instance: its TTFT on an idle instance and the seconds a replica is busy per prompt."""

    deployment: Deployment
    ttft: float
    busy: float

    @property
    def requests_per_second(self) -> float:
        """Prompts an instance prefills a second: one per replica every ``busy`` seconds."""
        return self.deployment.data_parallel / self.busy


@dataclass(frozen=True)
class DisaggPoint:
    """k_p prefill instances of one layout and k_d decode instances of another at a batch per decode instance."""

    prefill: Deployment
    prefill_instances: int
    decode: Deployment
    decode_instances: int
    batch: int
    tpot: float  # s per output token, of the decode pool
    ttft: float  # s, of the prefill pool
    tokens_per_second_per_device: float

    @property
    def devices(self) -> int:
        return self.prefill_instances * self.prefill.devices + self.decode_instances * self.decode.devices

    @property
    def tokens_per_second_per_user(self) -> float:
        return 1.0 / self.tpot


def _significant(rates: np.ndarray) -> np.ndarray:
    """Positive rates to TIE_DIGITS significant digits; the rest -inf."""
    positive = np.isfinite(rates) & (rates > 0)
    scale = 10.0 ** (TIE_DIGITS - 1 - np.floor(np.log10(np.where(positive, rates, 1.0))))
    return np.where(positive, np.round(rates * scale) / scale, -np.inf)


def _pools(prefill: PrefillLayout, decode: Deployment, emitted: float, fed: float, devices: int
           ) -> tuple[int, int, float] | None:
    """The instance counts (k_p, k_d) with the most tokens per second per device, fewest devices on a tie, and that
    rate; None where one instance of each does not fit."""
    k_d = np.arange(1, devices // decode.devices + 1)[:, None]
    k_p = np.arange(1, devices // prefill.deployment.devices + 1)[None, :]
    used = k_d * decode.devices + k_p * prefill.deployment.devices
    rate = np.where(used <= devices, np.minimum(k_d * emitted, k_p * fed) / used, -np.inf)
    if rate.size == 0 or not np.isfinite(rate.max()):
        return None
    candidates = np.argwhere(_significant(rate) == _significant(rate).max())
    d, p = min(candidates, key=lambda c: (used[c[0], c[1]], c[0]))
    return int(k_p[0, p]), int(k_d[d, 0]), float(rate[d, p])


def disagg_best(prefills: list[PrefillLayout], decodes: list[LayoutCurve], workload: Workload,
                devices: int) -> list[DisaggPoint]:
    """Per pair of a prefill and a decode layout that meets the targets, its pools and batch with the most tokens
    per second per device; best first."""
    found = []
    for curve in decodes:
        meets = np.flatnonzero(curve.tpot <= workload.tpot_max)
        if not meets.size:
            continue
        per_instance = curve.batches[meets] / curve.tpot[meets]
        top = int(np.argmax(per_instance))
        for prefill in prefills:
            if workload.ttft_max is not None and prefill.ttft > workload.ttft_max:
                continue
            fed = prefill.requests_per_second * workload.output_tokens
            pools = _pools(prefill, curve.deployment, float(per_instance[top]), fed, devices)
            if pools is None:
                continue
            k_p, k_d, rate = pools
            needed = k_p * fed / k_d  # tokens a second each decode instance must emit
            enough = np.flatnonzero(per_instance >= needed)
            i = meets[int(enough[0])] if needed < per_instance[top] and enough.size else meets[top]
            found.append(DisaggPoint(prefill.deployment, k_p, curve.deployment, k_d, int(curve.batches[i]),
                                     float(curve.tpot[i]), prefill.ttft, rate))
    return sorted(found, key=lambda p: (-float(_significant(np.array([p.tokens_per_second_per_device]))[0]), p.devices,
                                        p.tpot, p.ttft))
