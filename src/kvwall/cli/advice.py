"""The paper's eight design rules (SoK section 6.2), applied to one operating point.

Each rule says whether it applies at the point and what to do there, with the numbers that decide it.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvwall.cli.answers import OperatingPoint
from kvwall.formats import times, tokens
from kvwall.model.regimes import CAPACITY_BOUND


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


def _identify(p: OperatingPoint) -> Rule:
    s, s_star, s_cap = p.context.value, p.traffic_crossover.value, p.capacity_crossover.value
    where = "cannot load" if s_cap < 0 else tokens(s_cap)
    return Rule(1, "Identify the regime first: compute s* and s_cap.", True,
                f"s = {tokens(s)}, s*(b={p.batch.value:g}) = {tokens(s_star)}, s_cap = {where} on {p.device.name}: {p.regime}.")


def _lossless(p: OperatingPoint) -> Rule:
    return Rule(2, "Turn the lossless domains on always: paging and prefix caching.", True,
                "Paging (phi -> 0) and prefix sharing (sigma >= 1) cost no quality; they buy capacity and batch "
                "slots, not decode speed.")


def _narrower_kv(p: OperatingPoint) -> str:
    """What the bytes-only S(c) of 4- and 2-bit KV gives, for the widths narrower than the cache's."""
    quoted = [f"{name} {times(2)(q.value)}" for name, q in (("4-bit KV", p.speedup_int4), ("2-bit KV", p.speedup_int2))
              if q is not None]
    return f"bytes-only S(c): {', '.join(quoted)}" if quoted else "the cache is already 2-bit or narrower"


def _below_crossover(p: OperatingPoint) -> Rule:
    below = p.context.value < p.traffic_crossover.value
    if below:
        advice = (f"Weights dominate the step ({_gb(p.step_weight_bytes.value)} against {_gb(p.step_kv_bytes.value)} "
                  f"of KV): {_narrower_kv(p)}. "
                  "Keep the cache in its baseline precision.")
    else:
        advice = "s is above s*: KV bytes dominate; see rule 4."
    return Rule(3, "Below s*, do not compress the cache.", below, advice)


def _quantize(p: OperatingPoint) -> Rule:
    above = p.context.value >= p.traffic_crossover.value
    advice = (f"{_narrower_kv(p)[0].upper()}{_narrower_kv(p)[1:]}. 4-bit is nearly "
              "free in quality; 2-bit needs a structure-aware layout (per-channel keys, per-token values).")
    return Rule(4, "Above s*, quantize first.", above, advice if above else "s is below s*: see rule 3.")


def _evict(p: OperatingPoint) -> Rule:
    above = p.context.value >= p.traffic_crossover.value
    advice = ("Eviction is lossy and its quality cost depends on the task; keep r >= 0.5 and validate it jointly with "
              "quantization, since quality losses do not multiply like bytes do.")
    return Rule(5, "Evict (r >= 0.5) only when the workload allows it.", above,
                advice if above else "s is below s*: eviction saves little decode time here.")


def _tier(p: OperatingPoint) -> Rule:
    s_cap, needed, hbm = p.capacity_crossover.value, p.memory_needed.value, p.hbm_capacity.value
    if s_cap < 0:
        advice = (f"The weights alone ({_gb(p.weight_bytes.value)}) exceed {p.device.name} HBM ({_gb(hbm)}): shard over "
                  f"at least {p.devices_needed.value:g} devices.")
    elif p.regime == CAPACITY_BOUND:
        advice = (f"One sequence of {tokens(p.context.value)} tokens does not fit beside the weights (s_cap = "
                  f"{tokens(s_cap)}): shard over at least {p.devices_needed.value:g} devices or tier cold blocks.")
    elif p.devices_needed.value > 1:
        advice = (f"The batch needs {_gb(needed)} against {_gb(hbm)} of HBM: shard over at least "
                  f"{p.devices_needed.value:g} devices or lower the batch.")
    else:
        advice = f"Weights and KV ({_gb(needed)}) fit in {_gb(hbm)} of HBM."
    applies = s_cap < 0 or p.regime == CAPACITY_BOUND or p.devices_needed.value > 1
    if applies:
        advice += " Tier for reuse between steps, never for reads within a step: every link is far below HBM."
    return Rule(6, "Above s_cap, tier or shard, with no intra-step reads from a remote tier.", applies, advice)


def _stripe(p: OperatingPoint) -> Rule:
    multi_die = p.device.partitions > 1
    if multi_die:
        advice = (f"{p.device.name} has {p.device.partitions} partitions: striped pages see "
                  f"{_tbps(p.striped_bandwidth.value)}, pinned pages {_tbps(p.pinned_bandwidth.value)} "
                  f"({times(1)(p.striped_bandwidth.value / p.pinned_bandwidth.value)} apart).")
    else:
        advice = f"{p.device.name} is monolithic: placement does not change the bandwidth."
    return Rule(7, "Stripe KV pages across dies on multi-die packages.", multi_die, advice)


def _reevaluate(p: OperatingPoint) -> Rule:
    return Rule(8, "Re-evaluate the map on every change of model, device, batch, context or precision.", True,
                f"s* scales as 1/b and s_cap with the free HBM: the point is {p.regime} now, and a change can move "
                "it across either crossover.")


def design_rules(point: OperatingPoint) -> tuple[Rule, ...]:
    """The eight rules of SoK section 6.2 in order, each judged at ``point``."""
    return tuple(rule(point) for rule in (_identify, _lossless, _below_crossover, _quantize, _evict, _tier, _stripe, _reevaluate))
