"""Read config/tiers.yaml (memory-tier scenarios, validated against tiers.schema.yaml) against a loaded catalogue."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Callable, Mapping

from kvwall.inputs.catalog import Catalog
from kvwall.inputs.errors import SpecError
from kvwall.inputs.loader import QuantityReader, read_yaml, validate
from kvwall.inputs.specs import Device, Model, Sourced, Workload
from kvwall.tier.constraints import DecodeSet, Prefetch, Residency, Tier, TierScenario


@dataclass(frozen=True)
class TierLink:
    """A link rate a scenario is evaluated at: a spec of config/links.yaml or an assumption of config/tiers.yaml."""

    id: str
    name: str
    bandwidth: float  # bytes/s
    origin: Sourced
    key: str  # where the rate is written: file and key


@dataclass(frozen=True)
class ScenarioSpec:
    """One tier scenario before a link is chosen."""

    id: str
    description: str
    model: Model
    device: Device
    workload: Workload
    residency: Residency
    prefetch: Prefetch
    provenance: Mapping[str, Sourced] = field(compare=False, repr=False)


@dataclass(frozen=True)
class EconomicsSpec:
    """Moving a block against regenerating it (CANONICAL-NUMBERS §4): model, device, block, sequence, MFU, links."""

    model: Model
    device: Device
    block_tokens: float
    sequence_workload: Workload
    mfu: tuple[float, ...]
    links: tuple[TierLink, ...]
    provenance: Mapping[str, Sourced] = field(compare=False, repr=False)


@dataclass(frozen=True)
class TierSpecs:
    """Every tier input: links, the tier, scenarios, the economics setup and what the tier figures show."""

    links: Mapping[str, TierLink]
    capacity: float
    latency: float
    scenarios: Mapping[str, ScenarioSpec]
    economics: EconomicsSpec
    figure: Mapping[str, str]  # role -> scenario or link id (config/tiers.yaml figure)
    weight_bytes_per_param: float
    kv_bytes_per_element: float
    compute_precision: str
    file: str
    provenance: Mapping[str, Sourced] = field(compare=False, repr=False)

    def scenario(self, scenario_id: str, link_id: str) -> TierScenario:
        """The scenario evaluated at one link."""
        spec, link = self.scenarios[scenario_id], self.links[link_id]
        return TierScenario(
            model=spec.model,
            device=spec.device,
            tier=Tier(self.capacity, link.bandwidth, self.latency),
            decode_set=DecodeSet(spec.workload.batch, spec.workload.context),
            residency=spec.residency,
            prefetch=spec.prefetch,
            weight_bytes_per_param=self.weight_bytes_per_param,
            kv_bytes_per_element=self.kv_bytes_per_element,
            compute_precision=self.compute_precision,
        )


def _pick(collection: Mapping, item_id: str, file: str, key: str, where: str):
    if item_id not in collection:
        raise SpecError(file, key, f"{item_id!r} does not exist in {where}")
    return collection[item_id]


def _pick_model(catalog: Catalog, model_id: str, file: str, key: str):
    """A catalogue model whose KV grows with every token: the tier model moves a sequence's whole cache."""
    model = _pick(catalog.models, model_id, file, key, catalog.files["models"])
    if model.attention.has_window:
        raise SpecError(file, key, f"{model_id!r} uses {model.attention.label}; the tier model covers caches that grow "
                                   "with every token")
    return model


def _links(document: Mapping, catalog: Catalog, quantity: Callable[..., Sourced], file: str) -> dict[str, TierLink]:
    links = {}
    for link_id, entry in document["links"].items():
        key = f"links.{link_id}"
        if "spec" in entry:
            link = _pick(catalog.links, entry["spec"], file, f"{key}.spec", catalog.files["links"])
            links[link_id] = TierLink(link_id, link.name, link.bandwidth, link.provenance["bandwidth"],
                                      f"{catalog.files['links']} links.{link.id}.bandwidth")
        else:
            origin = quantity(entry["bandwidth"], f"{key}.bandwidth", "bytes/s")
            links[link_id] = TierLink(link_id, entry["name"], origin.value, origin, f"{file} {key}.bandwidth")
    return links


def _scenario(scenario_id: str, entry: Mapping, catalog: Catalog, quantity: Callable[..., Sourced], file: str) -> ScenarioSpec:
    key = f"scenarios.{scenario_id}"
    source = entry["source"]
    prov = {
        "residency.tier_fraction": quantity(entry["residency"]["tier_fraction"], f"{key}.residency.tier_fraction", "ratio", source),
        "residency.layers_per_transfer": quantity(entry["residency"]["layers_per_transfer"], f"{key}.residency.layers_per_transfer", "count", source),
        "prefetch.depth": quantity(entry["prefetch"]["depth"], f"{key}.prefetch.depth", "count", source),
        "prefetch.slack": quantity(entry["prefetch"]["slack"], f"{key}.prefetch.slack", "s", source),
    }
    return ScenarioSpec(
        id=scenario_id,
        description=entry["description"],
        model=_pick_model(catalog, entry["model"], file, f"{key}.model"),
        device=_pick(catalog.devices, entry["device"], file, f"{key}.device", catalog.files["devices"]),
        workload=_pick(catalog.workloads, entry["workload"], file, f"{key}.workload", catalog.files["workloads"]),
        residency=Residency(prov["residency.tier_fraction"].value, int(prov["residency.layers_per_transfer"].value)),
        prefetch=Prefetch(int(prov["prefetch.depth"].value), prov["prefetch.slack"].value),
        provenance=MappingProxyType(prov),
    )


def _economics(entry: Mapping, catalog: Catalog, links: Mapping[str, TierLink], quantity: Callable[..., Sourced], file: str) -> EconomicsSpec:
    source = entry["source"]
    prov = {"block": quantity(entry["block"], "economics.block", "tokens", source)}
    for i, node in enumerate(entry["mfu"]):
        prov[f"mfu[{i}]"] = quantity(node, f"economics.mfu[{i}]", "ratio", source)
    chosen = []
    for i, link_id in enumerate(entry["links"]):
        if link_id in links:
            chosen.append(links[link_id])
        else:
            link = _pick(catalog.links, link_id, file, f"economics.links[{i}]", f"{file} links or {catalog.files['links']}")
            chosen.append(TierLink(link.id, link.name, link.bandwidth, link.provenance["bandwidth"],
                                   f"{catalog.files['links']} links.{link.id}.bandwidth"))
    return EconomicsSpec(
        model=_pick_model(catalog, entry["model"], file, "economics.model"),
        device=_pick(catalog.devices, entry["device"], file, "economics.device", catalog.files["devices"]),
        block_tokens=prov["block"].value,
        sequence_workload=_pick(catalog.workloads, entry["sequence_workload"], file, "economics.sequence_workload", catalog.files["workloads"]),
        mfu=tuple(prov[f"mfu[{i}]"].value for i in range(len(entry["mfu"]))),
        links=tuple(chosen),
        provenance=MappingProxyType(prov),
    )


def load_tiers(path: str | Path, catalog: Catalog) -> TierSpecs:
    """Load config/tiers.yaml, resolving model, device, workload and link ids against the catalogue."""
    file = str(path)
    document = read_yaml(path)
    validate(document, "tiers", file)
    quantity = QuantityReader(file, document, document["evidence"]).quantity
    links = _links(document, catalog, quantity, file)
    scenarios = {sid: _scenario(sid, entry, catalog, quantity, file) for sid, entry in document["scenarios"].items()}
    for scenario in scenarios.values():
        if scenario.prefetch.depth > scenario.model.n_layers:
            raise SpecError(file, f"scenarios.{scenario.id}.prefetch.depth", f"exceeds the {scenario.model.n_layers} layers of {scenario.model.name}")
    for role, item_id in document["figure"].items():
        collection, where = (links, "links") if role.endswith("_link") else (scenarios, "scenarios")
        _pick(collection, item_id, file, f"figure.{role}", f"{file} {where}")
    prov = {"tier.capacity": quantity(document["tier"]["capacity"], "tier.capacity", "bytes"),
            "tier.latency": quantity(document["tier"]["latency"], "tier.latency", "s")}
    a = catalog.assumptions
    return TierSpecs(
        links=MappingProxyType(links),
        capacity=prov["tier.capacity"].value,
        latency=prov["tier.latency"].value,
        scenarios=MappingProxyType(scenarios),
        economics=_economics(document["economics"], catalog, links, quantity, file),
        figure=MappingProxyType(dict(document["figure"])),
        weight_bytes_per_param=a.weight_bytes_per_param,
        kv_bytes_per_element=a.kv_bytes_per_element,
        compute_precision=a.compute_precision,
        file=file,
        provenance=MappingProxyType(prov),
    )
