"""The four constraints on KV state and what a memory tier behind HBM does to each (Figure 3.1, CANONICAL-NUMBERS §5).

1. Capacity: tokens resident with and without the tier (relieved).
2. HBM-side bandwidth: attention re-reads the active KV out of HBM every decode step (unchanged).
3. Tier ingress (sustainability): the aggregate rate at which KV must cross the link per step (created).
4. Transfer latency (hiding): each transfer against the compute it overlaps (created, distinct from 3).

A residency policy puts a fraction f of every sequence's KV behind the link, spread evenly over the layers and
moved in transfers of ``layers_per_transfer`` layers each; attention still reads all of it from HBM, so the tier's
part crosses the link every step. A decode step is divided evenly over the layers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from kvwall.model.footprint import kv_bytes_per_token
from kvwall.model.roofline import step_flops, step_kv_bytes, step_time, step_weight_bytes, striped_bandwidth
from kvwall.inputs.specs import Device, Model


@dataclass(frozen=True)
class Tier:
    """Memory behind a link: capacity (bytes), link bandwidth into HBM (bytes/s) and per-transfer latency (s)."""

    capacity: float
    bandwidth: float
    latency: float


@dataclass(frozen=True)
class DecodeSet:
    """The sequences decoded together: batch b of context s tokens each."""

    batch: int
    context: float


@dataclass(frozen=True)
class Residency:
    """Fraction of each sequence's KV that lives in the tier, and how many layers' worth one transfer carries."""

    tier_fraction: float
    layers_per_transfer: int


@dataclass(frozen=True)
class Prefetch:
    """Transfer for layer l is issued when layer l - depth starts; the first ones ``slack`` seconds before the step."""

    depth: int
    slack: float


@dataclass(frozen=True)
class TierScenario:
    """A model decoding a decode set on a device, with part of its KV in a tier."""

    model: Model
    device: Device
    tier: Tier
    decode_set: DecodeSet
    residency: Residency
    prefetch: Prefetch
    weight_bytes_per_param: float
    kv_bytes_per_element: float
    compute_precision: str


@dataclass(frozen=True)
class Capacity:
    """Constraint 1: KV tokens (and whole sequences of the decode set's context) that fit, without and with the tier."""

    tokens_without: float
    tokens_with: float
    sequences_without: int
    sequences_with: int

    @property
    def relieved(self) -> bool:
        return self.tokens_with > self.tokens_without


@dataclass(frozen=True)
class HbmSide:
    """Constraint 2: bytes attention and the weights read out of HBM per step, and the step time they set."""

    read_bytes: float
    step_time: float
    tier_write_bytes: float  # prefetched KV landing in HBM per step (0 without a tier)


@dataclass(frozen=True)
class Ingress:
    """Constraint 3: the aggregate rate at which KV must cross the link to keep the step at its HBM-side time."""

    bytes_per_step: float
    required_rate: float
    link_bandwidth: float
    max_fraction: float  # largest tier fraction the link sustains
    link_bound_step_time: float  # step time if the link sets the pace

    @property
    def holds(self) -> bool:
        return self.required_rate <= self.link_bandwidth


@dataclass(frozen=True)
class Hiding:
    """Constraint 4: each transfer in isolation against the window it has before its layer needs it."""

    layers: np.ndarray  # layer index that needs each transfer
    sizes: np.ndarray  # bytes
    times: np.ndarray  # latency + size / bandwidth (s)
    windows: np.ndarray  # overlapped compute plus slack (s)

    @property
    def hidden(self) -> np.ndarray:
        return self.times <= self.windows

    @property
    def late_transfers(self) -> int:
        return int(np.count_nonzero(~self.hidden))

    @property
    def all_hidden(self) -> bool:
        return self.late_transfers == 0


def stored_weight_bytes(model: Model, weight_bytes_per_param: float) -> float:
    """P w_p: every weight resident in HBM, all experts included (SoK section 3.4)."""
    return model.params_nominal * weight_bytes_per_param


def slope_bandwidth(slope: float) -> float:
    """Effective bandwidth implied by a decode-step KV slope (seconds per byte of KV): 1 / slope, in bytes/s."""
    return 1.0 / slope


def active_kv_bytes(scenario: TierScenario) -> float:
    """KV bytes the decode set's attention reads per step: b 2 L n_kv d_h s w_kv (SoK section 3.1)."""
    ds = scenario.decode_set
    return float(step_kv_bytes(scenario.model, ds.context, ds.batch, scenario.kv_bytes_per_element))


def transfer_plan(scenario: TierScenario) -> tuple[np.ndarray, np.ndarray]:
    """Layer that needs each transfer, and its size: the tier's share of each layer, grouped k layers per transfer."""
    n_layers = scenario.model.n_layers
    per_layer = scenario.residency.tier_fraction * active_kv_bytes(scenario) / n_layers
    k = scenario.residency.layers_per_transfer
    layers = np.arange(0, n_layers if per_layer > 0 else 0, k)
    group_sizes = np.minimum(k, n_layers - layers)
    return layers, per_layer * group_sizes


def hbm_side(scenario: TierScenario) -> HbmSide:
    """Constraint 2: weight and active KV bytes over striped HBM bandwidth (SoK section 3.3), whatever the tier holds."""
    model, ds = scenario.model, scenario.decode_set
    read = float(step_weight_bytes(model, scenario.weight_bytes_per_param, ds.batch)) + active_kv_bytes(scenario)
    flops = step_flops(model, ds.context, ds.batch)
    time = float(step_time(flops, read, scenario.device.dense_flops[scenario.compute_precision], striped_bandwidth(scenario.device)))
    return HbmSide(read, time, scenario.residency.tier_fraction * active_kv_bytes(scenario))


def layer_compute_times(scenario: TierScenario) -> np.ndarray:
    """The HBM-side step time divided evenly over the layers: the compute each layer's transfer can overlap."""
    n_layers = scenario.model.n_layers
    return np.full(n_layers, hbm_side(scenario).step_time / n_layers)


def capacity(scenario: TierScenario) -> Capacity:
    """Constraint 1: tokens of KV that fit.

    Without the tier: (HBM - P w_p) / kv_per_token. With it: HBM keeps (1 - f) of each token plus staging buffers
    for the transfers in flight (depth + 1 of them), and the tier keeps f of each token up to its capacity.
    """
    model, ds = scenario.model, scenario.decode_set
    per_token = kv_bytes_per_token(model, scenario.kv_bytes_per_element)
    free = scenario.device.hbm_capacity - stored_weight_bytes(model, scenario.weight_bytes_per_param)
    f = scenario.residency.tier_fraction
    staging = (scenario.prefetch.depth + 1) * float(transfer_plan(scenario)[1].max(initial=0.0))
    without = max(free, 0.0) / per_token
    hbm_limit = max(free - staging, 0.0) / ((1.0 - f) * per_token) if f < 1.0 else math.inf
    tier_limit = scenario.tier.capacity / (f * per_token) if f > 0.0 else math.inf
    with_tier = min(hbm_limit, tier_limit)
    return Capacity(without, with_tier, int(without // ds.context), int(with_tier // ds.context))


def ingress(scenario: TierScenario) -> Ingress:
    """Constraint 3 (sustainability): B_tier >= f * active KV bytes / T_step, summed over the decode set."""
    step = hbm_side(scenario).step_time
    active = active_kv_bytes(scenario)
    moved = scenario.residency.tier_fraction * active
    bandwidth = scenario.tier.bandwidth
    return Ingress(
        bytes_per_step=moved,
        required_rate=moved / step,
        link_bandwidth=bandwidth,
        max_fraction=min(1.0, bandwidth * step / active),
        link_bound_step_time=max(step, moved / bandwidth),
    )


def transfer_windows(layers: np.ndarray, compute: np.ndarray, prefetch: Prefetch) -> np.ndarray:
    """Time between a transfer's issue and the start of the layer that needs it, on the stall-free schedule.

    Issued when layer l - depth starts: it overlaps layers l - depth .. l - 1. The first ``depth`` layers' transfers
    are issued ``slack`` seconds before the step and overlap the layers before theirs, plus that slack.
    """
    starts = np.concatenate(([0.0], np.cumsum(compute)))
    issue = np.where(layers >= prefetch.depth, starts[np.maximum(layers - prefetch.depth, 0)], -prefetch.slack)
    return starts[layers] - issue


def hiding(scenario: TierScenario) -> Hiding:
    """Constraint 4 (hiding): T_transfer = latency + size / B_tier <= overlapped compute + slack, per transfer."""
    layers, sizes = transfer_plan(scenario)
    times = scenario.tier.latency + sizes / scenario.tier.bandwidth
    windows = transfer_windows(layers, layer_compute_times(scenario), scenario.prefetch)
    return Hiding(layers, sizes, times, windows)
