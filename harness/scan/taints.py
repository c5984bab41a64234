"""The readiness scan's view of device taints (KEP-5055): taints a driver publishes on its
devices in ResourceSlices, and DeviceTaintRules an admin wrote. A NoSchedule taint keeps new
claims off a device, NoExecute also evicts the pods using it, None only informs (k8s.io/api
resource/v1 types.go DeviceTaintEffect @ v0.37.2; None since 1.35).

Tainted devices by pool (taints_by_pool): per pool, how many devices are tainted out of how
many, and per device each taint, where it came from (the slice or a rule) and what it means;
the health taints NVIDIA's plugin publishes are labelled (health_label). A pool whose every
device keeps claims off is a finding (tainted_pool_findings). Slices carry taints only where
DRADeviceTaints is on (alpha 1.33, beta and on by default 1.36, GA 1.37: pkg/features/
kube_features.go @ v1.37.2); DeviceTaintRule's version per minor: harness.core.expectations.

A rule's deviceSelector is matched on driver, pool and device only; 1.34's deviceClassName and
CEL selectors (v1alpha3) are not evaluated, and the finding says so."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from harness.kit.checks.detectors import Finding, Severity
from harness.kit.kube import Obj

EFFECT_SEVERITY = {"NoExecute": Severity.WARNING, "NoSchedule": Severity.WARNING}
SELECTOR_FIELDS = ("driver", "pool", "device")


def _taint_text(taint: Obj) -> str:
    value = f"={taint['value']}" if taint.get("value") else ""
    return f"{taint['key']}{value}:{taint['effect']}"


def _severity(effects: Iterable[str]) -> Severity:
    return max((EFFECT_SEVERITY.get(e, Severity.INFO) for e in effects), default=Severity.INFO)


def slice_taint_findings(slices: Iterable[Obj]) -> list[Finding]:
    """One finding per driver whose published devices carry taints."""
    by_driver: dict[str, Counter[str]] = {}
    devices: dict[str, set[tuple[str, str]]] = {}
    for s in slices:
        spec = s["spec"]
        for d in spec.get("devices") or []:
            for t in d.get("taints") or []:
                by_driver.setdefault(spec["driver"], Counter())[_taint_text(t)] += 1
                devices.setdefault(spec["driver"], set()).add((spec["pool"]["name"], d["name"]))
    return [
        Finding(
            "device-taints",
            _severity(t.rsplit(":", 1)[1] for t in taints),
            f"driver/{driver}",
            f"{len(devices[driver])} device(s) carry taints: "
            + ", ".join(f"{n} x {t}" for t, n in sorted(taints.items())),
            "claims without a matching toleration do not get these devices (NoExecute also evicts "
            "their pods): repair or replace the GPUs, or add tolerations to workloads that may use them",
        )
        for driver, taints in sorted(by_driver.items())
    ]


def matched_devices(rule: Obj, slices: Iterable[Obj]) -> list[tuple[str, str, str]]:
    """(driver, pool, device) of every published device the rule's selector names."""
    selector = rule["spec"].get("deviceSelector") or {}
    out = []
    for s in slices:
        spec = s["spec"]
        for d in spec.get("devices") or []:
            found = {"driver": spec["driver"], "pool": spec["pool"]["name"], "device": d["name"]}
            if all(selector.get(k) in (None, found[k]) for k in SELECTOR_FIELDS):
                out.append((found["driver"], found["pool"], found["device"]))
    return sorted(set(out))


def rule_findings(rules: Iterable[Obj], slices: list[Obj]) -> list[Finding]:
    """One finding per DeviceTaintRule: what it taints, and how many published devices it hits."""
    findings = []
    for rule in rules:
        taint = rule["spec"]["taint"]
        selector = rule["spec"].get("deviceSelector") or {}
        unread = sorted(k for k in selector if k not in SELECTOR_FIELDS)
        note = f" (its {', '.join(unread)} not evaluated by the scan)" if unread else ""
        hits = matched_devices(rule, slices)
        findings.append(
            Finding(
                "device-taint-rule",
                _severity([taint["effect"]]),
                f"devicetaintrule/{rule['metadata']['name']}",
                f"taints {len(hits)} published device(s) with {_taint_text(taint)}{note}",
                "delete the rule when the maintenance it marks is over; until then claims need a "
                "toleration for its key",
            )
        )
    return findings


# --- tainted devices by pool --------------------------------------------------------------

# What each effect does to scheduling (k8s.io/api resource/v1 types.go DeviceTaintEffect @ v0.37.2).
EFFECT_MEANING = {
    "NoSchedule": "new claims do not get it unless they tolerate the taint",
    "NoExecute": "pods using it are evicted; new claims do not get it unless they tolerate the taint",
    "None": "informational: scheduling is unaffected",
}
KEEPS_CLAIMS_OFF = ("NoSchedule", "NoExecute")
NV_HEALTH = "NVIDIA device health"
# Xids NVIDIA's plugin publishes with effect None (application errors; its xidsToSkip list,
# cmd/gpu-kubelet-plugin/device_health.go:421-428 @ v0.4.1, v0.5.0; more with a plugin flag).
NV_SKIPPED_XIDS = frozenset({13, 31, 43, 45, 68, 109})


@dataclass(frozen=True)
class ShownTaint:
    key: str
    value: str | None
    effect: str
    time_added: str | None
    rule: str | None  # the DeviceTaintRule's name; None: the driver published it in `slice`
    slice: str

    @property
    def text(self) -> str:
        return _taint_text({"key": self.key, "value": self.value, "effect": self.effect})

    @property
    def source(self) -> str:
        return f"DeviceTaintRule {self.rule}" if self.rule else f"the driver's ResourceSlice {self.slice}"

    @property
    def label(self) -> str | None:
        # A rule over NVIDIA's key is the platform team's doing, not the plugin's health report.
        return None if self.rule else health_label(self.key, self.value, self.effect)


@dataclass(frozen=True)
class TaintedDevice:
    name: str
    taints: tuple[ShownTaint, ...]

    @property
    def kept_off(self) -> bool:
        return any(t.effect in KEEPS_CLAIMS_OFF for t in self.taints)


@dataclass(frozen=True)
class PoolTaints:
    driver: str
    pool: str
    node: str | None  # None: a pool not bound to one node
    devices: int
    tainted: tuple[TaintedDevice, ...]

    @property
    def kept_off(self) -> int:
        return sum(d.kept_off for d in self.tainted)

    @property
    def title(self) -> str:
        node = f"node {self.node}" if self.node else "no single node"
        return f"{self.driver} pool {self.pool} ({node})"


def health_label(key: str, value: str | None, effect: str) -> str | None:
    """What NVIDIA's plugin meant by a taint it publishes (device_health.go:36-38 keys, 68-96
    healthEventToTaint, 231 gpu-lost on every device @ v0.4.1, v0.5.0); None for keys it does not
    publish."""
    if key == "gpu.nvidia.com/xid":
        fatal = "fatal" if effect != "None" else "not fatal"
        if value and value.isdigit() and int(value) in NV_SKIPPED_XIDS:
            fatal += ", an application error the plugin skips by default"
        return f"{NV_HEALTH}: Xid {value or '?'} ({fatal})"
    if key == "gpu.nvidia.com/gpu-lost":
        return f"{NV_HEALTH}: GPU lost (NVML lost the GPU; the plugin taints every device of the node)"
    if key == "gpu.nvidia.com/unmonitored":
        return f"{NV_HEALTH}: not monitored (the plugin could not register health events)"
    return None


def _current(slices: Iterable[Obj]) -> list[Obj]:
    """The slices of each pool's newest generation: older ones are on their way out."""
    slices = list(slices)
    newest: dict[tuple[str, str], int] = {}
    for s in slices:
        key = (s["spec"]["driver"], s["spec"]["pool"]["name"])
        newest[key] = max(newest.get(key, 0), int(s["spec"]["pool"].get("generation", 0)))
    return [
        s
        for s in slices
        if int(s["spec"]["pool"].get("generation", 0))
        == newest[(s["spec"]["driver"], s["spec"]["pool"]["name"])]
    ]


def _shown(taint: Obj, slice_name: str, rule: str | None = None) -> ShownTaint:
    time_added = taint.get("timeAdded")
    return ShownTaint(taint["key"], taint.get("value"), taint["effect"], time_added, rule, slice_name)


def taints_by_pool(slices: Iterable[Obj], rules: Iterable[Obj]) -> list[PoolTaints]:
    """Every pool with a tainted device: its devices, and per tainted device its taints, from
    the slice or from the rules whose selector names it (matched_devices)."""
    current = _current(slices)
    from_rules: dict[tuple[str, str, str], list[Obj]] = {}
    for rule in rules:
        for hit in matched_devices(rule, current):
            from_rules.setdefault(hit, []).append(rule)
    pools: dict[tuple[str, str], tuple[str | None, list[TaintedDevice], set[str]]] = {}
    for s in current:
        spec, slice_name = s["spec"], (s.get("metadata") or {}).get("name", "(unnamed)")
        _, tainted, names = pools.setdefault(
            (spec["driver"], spec["pool"]["name"]), (spec.get("nodeName"), [], set())
        )
        for d in spec.get("devices") or []:
            names.add(d["name"])
            shown = [_shown(t, slice_name) for t in d.get("taints") or []]
            for rule in from_rules.get((spec["driver"], spec["pool"]["name"], d["name"]), []):
                shown.append(_shown(rule["spec"]["taint"], slice_name, rule["metadata"]["name"]))
            if shown:
                tainted.append(TaintedDevice(d["name"], tuple(shown)))
    return [
        PoolTaints(driver, pool, node, len(names), tuple(sorted(tainted, key=lambda d: d.name)))
        for (driver, pool), (node, tainted, names) in sorted(pools.items())
        if tainted
    ]


def tainted_pool_findings(view: Iterable[PoolTaints], slices: Iterable[Obj], resource: str) -> list[Finding]:
    """A pool whose every device keeps claims off has no capacity for claims or for bridged
    `resource` pods: WARNING (capacity already lost, which draining nodes for an upgrade only
    adds to). When that is every device a driver publishes, nothing can get one: BLOCKING."""
    view = list(view)
    findings = []
    for p in view:
        if p.devices and p.kept_off == p.devices:
            findings.append(
                Finding(
                    "tainted-pool",
                    Severity.WARNING,
                    f"pool/{p.driver}/{p.pool}",
                    f"all {p.devices} devices of {p.title} are tainted NoSchedule or NoExecute: "
                    f"claims and bridged {resource} pods get none of them unless they tolerate the taints",
                    "repair or replace the GPUs (or drain and cordon the node) before upgrading, and "
                    "count its capacity as lost when planning drains",
                )
            )
    published: Counter[str] = Counter()
    for s in _current(slices):
        published[s["spec"]["driver"]] += len(s["spec"].get("devices") or [])
    kept_off: Counter[str] = Counter()
    for p in view:
        kept_off[p.driver] += p.kept_off
    for driver, n in sorted(published.items()):
        if n and kept_off[driver] == n:
            findings.append(
                Finding(
                    "tainted-pool",
                    Severity.BLOCKING,
                    f"driver/{driver}",
                    f"every one of the {n} devices {driver} publishes is tainted NoSchedule or "
                    "NoExecute: no claim or bridged pod without a toleration can get one",
                    "repair the GPUs or delete the DeviceTaintRules that cover them; nothing GPU "
                    "can run until then, so an upgrade's checks cannot pass",
                )
            )
    return findings


# --- the view in the scan's outputs (text and JSON: harness.scan.cluster; Markdown: render) --


def _described(t: ShownTaint) -> tuple[str, str]:
    """(the taint with its label, what it means for scheduling)."""
    text = f"{t.text} [{t.label}]" if t.label else t.text
    return text, EFFECT_MEANING.get(t.effect, f"effect {t.effect} is not one the scan knows")


def _pool_head(p: PoolTaints) -> str:
    return f"{len(p.tainted)} of {p.devices} devices tainted, {p.kept_off} kept off new claims"


def view_lines(view: Iterable[PoolTaints]) -> list[str]:
    lines = []
    for p in view:
        lines.append(f"tainted devices in {p.title}: {_pool_head(p)}")
        for d in p.tainted:
            for t in d.taints:
                text, meaning = _described(t)
                added = f", added {t.time_added}" if t.time_added else ""
                lines.append(f"  {d.name}: {text} from {t.source}{added}: {meaning}")
    return lines


def view_markdown(view: Iterable[PoolTaints]) -> list[str]:
    view = list(view)
    if not view:
        return []
    lines = [
        "#### Tainted devices by pool",
        "",
        "| pool | node | tainted | device | taint | from | added | what it means |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for p in view:
        for d in p.tainted:
            for t in d.taints:
                text, meaning = _described(t)
                cells = [f"{p.driver}/{p.pool}", p.node or "-", _pool_head(p), d.name, text]
                cells += [t.source, t.time_added or "-", meaning]
                lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return lines


def view_json(view: Iterable[PoolTaints]) -> list[Obj]:
    return [
        {
            "driver": p.driver,
            "pool": p.pool,
            "node": p.node,
            "devices": p.devices,
            "tainted": len(p.tainted),
            "kept_off": p.kept_off,
            "tainted_devices": [
                {
                    "device": d.name,
                    "taints": [
                        {
                            "key": t.key,
                            "value": t.value,
                            "effect": t.effect,
                            "time_added": t.time_added,
                            "from": "DeviceTaintRule" if t.rule else "ResourceSlice",
                            "name": t.rule or t.slice,
                            "label": t.label,
                            "meaning": _described(t)[1],
                        }
                        for t in d.taints
                    ],
                }
                for d in p.tainted
            ],
        }
        for p in view
    ]
