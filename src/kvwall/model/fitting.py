"""Which deployments of a model fit a batch and context on a device: the candidates and the test.

A candidate is one pipeline stage (PP 1) on 1 to 64 devices with every valid TP (the rest of the devices attention
DP) and, for an MoE model, EP 1 or the experts spread over every device (the only choice with attention DP). It fits when every sequence asked for is
resident at once (kvwall.model.capacity.sequences_that_fit).
"""

from __future__ import annotations

from kvwall.inputs.deployment import Deployment, DeploymentError, checked_deployment
from kvwall.inputs.specs import Model
from kvwall.model.capacity import sequences_that_fit

#: Device counts the search tries.
DEVICE_COUNTS = (1, 2, 4, 8, 16, 32, 64)


def candidate_deployments(model: Model, weight_format: str, kv_format: str,
                          counts: tuple[int, ...] = DEVICE_COUNTS) -> list[Deployment]:
    """Every valid single-stage deployment of ``model`` on ``counts`` devices, fewest devices and lowest TP first."""
    found = []
    for n in counts:
        for tp in (t for t in counts if t <= n and n % t == 0):
            for ep in sorted({1, n} if model.moe else {1}):
                try:
                    found.append(checked_deployment(model, Deployment(n, tp, 1, ep, n // tp, weight_format, kv_format)))
                except DeploymentError:
                    continue
    return found


def holds_batch(model: Model, d: Deployment, batch: float, context: float, hbm_capacity: float,
                usable_fraction: float) -> bool:
    """Whether the deployment keeps all ``batch`` sequences of ``context`` tokens resident at once."""
    return bool(sequences_that_fit(model, d, context, hbm_capacity, usable_fraction) >= batch)
