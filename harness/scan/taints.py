"""The readiness scan's view of device taints (KEP-5055): taints a driver publishes on its
devices in ResourceSlices, and DeviceTaintRules an admin wrote. A NoSchedule taint keeps new
claims off a device, NoExecute also evicts the pods using it, None only informs (k8s.io/api
resource/v1 types.go DeviceTaintEffect @ v0.37.2; None since 1.35).

A rule's deviceSelector is matched on driver, pool and device only; 1.34's deviceClassName and
CEL selectors (v1alpha3) are not evaluated, and the finding says so."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

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
