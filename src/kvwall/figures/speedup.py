"""Figure 5: decode speedup S(c) = (W + K) / (W + K / c) against context for the compression factors of Tables 5
and 7 (SoK section 3.5), at the batches of W1 and W2: S tends to 1 below the traffic crossover s*(b) and to c above."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from kvwall.figures import FIGURES
from kvwall.figures.inputs import FigureInputs
from kvwall.figures.style import new_figure, ordered_colors, settle, token_axis, tokens_label
from kvwall.inputs.catalog import Catalog
from kvwall.model.footprint import traffic_compression
from kvwall.model.regimes import speedup, traffic_crossover
from kvwall.model.roofline import step_kv_bytes, step_weight_bytes

#: Context lengths the curves are drawn over, in tokens.
CONTEXTS = np.geomspace(1e3, 1e8, 200)

#: The workloads whose batch each panel takes.
WORKLOADS = ("w1", "w2")


def compression_factors(catalog: Catalog) -> dict[float, list[str]]:
    """c = (w / w_q) / r of every Table 5 configuration and Table 7 method that cuts KV reads, with their names."""
    a = catalog.assumptions
    named = [(row.name, row.kv_bits, row.retention) for row in catalog.evaluation.table5_rows]
    named += [(t.name, t.kv_bits, t.retention) for t in catalog.techniques.values()]
    factors: dict[float, list[str]] = {}
    for name, bits, retention in named:
        c = round(float(traffic_compression(a.kv_bits, bits, retention)), 9)
        if c > 1.0 and name not in factors.get(c, []):
            factors.setdefault(c, []).append(name)
    return dict(sorted(factors.items()))


def speedup_curves(catalog: Catalog, batch: int, factors, contexts=CONTEXTS) -> dict[float, np.ndarray]:
    """S(c) at each context for one batch, weights and KV at the baseline precisions (SoK section 3.5)."""
    a, model = catalog.assumptions, catalog.model
    weights = step_weight_bytes(model, a.weight_bytes_per_param, batch)
    kv = step_kv_bytes(model, contexts, batch, a.kv_bytes_per_element)
    return {c: speedup(weights, kv, c) for c in factors}


def crossover(catalog: Catalog, batch: int) -> float:
    """s*(b) of the evaluation model (SoK section 3.4, Table 4)."""
    a, model = catalog.assumptions, catalog.model
    return float(traffic_crossover(model, step_weight_bytes(model, a.weight_bytes_per_param, batch), a.kv_bytes_per_element, batch))


def draw(inputs: FigureInputs) -> Figure:
    catalog = inputs.catalog
    factors = compression_factors(catalog)
    palette = ordered_colors(list(factors))
    fig = new_figure(9.6, 4.5, FIGURES["fig5_speedup"].evidence)
    axes = fig.subplots(1, len(WORKLOADS), sharey=True)
    handles = {}
    for ax, w in zip(axes, WORKLOADS):
        workload = catalog.workloads[w]
        curves = speedup_curves(catalog, workload.batch, factors)
        for c, names in factors.items():
            (handles[c],) = ax.plot(CONTEXTS, curves[c], color=palette[c], label=f"c = {c:.3g}: {', '.join(names)}",
                                    gid=f"speedup c={c:.3g} b={workload.batch}")
            ax.axhline(c, color=palette[c], linestyle=":", linewidth=0.7)
        s_star = crossover(catalog, workload.batch)
        ax.axvline(s_star, color="black", linewidth=0.9, gid=f"crossover b={workload.batch}")
        ax.annotate(f"$s^*({workload.batch})$ = {tokens_label(round(s_star, -2))}", (s_star, 1.02), xytext=(3, 0),
                    textcoords="offset points", fontsize=6.5, va="bottom")
        ax.axvline(workload.context, color="#d62728", linestyle="--", linewidth=0.9)
        ax.annotate(f"{w.upper()}: s = {tokens_label(workload.context)}", (workload.context, 14), xytext=(-3, 0),
                    textcoords="offset points", fontsize=6.5, ha="right", color="#d62728")
        ax.set_xscale("log")
        ax.set_yscale("log")
        token_axis(ax.xaxis)
        ax.set_yticks([1, 2, 4, 8, 16], labels=["1×", "2×", "4×", "8×", "16×"])
        ax.set_xlabel("context length s (tokens)")
        ax.set_title(f"{w.upper()} batch $b = {workload.batch}$: below $s^*$ $S \\to 1$, above $s^*$ $S \\to c$")
    axes[0].set_ylabel(f"decode speedup S over {catalog.assumptions.kv_dtype.upper()} KV")
    fig.legend(handles=list(handles.values()), loc="outside lower center", ncols=3)
    fig.suptitle(f"{catalog.model.name}, memory-bound decode: S(c) = (W + K) / (W + K/c)", fontsize=9)
    return settle(fig)
