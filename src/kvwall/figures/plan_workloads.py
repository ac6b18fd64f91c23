"""The frontier `kvwall plan` derives for W1 and W2 on each device given (kvwall.plan.workload_frontiers):
tokens/s per GPU against tokens/s per user, a line per format, W1 and W2 marked where each workload's pick is."""

from __future__ import annotations

from typing import Mapping, Sequence

from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from kvwall.figures.layout import place
from kvwall.figures.style import EVIDENCE_COLORS, label_panel_grid, new_figure, settle, tokens_label
from kvwall.inputs.catalog import Catalog

#: A line style per format of kvwall.plan.workload_frontiers.FORMATS.
LINE_STYLES = {"paper": "-", "fp8": "--"}
#: A marker per workload.
MARKERS = {"w1": "o", "w2": "s"}
#: Where a workload's label may go, in order: above right of its point, then around it.
LABEL_AT = ((5, 5, "left", "bottom"), (-5, 5, "right", "bottom"), (5, -5, "left", "top"), (-5, -5, "right", "top"),
            (10, 0, "left", "center"), (-10, 0, "right", "center"), (12, 12, "left", "bottom"), (-12, -12, "right", "top"))


def draw(lines: Sequence, catalog: Catalog, workloads: Mapping[str, str]) -> Figure:
    """``lines``: kvwall.plan.workload_frontiers.WorkloadFrontier, a panel per device in their order; ``workloads``:
    its WORKLOADS (what each workload's pick ranks by)."""
    device_ids = list(dict.fromkeys(line.device for line in lines))
    contexts = sorted({line.context for line in lines})
    columns = 2
    rows = -(-len(device_ids) // columns)
    fig = new_figure(9.0, 3.3 * rows + 0.6, "derived")
    axes = fig.subplots(rows, columns, sharex=True, sharey=True, squeeze=False).ravel()
    labels = []
    for ax, device_id in zip(axes, device_ids):
        drawn = [line for line in lines if line.device == device_id]
        for line in drawn:
            formats = (f"{line.weight_format.upper()} weights and KV" if line.weight_format == line.kv_format
                       else f"{line.weight_format.upper()} weights, {line.kv_format.upper()} KV")
            at_context = f", s = {tokens_label(line.context)}" if len(contexts) > 1 else ""
            ax.plot([p.tokens_per_second_per_user for p in line.points],
                    [p.tokens_per_second_per_device for p in line.points], LINE_STYLES[line.formats],
                    color=EVIDENCE_COLORS["derived"], linewidth=1.1, label=f"frontier, {formats}{at_context}")
            for workload_id, point in line.picks.items():
                if point is None:
                    continue
                at = (point.tokens_per_second_per_user, point.tokens_per_second_per_device)
                w = catalog.workloads[workload_id]
                ax.plot(*at, MARKERS[workload_id], ms=5, mfc="white", mec="black", mew=0.9, linestyle="none",
                        label=f"{workload_id.upper()}: b = {w.batch}, "
                        f"{'fastest per user' if workloads[workload_id] == 'user' else 'most per GPU'}")
                labels.append(ax.annotate(f"{workload_id.upper()} {point.deployment.label}", at, xytext=LABEL_AT[0][:2],
                                          textcoords="offset points", ha="left", va="bottom", fontsize=6.5))
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.margins(x=0.12, y=0.1)  # room for a pick's label beside the frontier's ends
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
            axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            axis.set_minor_formatter(NullFormatter())
        ax.grid(alpha=0.3, which="both")
        budget = drawn[0].budget if drawn else 1
        ax.set_title(f"{catalog.devices[device_id].name}, up to {budget} devices", fontsize=8)
    label_panel_grid(axes, len(device_ids), columns, "tokens/s per user", "tokens/s per GPU")
    entries = {label: handle for ax in axes for handle, label in zip(*ax.get_legend_handles_labels())}
    entries = dict(sorted(entries.items(), key=lambda e: not e[0].startswith("frontier")))  # lines, then marks
    fig.legend(list(entries.values()), list(entries), fontsize=7, loc="outside lower center", ncols=2)
    fig.suptitle(f"What kvwall plan derives for {catalog.model.name} decoding at s = "
                 f"{', '.join(tokens_label(c) for c in contexts)} (datasheet estimate)", fontsize=9)
    settle(fig)
    for label in labels:
        place(label, LABEL_AT, keep_clear=labels)
    return fig
