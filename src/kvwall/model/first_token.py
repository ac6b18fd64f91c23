"""The time to first token of one request on a deployment, as a lower bound (SoK App. A per device).

One request's prompt runs on one attention replica: its causal prefill FLOPs (kvwall.model.workloads.prefill_flops,
the input embedding's lookup free) over the dense peak of the replica's TP x PP devices (the prompt may be
pipelined over the stages in chunks), its routed-expert FLOPs over every device of a stage's experts; and every
device reads its weights at least once. The bound is the larger of the two times; collectives, the KV written and
the first decode step are left out, so it stays a bound.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from kvwall.inputs.deployment import Deployment
from kvwall.inputs.specs import Model
from kvwall.model.roofline import active_params_per_token, routed_active_params
from kvwall.model.sharding import computed_params_per_token, resident_weight_bytes_per_device
from kvwall.model.workloads import prefill_flops


def first_token_bound(model: Model, d: Deployment, prompt: ArrayLike, bandwidth: float, peak_flops: float) -> np.ndarray:
    """max(prefill compute time of the prompt on a replica, one read of a device's weights) in seconds."""
    n = np.asarray(prompt, dtype=float)
    replica = d.tensor_parallel * d.pipeline_parallel
    flops = prefill_flops(model, n) - 2.0 * (active_params_per_token(model) - computed_params_per_token(model)) * n
    routed = 2.0 * routed_active_params(model) * n
    compute = (flops - routed) / (replica * peak_flops) + routed / (replica * d.data_parallel * peak_flops)
    return np.maximum(compute, resident_weight_bytes_per_device(model, d) / bandwidth)
