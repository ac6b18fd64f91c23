"""A deterministic event simulation of per-layer KV prefetch over one decode step (CANONICAL-NUMBERS §5).

Layers compute in order. The transfer a layer needs is issued when the layer ``depth`` places earlier starts (the
first ones ``slack`` seconds before the step); after its latency it joins the link, which moves one transfer's
bytes at a time, first come first served. A layer starts when the previous layer has ended and its transfer has
arrived. The simulation shows what the two tier constraints miss apart: an aggregate rate the link sustains with
transfers that still stall (bursty transfers, a first transfer with no compute to overlap), and transfers that each
fit their window while the link, shared by all of them, falls behind and its queue grows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kvwall.tier.constraints import Prefetch, TierScenario, layer_compute_times, transfer_plan

#: Seconds below any layer or transfer time and above floating-point rounding: a stall shorter than this is none.
STALL_TOLERANCE = 1e-12


@dataclass(frozen=True)
class Timeline:
    """Every event of one simulated decode step (seconds from the step's start), by layer and by transfer."""

    compute_start: np.ndarray
    compute_end: np.ndarray
    layers: np.ndarray  # layer that needs each transfer
    sizes: np.ndarray
    issue: np.ndarray
    link_start: np.ndarray  # the link starts moving the transfer's bytes
    arrival: np.ndarray  # the last byte is in HBM
    ready: np.ndarray  # compute has reached the layer that needs the transfer
    latency: float
    bandwidth: float

    @property
    def stalls(self) -> np.ndarray:
        """Time compute waits on each transfer."""
        return np.maximum(self.arrival - self.ready, 0.0)

    @property
    def queue_waits(self) -> np.ndarray:
        """Time each transfer waits for the link after its latency: contention with earlier transfers."""
        return self.link_start - (self.issue + self.latency)

    @property
    def late_transfers(self) -> int:
        return int(np.count_nonzero(self.stalls > STALL_TOLERANCE))

    @property
    def step_time(self) -> float:
        return float(self.compute_end[-1])

    @property
    def stall_time(self) -> float:
        """Step time lost to waiting on transfers."""
        return self.step_time - float(np.sum(self.compute_end - self.compute_start))

    @property
    def link_utilization(self) -> float:
        """Average rate over the link bandwidth: busy time over the step plus any lead the link had before it."""
        lead = max(0.0, -float(self.link_start.min(initial=0.0)))
        return float(np.sum(self.sizes)) / self.bandwidth / (self.step_time + lead)


def simulate(
    compute: np.ndarray, layers: np.ndarray, sizes: np.ndarray, bandwidth: float, latency: float, prefetch: Prefetch
) -> Timeline:
    """Simulate one step: per-layer compute times, transfers (needing layer, bytes), a FIFO link, a prefetch policy."""
    n_layers = len(compute)
    transfer_of = {int(layer): i for i, layer in enumerate(layers)}
    start, end = np.zeros(n_layers), np.zeros(n_layers)
    issue, link_start, arrival, ready = (np.zeros(len(layers)) for _ in range(4))
    link_free = -np.inf
    for layer in range(n_layers):
        layer_ready = end[layer - 1] if layer else 0.0
        start[layer] = layer_ready
        if layer in transfer_of:
            i = transfer_of[layer]
            issue[i] = start[layer - prefetch.depth] if layer >= prefetch.depth else -prefetch.slack
            link_start[i] = max(issue[i] + latency, link_free)
            link_free = link_start[i] + sizes[i] / bandwidth
            arrival[i], ready[i] = link_free, layer_ready
            start[layer] = max(layer_ready, arrival[i])
        end[layer] = start[layer] + compute[layer]
    return Timeline(start, end, np.asarray(layers), np.asarray(sizes, dtype=float), issue, link_start, arrival, ready,
                    latency, bandwidth)


def simulate_scenario(scenario: TierScenario) -> Timeline:
    """Simulate a tier scenario's decode step with its transfer plan and the HBM-side step divided over the layers."""
    layers, sizes = transfer_plan(scenario)
    return simulate(layer_compute_times(scenario), layers, sizes, scenario.tier.bandwidth, scenario.tier.latency,
                    scenario.prefetch)
