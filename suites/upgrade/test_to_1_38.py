"""1.37 -> 1.38 with real nodes, and what `dra-harness scan --target 1.38` finds on a 1.37
cluster. Both need the 1.38 control plane, which only `make test-minors` builds (every_minor:
left out of `make test`). Real nodes go through the step both ways upstream allows: kept at
1.37 (kubelets="keep": the control plane first, and the version-skew policy lets kubelets stay
up to three minors behind), and drained and swapped to the 1.38 kubelet (built with the
project's iptables-wrappers stand-in: controlplane/mod/1.38.mod). The scan's kubelet findings
come from 1.34 and 1.35 nodes."""

from __future__ import annotations

import subprocess
import sys

import pytest

from fixtures.requirements import not_built, skip
from fixtures.upgrade import Rehearsal, StartRehearsal
from harness.clusters.local.components import Tuning
from harness.clusters.local.upgrade import CONTROL_PLANE_ORDER, served_kinds
from harness.clusters.realnodes.pools import RealPoolSpec
from harness.controlplane.nodeparts import kubelet_built
from harness.core.upgrade_facts import API_REMOVALS, ApiRemoval
from harness.core.versions import REPO_ROOT, load_matrix
from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.checks.detectors import Severity
from harness.kit.drastate import allocated_devices, claims_of
from harness.kit.kube import Obj
from harness.kit.nodepods import container_env, device_env, env_pod
from harness.scan.checks import TARGET_CHECKS as SCAN_TARGET_CHECKS
from harness.scan.cluster import scan
from harness.scan.shapes import DEPRECATED_METRIC, DEPRECATED_SOURCE
from harness.upgrade.rehearsal import StepResult, Workloads, create_workloads, step, wait_running

pytestmark = [pytest.mark.every_minor]

BEFORE, AFTER = "1.37", "1.38"
V1BETA1, V1BETA2 = API_REMOVALS
KINDS = ["bridged", "template", "mig", "gang"]


def _need_kubelets(*minors: str) -> None:
    matrix = load_matrix()
    missing = [m for m in minors if kubelet_built(matrix.minor(m)) is None]
    if missing:
        skip(not_built(f"the kubelet of {', '.join(missing)} is not built: make upgradeparts"))


def _class(name: str, api_version: str) -> Obj:
    spec = {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}]}
    return {"apiVersion": api_version, "kind": "DeviceClass", "metadata": {"name": name}, "spec": spec}


def _writer(obj: Obj) -> str:
    """The managers that wrote `obj` (one: the harness's client), as findings name them."""
    return ", ".join(sorted({m["manager"] for m in obj["metadata"]["managedFields"]}))


# -- the step with real nodes ----------------------------------------------------------

POOL = RealPoolSpec("keep", count=1, gpus=4)  # the cluster's minor: 1.37


def _real_claim_pod(r: Rehearsal, name: str) -> tuple[str, int]:
    """Pod `name` on the real node with a claim from template `gpu`, Running, the claim's
    device in its container's environment; returns (container ID, restarts)."""
    ns, [node] = r.fleet.namespace, POOL.node_names()
    assert r.cluster.real is not None
    image = r.cluster.real.parts[BEFORE].busybox_ref
    r.objects.create(env_pod(name, ns, image, node, claim_templates={"gpu": "gpu"}))
    wait_running(r.kube, ns, [name])
    [claim] = claims_of(r.kube, ns, name)
    [device] = [d["device"] for d in allocated_devices(claim)]
    assert f"DRA_DEVICE_{device.upper().replace('-', '_')}" in device_env(container_env(r.kube, ns, name))
    return _container(r, name)


def _container(r: Rehearsal, pod: str) -> tuple[str, int]:
    [status] = r.kube.get(*kinds.POD, pod, r.fleet.namespace)["status"]["containerStatuses"]
    return status["containerID"], status["restartCount"]


def _assert_step_kept_everything(result: StepResult) -> None:
    assert result.refused_first == ""  # neither direction strands a stored object here
    assert set(result.survivors.values()) == {"Running"}
    assert result.allocations_kept
    assert result.new_kinds == KINDS
    assert result.doubly_allocated == {}


@pytest.mark.real_node
def test_claim_pods_on_1_37_kubelets_keep_running_through_1_38_and_back(rehearsal: StartRehearsal) -> None:
    _need_kubelets(BEFORE)
    r = rehearsal(BEFORE, needs=[AFTER], real_pools=[POOL])
    matrix, ns, [node] = r.cluster.matrix, r.fleet.namespace, POOL.node_names()
    r.objects.create(b.claim_template("gpu", ns, [b.exact_request("gpu", r.fleet.gpu_class)]))
    old = r.objects.create(_class("written-v1beta1", V1BETA1.group_version))
    real = Workloads(pods={"real": ["real-on-1.37"]})
    containers = {"real-on-1.37": _real_claim_pod(r, "real-on-1.37")}
    made = [real, create_workloads(r.kube, r.objects, r.fleet, "on-1.37", gang_minor=BEFORE)]

    up = step(r.cluster, r.kube, r.objects, r.fleet, made, AFTER, kubelets="keep")

    assert r.kube.git_version() == matrix.minor(AFTER).kubernetes
    _assert_step_kept_everything(up)
    # The class written through v1beta1 is found before the step and readable after it; only
    # its writer breaks: 1.38 no longer serves the version.
    assert up.removed_api_writers == [
        f"{V1BETA1.group_version} deviceclasses/written-v1beta1 by {_writer(old)}"
    ]
    assert served_kinds(r.kube, V1BETA1.group_version) == {}
    assert r.kube.get("resource.k8s.io/v1", "DeviceClass", "written-v1beta1")["spec"]["selectors"]
    # The node's kubelet stayed at 1.37, its container was not restarted, and it prepares a
    # new claim under the 1.38 control plane.
    info = r.kube.get(*kinds.NODE, node)["status"]["nodeInfo"]
    assert info["kubeletVersion"] == matrix.minor(BEFORE).kubernetes
    assert r.cluster.real is not None
    assert r.cluster.real.minors == {node: BEFORE}
    assert _container(r, "real-on-1.37") == containers["real-on-1.37"]
    assert containers["real-on-1.37"][1] == 0
    containers["real-after-1.38"] = _real_claim_pod(r, "real-after-1.38")
    real.pods["real"].append("real-after-1.38")
    made.append(up.new)

    down = step(r.cluster, r.kube, r.objects, r.fleet, made, BEFORE, kubelets="keep")

    assert r.kube.git_version() == matrix.minor(BEFORE).kubernetes
    _assert_step_kept_everything(down)
    assert down.removed_api_writers == []
    assert {p: _container(r, p) for p in containers} == containers
    _real_claim_pod(r, "real-after-back")


@pytest.mark.real_node
def test_the_real_node_is_drained_and_its_kubelet_swapped_to_1_38_and_prepares_a_new_claim(
    rehearsal: StartRehearsal,
) -> None:
    _need_kubelets(BEFORE, AFTER)
    r = rehearsal(BEFORE, needs=[AFTER], real_pools=[POOL])
    matrix, ns, [node] = r.cluster.matrix, r.fleet.namespace, POOL.node_names()
    r.objects.create(b.claim_template("gpu", ns, [b.exact_request("gpu", r.fleet.gpu_class)]))
    _real_claim_pod(r, "before")

    seconds = r.cluster.upgrade(AFTER)  # kubelets="drain": upstream's documented way

    assert seconds > 0
    assert r.kube.git_version() == matrix.minor(AFTER).kubernetes
    got = r.kube.get(*kinds.NODE, node)
    assert got["status"]["nodeInfo"]["kubeletVersion"] == matrix.minor(AFTER).kubernetes
    assert "unschedulable" not in got["spec"]
    assert r.cluster.real is not None
    assert r.cluster.real.minors == {node: AFTER}
    assert r.kube.list(*kinds.POD, ns, field_selector="metadata.name=before") == []
    # the 1.38 kubelet prepares a new claim and its container sees the device
    assert _real_claim_pod(r, "after")[1] == 0


# -- scan --target 1.38 ----------------------------------------------------------------

# Planted on the 1.37 cluster: a beta gate 1.38 locks to true, turned off, and an alpha gate
# 1.38 no longer has, turned on (pkg/features/kube_features.go @v1.38.0-beta.0 vs @v1.37.2,
# read from the built binaries: harness.controlplane.gates).
LOCKED_OFF, REMOVED_ON = "DRADeviceBindingConditions", "PodGroupPreemptionPolicy"
PLANTED_GATES = f"--feature-gates={LOCKED_OFF}=false,{REMOVED_ON}=true"
OLD_POOLS = (
    RealPoolSpec("k134", count=1, gpus=1, minor="1.34"),  # 4 minors behind 1.38: too old
    RealPoolSpec("k135", count=1, gpus=1, minor="1.35"),  # 3 behind: allowed, no bridged devices
)
TARGET_CHECKS = set(SCAN_TARGET_CHECKS)  # every check --target adds


@pytest.mark.real_node
def test_the_1_38_target_scan_of_a_1_37_cluster_finds_v1beta1_writers_gates_and_old_kubelets(
    rehearsal: StartRehearsal,
) -> None:
    _need_kubelets(*(p.minor or BEFORE for p in OLD_POOLS))
    tuning = Tuning(component_flags={name: [PLANTED_GATES] for name in CONTROL_PLANE_ORDER})
    r = rehearsal(BEFORE, needs=[AFTER], tuning=tuning, real_pools=OLD_POOLS)
    matrix = r.cluster.matrix
    written = {
        removal: r.objects.create(
            _class(f"written-{removal.group_version.split('/')[1]}", removal.group_version)
        )
        for removal in (V1BETA1, V1BETA2)
    }
    r.objects.create(_class("written-v1", "resource.k8s.io/v1"))
    cmd = [sys.executable, "-m", "harness.cli.main", "scan", "--kubeconfig", str(r.cluster.kubeconfig)]
    done = subprocess.run(
        [*cmd, "--target", AFTER], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 3, done.stderr  # NOT READY: something blocks the step
    findings = scan(
        r.cluster.kubeconfig, r.fleet.extended_resource, "dra-harness.io/pool", ["gpu.nvidia.com"], AFTER
    ).findings
    found = [(f.check, f.severity, f.subject, f.message) for f in findings if f.check in TARGET_CHECKS]

    [(_, info_severity, info_subject, gone)] = [f for f in found if f[1] == Severity.INFO]
    assert (info_severity, info_subject) == (Severity.INFO, "cluster")
    assert "DynamicResourceAllocation" in gone.split(": ", 1)[1].split(", ")

    def removal(r: ApiRemoval, severity: Severity) -> tuple[str, Severity, str, str]:
        return (
            "api-removal",
            severity,
            f"deviceclasses/written-{r.group_version.split('/')[1]}",
            f"written through {r.group_version} by {_writer(written[r])}; {r.removed} no longer serves it "
            f"({r.source})",
        )

    def client(r: ApiRemoval, severity: Severity) -> tuple[str, Severity, str, str]:
        return (
            "api-client",
            severity,
            f"{r.group_version}/deviceclasses",
            f"a client requested {r.group_version} deviceclasses since the API server started; {r.removed} "
            f"no longer serves it ({DEPRECATED_METRIC}, {DEPRECATED_SOURCE})",
        )

    # Blocking first, then warnings (harness.scan.cluster sorts them).
    assert [f for f in found if f[1] != Severity.INFO] == [
        client(V1BETA1, Severity.BLOCKING),  # the writes above are requests too
        removal(V1BETA1, Severity.BLOCKING),  # 1.38 does not serve it
        ("gate-locked", Severity.BLOCKING, f"gate/{LOCKED_OFF}", f"runs false; {AFTER} locks it to true"),
        (
            "kubelet-too-old",
            Severity.BLOCKING,
            "node/k134-0",
            f"kubelet {matrix.minor('1.34').kubernetes} would be more than 3 minors older than {AFTER}",
        ),
        client(V1BETA2, Severity.WARNING),
        removal(V1BETA2, Severity.WARNING),  # deprecated, served until 1.39
        ("gate-removed", Severity.WARNING, f"gate/{REMOVED_ON}", f"runs true; {AFTER} has no such gate"),
        (
            "kubelet-bridge",
            Severity.WARNING,
            "node/k135-0",
            f"kubelet {matrix.minor('1.35').kubernetes} runs bridged pods without their devices "
            "(DRAExtendedResource off by default)",
        ),
    ]
    # The CLI says the same, a line each.
    lines = done.stdout.splitlines()
    for check, severity, subject, message in found:
        assert f"{severity.name:<8} {check:<26} {subject}: {message}" in lines
