"""`dra-harness scan --target 1.37` on a 1.36 cluster holding what the step would break: a
gang stored as scheduling.k8s.io/v1alpha2, a PrometheusRule naming the resource-claim metric
1.37 renames, and the gate profile's GangScheduling, which 1.37 no longer has; and objects
written through resource.k8s.io/v1beta1 and v1beta2, which 1.38 and 1.39 stop serving."""

from __future__ import annotations

from fixtures.upgrade import StartRehearsal
from harness.clusters.local.upgrade import crossed_removal_writers
from harness.core.upgrade_facts import API_REMOVALS
from harness.kit.checks.detectors import Severity
from harness.kit.gang import gang_api, gang_objects
from harness.kit.kube import Obj
from harness.kit.waits import TIMEOUTS, wait_for
from harness.scan.cluster import scan

TARGET_CHECKS = {"stored-api-version", "upgrade-path", "gate-removed", "gate-locked", "renamed-metrics"}
RULE_EXPR = "rate(resourceclaim_controller_creates_total{status='failure'}[5m]) > 0"


def _prometheus_rule_crd() -> Obj:
    schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "prometheusrules.monitoring.coreos.com"},
        "spec": {
            "group": "monitoring.coreos.com",
            "scope": "Namespaced",
            "names": {"plural": "prometheusrules", "singular": "prometheusrule", "kind": "PrometheusRule"},
            "versions": [
                {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}}
            ],
        },
    }


def test_the_target_scan_finds_stranded_objects_renamed_metrics_and_removed_gates(
    rehearsal: StartRehearsal,
) -> None:
    r = rehearsal("1.36", needs=["1.37"])
    ns = r.fleet.namespace
    for obj in gang_objects(gang_api("1.36"), "train", ns, min_count=2):
        r.objects.create(obj)
    crd = r.objects.create(_prometheus_rule_crd())
    wait_for(
        lambda: r.kube.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", crd["metadata"]["name"]),
        lambda c: any(
            x["type"] == "Established" and x["status"] == "True"
            for x in (c.get("status") or {}).get("conditions") or []
        ),
        timeout=TIMEOUTS.api_object,
        describe="the PrometheusRule CRD Established",
    )
    rule = {"alert": "ClaimCreatesFail", "expr": RULE_EXPR}
    body = {"groups": [{"name": "dra", "rules": [rule]}]}
    meta = {"name": "dra-alerts", "namespace": ns}
    r.objects.create(
        {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule", "metadata": meta, "spec": body}
    )

    findings = scan(
        r.cluster.kubeconfig, r.fleet.extended_resource, "dra-harness.io/pool", ["gpu.nvidia.com"], "1.37"
    ).findings

    found = [(f.check, f.severity, f.subject, f.message) for f in findings if f.check in TARGET_CHECKS]
    assert found[:3] == [
        (
            "stored-api-version",
            Severity.BLOCKING,
            f"podgroups/{ns}/train",
            "stored as scheduling.k8s.io/v1alpha2, which 1.37 cannot read",
        ),
        (
            "stored-api-version",
            Severity.BLOCKING,
            f"workloads/{ns}/train",
            "stored as scheduling.k8s.io/v1alpha2, which 1.37 cannot read",
        ),
        ("gate-removed", Severity.WARNING, "gate/GangScheduling", "runs true; 1.37 has no such gate"),
    ]
    assert (
        "renamed-metrics",
        Severity.WARNING,
        f"prometheusrule/{ns}/dra-alerts",
        "rule ClaimCreatesFail uses resourceclaim_controller_creates_total, renamed in 1.37 to "
        "dynamic_resource_allocation_resourceclaim_creates_total",
    ) in found


def _class(name: str, api_version: str) -> Obj:
    spec = {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}]}
    return {"apiVersion": api_version, "kind": "DeviceClass", "metadata": {"name": name}, "spec": spec}


def test_the_target_scan_warns_of_objects_written_through_versions_removed_later(
    rehearsal: StartRehearsal,
) -> None:
    r = rehearsal("1.36", needs=["1.37"])
    v1beta1, v1beta2 = API_REMOVALS
    old = r.objects.create(_class("written-v1beta1", v1beta1.group_version))
    r.objects.create(_class("written-v1beta2", v1beta2.group_version))
    r.objects.create(_class("written-v1", "resource.k8s.io/v1"))
    [manager] = {m["manager"] for m in old["metadata"]["managedFields"]}

    findings = scan(
        r.cluster.kubeconfig, r.fleet.extended_resource, "dra-harness.io/pool", ["gpu.nvidia.com"], "1.37"
    ).findings

    found = [
        (f.check, f.severity, f.subject, f.message, f.remediation)
        for f in findings
        if f.check == "api-removal"
    ]
    assert found == [
        (
            "api-removal",
            Severity.WARNING,
            f"deviceclasses/written-{gv.split('/')[1]}",
            f"written through {gv} by {manager}; {removal.removed} no longer serves it ({removal.source})",
            f"move {manager} to resource.k8s.io/v1 before {removal.removed}; the object itself stays "
            "readable",
        )
        for removal in (v1beta1, v1beta2)
        for gv in [removal.group_version]
    ]
    # What a rehearsed step records (harness.upgrade.rehearsal.step): only writers of a version
    # it stops serving.
    assert crossed_removal_writers(r.kube, "1.36", "1.37") == []
    crossed = crossed_removal_writers(r.kube, "1.37", "1.38")
    assert [(w.removal, w.resource, w.name, w.managers) for w in crossed] == [
        (v1beta1, "deviceclasses", "written-v1beta1", (manager,))
    ]


def test_the_target_scan_of_an_older_minor_is_a_downgrade_check_and_of_its_own_minor_says_so(
    rehearsal: StartRehearsal,
) -> None:
    r = rehearsal("1.37")
    ns = r.fleet.namespace
    for obj in gang_objects(gang_api("1.37"), "train", ns, min_count=2):
        r.objects.create(obj)

    def scanned(target: str) -> list[tuple[str, Severity, str, str]]:
        findings = scan(
            r.cluster.kubeconfig, r.fleet.extended_resource, "dra-harness.io/pool", ["gpu.nvidia.com"], target
        ).findings
        return [
            (f.check, f.severity, f.subject, f.message)
            for f in findings
            if f.check in {*TARGET_CHECKS, "target", "kubelet-newer"}
        ]

    back = scanned("1.36")
    assert [f for f in back if f[0] == "stored-api-version"] == [
        (
            "stored-api-version",
            Severity.BLOCKING,
            f"{kind}/{ns}/train",
            "stored as scheduling.k8s.io/v1beta1, which 1.36 cannot read",
        )
        for kind in ("podgroups", "workloads")
    ]
    assert back[-1] == (
        "target",
        Severity.INFO,
        "cluster",
        "1.36 is older than the cluster's 1.37: a downgrade; gates, API removals and renamed metrics are "
        "compared for upgrades only",
    )
    assert scanned("1.37") == [
        ("target", Severity.INFO, "cluster", "the cluster runs 1.37 already: nothing to check")
    ]
