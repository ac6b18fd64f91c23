"""Sustainability against hiding: one decode step of a tier scenario simulated at each link (CANONICAL-NUMBERS §5).

Per panel, the link lane shows each transfer from the moment the link moves its bytes to its arrival, against its
deadline (the moment compute reaches the layer that needs it); the compute lane shows the layers and the stalls
between them. The aggregate rate can hold while transfers still arrive late.
"""

from __future__ import annotations

from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from kvwall.units import in_unit
from kvwall.figures.style import new_figure, settle
from kvwall.tier.prefetch import Timeline, simulate_scenario
from kvwall.tier.inputs import TierSpecs
from kvwall.tier.constraints import hiding, ingress

ON_TIME, LATE, COMPUTE, STALL = "#2ca02c", "#d62728", "#9ecae1", "#fcbba1"


def _ms(seconds) -> float:
    return in_unit(seconds, "ms")


def _panel(axis, timeline: Timeline, title: str, x_limit: float) -> None:
    late = timeline.stalls > 0
    for i, (start, end) in enumerate(zip(timeline.link_start, timeline.arrival)):
        axis.broken_barh([(_ms(start), _ms(end - start))], (1.15, 0.7), color=LATE if late[i] else ON_TIME,
                         edgecolor="white", linewidth=0.3)
    axis.vlines(_ms(timeline.ready), 1.05, 1.95, color="black", linewidth=0.6)
    axis.broken_barh([(_ms(s), _ms(e - s)) for s, e in zip(timeline.compute_start, timeline.compute_end)], (0.15, 0.7),
                     color=COMPUTE, edgecolor="white", linewidth=0.3)
    gaps = [(_ms(prev), _ms(start - prev)) for prev, start in zip(timeline.compute_end[:-1], timeline.compute_start[1:]) if start > prev]
    axis.broken_barh(gaps, (0.15, 0.7), color=STALL)
    axis.set_yticks([0.5, 1.5], labels=["compute", "link"])
    axis.set_ylim(0, 2.1)
    axis.set_xlim(min(0.0, _ms(timeline.link_start.min())), x_limit)
    axis.grid(axis="y", visible=False)
    axis.set_title(title, loc="left", fontsize=8)


def draw(tiers: TierSpecs) -> Figure:
    """One panel per link of config/tiers.yaml for the timeline scenario."""
    scenario_id = tiers.figure["timeline"]
    spec = tiers.scenarios[scenario_id]
    runs = {link_id: tiers.scenario(scenario_id, link_id) for link_id in tiers.links}
    timelines = {link_id: simulate_scenario(s) for link_id, s in runs.items()}
    x_limit = max(_ms(t.step_time) for t in timelines.values()) * 1.02
    fig = new_figure(10.0, 1.45 + 1.5 * len(runs), "derived")
    axes = fig.subplots(len(runs), 1, sharex=True)
    for axis, (link_id, timeline) in zip(axes, timelines.items()):
        link, aggregate, each = tiers.links[link_id], ingress(runs[link_id]), hiding(runs[link_id])
        tightest = int((each.times - each.windows).argmax())
        title = (f"{link.name}, {in_unit(link.bandwidth, 'GB/s'):g} GB/s: sustainability "
                 f"{'holds' if aggregate.holds else 'fails'} ({in_unit(aggregate.required_rate, 'GB/s'):.1f} GB/s needed); "
                 f"hiding {'holds' if each.all_hidden else 'fails'} (a transfer takes {in_unit(each.times[tightest], 'us'):.0f} µs "
                 f"against a {in_unit(each.windows[tightest], 'us'):.0f} µs window)\n"
                 f"simulated: {timeline.late_transfers} of {len(timeline.layers)} transfers late, "
                 f"{_ms(timeline.stall_time):.2f} ms of stalls, link {timeline.link_utilization:.0%} busy")
        _panel(axis, timeline, title, x_limit)
    axes[-1].set_xlabel("time from the start of the decode step (ms)")
    handles = [Patch(color=c, label=text) for c, text in
               ((ON_TIME, "transfer on time"), (LATE, "transfer late"), (COMPUTE, "layer compute"), (STALL, "stall"))]
    handles.append(Line2D([], [], color="black", linewidth=0.6, label="deadline of a transfer"))
    fig.legend(handles=handles, loc="outside lower center", ncols=5, fontsize=7)
    fig.suptitle(f"Sustainability against hiding, {spec.model.name} on {spec.device.name}: "
                 f"{spec.description.replace('; ', ', ', 1)}", fontsize=9)
    return settle(fig)
