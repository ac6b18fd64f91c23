"""The paper's eight design rules (SoK section 6.2), applied to one operating point.

Each rule says whether it applies at the point and what to do there, with the numbers that decide it. The rules
that turn on the regime (1, 3-6) judge the deployment's answer (kvwall.cli.serving): where compute binds the step a
narrower KV format saves nothing, whatever the bytes-only S(c) of the paper's frame says, and the capacity a rule
weighs is what the engine's memory rule leaves on each device.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvwall.cli.answers import OperatingPoint
from kvwall.cli.serving import COMPUTE_BOUND, DeviceAnswer
from kvwall.formats import times, tokens
from kvwall.inputs.deployment import Deployment
from kvwall.model.regimes import CAPACITY_BOUND, KV_BOUND, WEIGHT_BOUND


@dataclass(frozen=True)
class Rule:
    """One design rule: its number and statement (SoK section 6.2), whether it applies here, and the advice."""

    number: int
    statement: str
    applies: bool
    advice: str


def _gb(value: float) -> str:
    return f"{value / 1e9:,.1f} GB"


def _tbps(value: float) -> str:
    return f"{value / 1e12:.2f} TB/s"


@dataclass(frozen=True)
class Point:
    """What the rules judge: the paper-frame operating point, the deployment's answer on the device, and the smallest
    deployment that holds the batch (None where none of the searched ones does)."""

    paper: OperatingPoint
    serving: DeviceAnswer
    smallest: Deployment | None


def _where(value) -> str:
    return "cannot load" if value is None else tokens(value)


def _identify(p: Point) -> Rule:
    a, s = p.serving, p.paper.context.value
    if not a.fits:
        advice = f"s = {tokens(s)}: {a.reason}."
    else:
        advice = (f"s = {tokens(s)}, s*(b={a.running_batch.value:g}) = {tokens(a.traffic_crossover_per_device.value)} "
                  f"and s_cap = {_where(a.deployment_capacity_crossover.value)} per device of {a.deployment.label}: "
                  f"{a.regime}.")
    return Rule(1, "Identify the regime first: compute s* and s_cap.", True, advice)


def _lossless(p: Point) -> Rule:
    return Rule(2, "Turn the lossless domains on always: paging and prefix caching.", True,
                "Paging (phi -> 0) and prefix sharing (sigma >= 1) cost no quality; they buy capacity and batch "
                "slots, not decode speed.")


def _kv_speedups(a: DeviceAnswer) -> str:
    """The step-time speedup of 4- and 2-bit KV on the deployment, where the cache is wider."""
    quoted = [f"{name} {times(2)(a.kv_format_speedups[fmt].value)}" for fmt, name in (("int4", "4-bit KV"), ("int2", "2-bit KV"))
              if fmt in a.kv_format_speedups]
    return f"step-time speedup {', '.join(quoted)}" if quoted else "the cache is already 2-bit or narrower"


def _bytes_only(p: OperatingPoint) -> str:
    """What the bytes-only S(c) of 4- and 2-bit KV gives, for the widths narrower than the cache's (paper frame)."""
    quoted = [f"{name} {times(2)(q.value)}" for name, q in (("4-bit KV", p.speedup_int4), ("2-bit KV", p.speedup_int2))
              if q is not None]
    return f"bytes-only S(c) {', '.join(quoted)}" if quoted else "the cache is already 2-bit or narrower"


def _short(a: DeviceAnswer) -> bool:
    """Whether fewer sequences fit than were asked for: a narrower cache would let more of them run."""
    return a.fits and a.running_batch.value < a.batch_asked


def _quantizing_pays(a: DeviceAnswer) -> bool:
    """Rules 4 and 5 apply: KV bytes dominate the step (kv-bound), or fewer sequences fit than asked; never where
    compute binds the step."""
    return a.fits and a.regime != COMPUTE_BOUND and (a.regime == KV_BOUND or _short(a))


def _below_crossover(p: Point) -> Rule:
    a = p.serving
    below = a.fits and a.regime == WEIGHT_BOUND and not _short(a)
    if not a.fits:
        advice = "The weights do not fit: see rule 6."
    elif below:
        advice = (f"Weights dominate the step ({_gb(a.step_weight_bytes_per_device.value)} against "
                  f"{_gb(a.kv_bytes_per_device.value)} of KV per device): {_kv_speedups(a)}. Keep the cache in its "
                  "baseline precision.")
    elif a.regime == COMPUTE_BOUND:
        advice = "Compute binds the step: see rule 4."
    else:
        advice = "KV bytes dominate the step or fewer sequences fit than asked: see rule 4."
    return Rule(3, "Below s*, do not compress the cache.", below, advice)


def _quantize(p: Point) -> Rule:
    a = p.serving
    applies = _quantizing_pays(a)
    if not a.fits:
        advice = "The weights do not fit: see rule 6."
    elif a.regime == COMPUTE_BOUND:
        advice = (f"The step is compute-bound: its FLOPs outlast its bytes, so a narrower cache saves nothing "
                  f"({_kv_speedups(a)}; the paper frame's {_bytes_only(p.paper)} counts bytes only).")
    elif not applies:
        advice = "s is below s*: see rule 3."
    else:
        room = (f" A narrower cache also lets more of the {a.batch_asked} sequences fit ({a.sequences_that_fit.value:g} do "
                "now).") if _short(a) else ""
        advice = (f"{_kv_speedups(a)[0].upper()}{_kv_speedups(a)[1:]} ({_bytes_only(p.paper)} in the paper frame).{room} "
                  "4-bit is nearly free in quality; 2-bit needs a structure-aware layout (per-channel keys, "
                  "per-token values).")
    return Rule(4, "Above s*, quantize first.", applies, advice)


def _evict(p: Point) -> Rule:
    applies = _quantizing_pays(p.serving)
    advice = ("Eviction is lossy and its quality cost depends on the task; keep r >= 0.5 and validate it jointly with "
              "quantization, since quality losses do not multiply like bytes do.")
    return Rule(5, "Evict (r >= 0.5) only when the workload allows it.", applies,
                advice if applies else "s is below s* or compute binds: eviction saves little decode time here.")


def _smallest(p: Point) -> str:
    if p.smallest is None:
        return "no deployment of the devices searched holds the batch"
    where = "one device" if p.smallest.devices == 1 else f"{p.smallest.label} on {p.smallest.devices} devices"
    return f"the smallest deployment that holds the batch is {where}"


def _tier(p: Point) -> Rule:
    a = p.serving
    hbm = a.hbm_capacity.value
    if not a.fits:
        advice = f"{a.reason[0].upper()}{a.reason[1:]}: shard; {_smallest(p)}."
    elif a.regime == CAPACITY_BOUND:
        advice = (f"One sequence of {tokens(p.paper.context.value)} tokens does not fit beside the weights (s_cap = "
                  f"{_where(a.deployment_capacity_crossover.value)} per device): shard or tier cold blocks; {_smallest(p)}.")
    elif a.running_batch.value < a.batch_asked:
        advice = (f"{a.sequences_that_fit.value:g} of {a.batch_asked} sequences fit ({_gb(a.kv_memory_per_device.value)} "
                  f"of KV memory per device of {_gb(hbm)}): {_smallest(p)}, or lower the batch.")
    else:
        advice = f"Weights and KV ({_gb(a.memory_needed_per_device.value)} per device) fit in {_gb(hbm)} of HBM."
    applies = not a.fits or a.regime == CAPACITY_BOUND or a.running_batch.value < a.batch_asked
    if applies:
        advice += " Tier for reuse between steps, never for reads within a step: every link is far below HBM."
    return Rule(6, "Above s_cap, tier or shard, with no intra-step reads from a remote tier.", applies, advice)


def _stripe(point: Point) -> Rule:
    p = point.paper
    multi_die = p.device.partitions > 1
    if multi_die:
        advice = (f"{p.device.name} has {p.device.partitions} partitions: striped pages see "
                  f"{_tbps(p.striped_bandwidth.value)}, pinned pages {_tbps(p.pinned_bandwidth.value)} "
                  f"({times(1)(p.striped_bandwidth.value / p.pinned_bandwidth.value)} apart).")
    else:
        advice = f"{p.device.name} is monolithic: placement does not change the bandwidth."
    return Rule(7, "Stripe KV pages across dies on multi-die packages.", multi_die, advice)


def _reevaluate(p: Point) -> Rule:
    return Rule(8, "Re-evaluate the map on every change of model, device, batch, context or precision.", True,
                f"s* scales as 1/b and s_cap with the free HBM: the point is {p.serving.regime} now, and a change can "
                "move it across either crossover.")


def design_rules(paper: OperatingPoint, serving: DeviceAnswer, smallest: Deployment | None) -> tuple[Rule, ...]:
    """The eight rules of SoK section 6.2 in order, each judged at the point (Point)."""
    point = Point(paper, serving, smallest)
    return tuple(rule(point) for rule in (_identify, _lossless, _below_crossover, _quantize, _evict, _tier, _stripe, _reevaluate))
