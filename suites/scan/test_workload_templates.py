"""`dra-harness scan` reads workloads, not only pods (issue 49): a CronJob between runs and a
Deployment scaled to zero whose templates ask for a MIG name no DeviceClass maps are BLOCKING
before their next pod stays Pending, each named by its owner; a StatefulSet asking for a mapped
name is not."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures.driver import DriverUnderTest
from fixtures.scan import MakeKubeconfig, other_tests_gone, run_scan
from harness.kit import builders as b
from harness.kit.kube import Kube, Obj

pytestmark = [
    pytest.mark.serial,  # the scan reads the whole cluster
    pytest.mark.feature_gate("DRAExtendedResource"),
    pytest.mark.bridged,
    pytest.mark.fake_driver_only("cluster to itself (the scan's verdict covers every workload)"),
]

MIG = "nvidia.com/mig-1g.10gb"


def _template(resource: str) -> Obj:
    return {
        "metadata": {"labels": {"app": "eval"}},
        "spec": {"restartPolicy": "Never", "containers": [b.container(limits={resource: "1"})]},
    }


def _cronjob(namespace: str) -> Obj:
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "nightly-eval", "namespace": namespace},
        # 29 February at 03:00: it does not run while the test does.
        "spec": {"schedule": "0 3 29 2 *", "jobTemplate": {"spec": {"template": _template(MIG)}}},
    }


def _workload(kind: str, name: str, namespace: str, resource: str) -> Obj:
    template = _template(resource)
    template["spec"]["restartPolicy"] = "Always"
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "eval"}}, "template": template}
        | ({"serviceName": name} if kind == "StatefulSet" else {}),
    }


def test_a_cronjob_and_a_deployment_scaled_to_zero_asking_for_an_unmapped_mig_name_are_blocking(
    kube: Kube,
    namespace: str,
    driver: DriverUnderTest,
    service_account_kubeconfig: MakeKubeconfig,
    tmp_path: Path,
) -> None:
    kube.create(_cronjob(namespace))
    kube.create(_workload("Deployment", "batch-infer", namespace, MIG))
    kube.create(_workload("StatefulSet", "mapped", namespace, driver.extended_resource))
    kubeconfig = service_account_kubeconfig(read=True)
    other_tests_gone(kube, namespace)

    code, output, report = run_scan(kubeconfig, tmp_path / "scan.json")

    assert code == 3, output
    [finding] = [
        f
        for f in report["findings"]  # type: ignore[attr-defined]
        if f["check"] == "unmapped-legacy-resource"
    ]
    assert (finding["severity"], finding["subject"]) == ("BLOCKING", f"extendedresource/{MIG}")
    assert finding["message"] == (
        "no DeviceClass maps it and no node advertises it: they cannot schedule now; 0 pod(s) and 2 "
        f"workload(s) request it: cronjob/{namespace}/nightly-eval (template), "
        f"deployment/{namespace}/batch-infer (template)"
    )
