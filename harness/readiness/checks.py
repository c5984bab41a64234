"""The readiness checks: one table (CHECKS) mapping a check to the tests that decide it and
to what a platform team must change when it fails, and pure functions turning a cell's
summary.json records into PASS / FAIL / WARN / SKIP per check.

How a check's status is decided from its tests' outcomes in one cell:
    no test of the check ran                 SKIP  (not part of this run)
    any test failed or errored               FAIL  (remediation: the check's on_fail)
    tests skipped for a reason that matters  the reason's status (FAIL or WARN), or WARN
                                             when some of the check's tests passed anyway
    tests skipped for a reason that doesn't  SKIP  (not applicable to this cell)
    (a reason matters by its fields, see reason_meaning; never by its wording)
    otherwise                                PASS
"""

from __future__ import annotations

import enum
import fnmatch
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import assert_never

from harness.reporting import TestRecord
from harness.requirements import Capability, Kind, Reason


class Status(enum.IntEnum):
    """Ordered by how much attention it needs."""

    PASS = 0
    SKIP = 1
    WARN = 2
    FAIL = 3

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Check:
    id: str
    title: str
    area: str
    tests: tuple[str, ...]  # fnmatch patterns over pytest node ids
    on_fail: str
    bridged: bool = False  # without the bridge, its users' pods stay Pending: a missing bridge is FAIL
    exclude: tuple[str, ...] = ()  # patterns another check owns

    def covers(self, nodeid: str) -> bool:
        def hit(patterns: tuple[str, ...]) -> bool:
            return any(fnmatch.fnmatchcase(nodeid, p) for p in patterns)

        return hit(self.tests) and not hit(self.exclude)


# Where each feature gate must be on, and from which release it need not be set at all.
# Source: reference/dra-api.md, "DRA feature stages and gates" (1.34-1.37).
GATES: dict[str, tuple[str, str]] = {
    "DRAExtendedResource": (
        "kube-apiserver, kube-scheduler, kube-controller-manager and kubelet",
        "or upgrade to 1.36 where it is beta and on by default (GA in 1.37)",
    ),
    "DRAPartitionableDevices": (
        "kube-apiserver, kube-scheduler and kubelet",
        "or upgrade to 1.36 where it is beta and on by default",
    ),
    "DRAConsumableCapacity": (
        "kube-apiserver, kube-scheduler and kubelet",
        "or upgrade to 1.36 where it is beta and on by default",
    ),
    "DRADeviceTaints": (
        "kube-apiserver, kube-scheduler and kube-controller-manager",
        "or upgrade to 1.36 where it is beta and on by default",
    ),
    "DRADeviceTaintRules": (
        "kube-apiserver, kube-scheduler and kube-controller-manager (with --runtime-config "
        "resource.k8s.io/v1beta2=true in 1.36)",
        "or upgrade to 1.37 where it is GA",
    ),
    "DRAPrioritizedList": ("kube-apiserver and kube-scheduler", "it is on by default from 1.34"),
    "DRADeviceBindingConditions": (
        "kube-apiserver and kube-scheduler",
        "or upgrade to 1.36 where it is beta and on by default",
    ),
    "GenericWorkload": (
        "kube-apiserver and kube-scheduler, with --runtime-config scheduling.k8s.io/<version>=true "
        "(v1alpha1 in 1.35, v1alpha2 in 1.36, v1beta1 in 1.37)",
        "it stays off by default through 1.37",
    ),
    "GangScheduling": (
        "kube-scheduler (1.35 and 1.36)",
        "or upgrade to 1.37 where it is part of GenericWorkload",
    ),
}


def gate_remediation(gate: str) -> str:
    where, otherwise = GATES.get(gate, ("every control-plane component and kubelet", ""))
    return f"enable feature gate {gate} on {where}" + (f", {otherwise}" if otherwise else "")


_MAPPING_REMEDIATION = (
    "{personality} installs DeviceClass {cls} without spec.extendedResourceName: set "
    "extendedResourceName: {resource} on it (or on a class of your own selecting the same devices), "
    "or move to a driver release that sets it (nvidia-v25.12+), so unchanged pods requesting "
    "{resource} are served by DRA"
)
BRIDGE_GATE = "DRAExtendedResource"


def _gate_meaning(check: Check, r: Reason) -> tuple[Status, str]:
    if not r.required:  # a test for cells without the gate
        return Status.SKIP, ""
    if r.state is None:
        return (
            Status.WARN,
            f"Kubernetes {r.minor} has no feature gate {r.gate}: upgrade to a release that has it",
        )
    if check.bridged and r.gate == BRIDGE_GATE:
        return Status.FAIL, (
            f"pods requesting nvidia.com/gpu stay Pending on DRA-only nodes in {r.cell}: "
            + gate_remediation(BRIDGE_GATE)
        )
    return Status.WARN, gate_remediation(r.gate)


def reason_meaning(check: Check, r: Reason) -> tuple[Status, str]:
    """What one skip reason means for this check: (status, remediation)."""
    match r.kind:
        case Kind.FEATURE_GATE:
            return _gate_meaning(check, r)
        case Kind.VERSION:
            return (
                Status.WARN,
                f"needs Kubernetes {r.need}; this cell runs {r.minor}: upgrade the control plane",
            )
        case Kind.API:
            return Status.WARN, f"serve {r.need}: add --runtime-config {r.need}=true to kube-apiserver"
        case Kind.DRIVER_CAPABILITY:
            if not r.required:  # a test for cells without the capability
                return Status.SKIP, ""
            if r.capability != Capability.EXTENDED_RESOURCE_NAME:  # no remediation written for it yet
                return Status.WARN, f"the driver lacks {r.capability}"
            fix = _MAPPING_REMEDIATION.format(personality=r.driver, cls=r.device_class, resource=r.resource)
            return (Status.FAIL if check.bridged else Status.WARN), fix
        case Kind.PROVIDER:  # the harness could not run it here: says nothing about the platform
            return Status.SKIP, ""
    assert_never(r.kind)


CHECKS: tuple[Check, ...] = (
    Check(
        "cluster",
        "Pods bind to GPU nodes and the scheduler allocates a device from a ResourceSlice",
        "smoke",
        ("suites/smoke/*",),
        "the cluster or driver is not usable: read the cell's pytest.log and component logs before "
        "any other check",
    ),
    Check(
        "driver-objects",
        "The driver's ResourceSlices and DeviceClasses are accepted as it publishes them",
        "driver",
        ("suites/fake_driver/test_personalities.py::*",),
        "the API server rejects what this driver release publishes (the failure names the field): "
        "enable the gate that serves the field (DRAPartitionableDevices for counters and MIG, "
        "DRAConsumableCapacity for shared capacity) or use a driver release that targets this minor",
    ),
    Check(
        "bridging",
        "Unchanged pods requesting nvidia.com/gpu get DRA devices (extended-resource bridging, KEP-5004)",
        "bridging",
        ("suites/bridging/test_extended_resource.py::*", "suites/bridging/test_bridging_lifecycle.py::*"),
        "scheduler-created claims for extended resources misbehave: check that kube-scheduler, "
        "kube-controller-manager and kubelet all run with DRAExtendedResource and the same minor",
        bridged=True,
    ),
    Check(
        "mixed-pools",
        "Device-plugin and DRA nodes serve the same resource name side by side (tiers, quota)",
        "bridging",
        ("suites/bridging/test_mixed_pools.py::*",),
        "mixed pools over-promise or miscount: give each GPU tier its own extendedResourceName and "
        "count quota under requests.nvidia.com/gpu and the DeviceClass's claim quota together",
        bridged=True,
    ),
    Check(
        "bridge-unavailable",
        "Without the bridge, a legacy GPU pod stays Pending with Insufficient nvidia.com/gpu",
        "bridging",
        ("suites/bridging/test_bridge_unavailable.py::*",),
        "legacy pods on DRA-only nodes must stay Pending (not run without a device) while bridging is "
        "off: check that no device plugin still advertises nvidia.com/gpu on migrated nodes",
    ),
    Check(
        "double-stack",
        "Failure mode: device plugin and DRA driver managing the same GPUs is detected",
        "failure modes",
        ("suites/failure_modes/*::test_both_stacks_on_the_same_gpus*",),
        "exclude migrated nodes from the device-plugin DaemonSet (nodeAffinity on a label such as "
        "nvidia.com/dra=true) before the DRA driver publishes there: one mechanism per device",
    ),
    Check(
        "unchanged-workloads",
        "Failure mode: an unchanged Deployment and Job keep running on a migrated pool",
        "failure modes",
        ("suites/failure_modes/*::test_unchanged_deployment_and_job*",),
        "legacy workloads break on the migrated pool: map nvidia.com/gpu with a DeviceClass "
        "extendedResourceName before draining the device plugin",
        bridged=True,
    ),
    Check(
        "unmapped-class",
        "Failure mode: a DeviceClass without extendedResourceName leaves legacy pods Pending",
        "failure modes",
        ("suites/failure_modes/*::test_class_without_extended_resource_name*",),
        "add extendedResourceName: nvidia.com/gpu to the DeviceClass that selects the GPUs "
        "(exactly one class per name)",
    ),
    Check(
        "selector-nothing",
        "Failure mode: a selector matching no device keeps pods Pending and is named",
        "failure modes",
        (
            "suites/failure_modes/*::test_selector_matching_nothing*",
            "suites/mig/test_selectors.py::test_selector_matching_nothing*",
            "suites/mig/test_selectors.py::test_selector_reading_an_attribute_missing*",
        ),
        "fix the DeviceClass or claim CEL selector: use attribute names this driver release publishes "
        "(productName, resource.kubernetes.io/pciBusID vs pcieBusID) and guard optional ones with has()",
    ),
    Check(
        "accounting",
        "Failure mode: node allocatable stops telling the truth after migration",
        "failure modes",
        ("suites/failure_modes/*::test_node_allocatable*",),
        "count GPUs from ResourceSlices and ResourceClaims, not node.status.allocatable[nvidia.com/gpu], "
        "in dashboards, autoscaler limits and chargeback once a pool moves to DRA",
    ),
    Check(
        "bridge-detector",
        "The readiness scan tells whether bridging is available in the cluster",
        "failure modes",
        ("suites/failure_modes/*::test_bridge_support_detector*",),
        "the scan's bridge-support detector disagrees with the cluster: report a harness bug",
    ),
    Check(
        "mig-static",
        "MIG: static partitions chosen by profile and kept on one parent GPU",
        "mig",
        ("suites/mig/test_static_mig.py::*", "suites/fake_driver/test_allocation.py::test_static_mig*"),
        "MIG selectors fail: select on the profile attribute this driver release publishes and use "
        "matchAttribute on parentUUID for devices that must share a GPU",
    ),
    Check(
        "mig-dynamic",
        "MIG: dynamic partitions from shared counters (DRAPartitionableDevices)",
        "mig",
        ("suites/mig/test_dynamic_mig.py::*", "suites/fake_driver/test_allocation.py::test_dynamic_mig*"),
        "partitionable devices over- or under-allocate: check the driver's counter sets and that "
        "kube-scheduler runs with DRAPartitionableDevices",
    ),
    Check(
        "prioritized-list",
        "Prioritized list: a claim falls back from a 3g to a 1g MIG device",
        "mig",
        ("suites/mig/test_prioritized_list.py::*",),
        "firstAvailable subrequests are not honoured: enable DRAPrioritizedList on kube-apiserver and "
        "kube-scheduler (on by default from 1.34)",
    ),
    Check(
        "cel-selectors",
        "CEL selectors on product name, memory quantity and driver version pick the right GPUs",
        "mig",
        (
            "suites/mig/test_selectors.py::test_cel_on_quantities*",
            "suites/fake_driver/test_allocation.py::test_full_gpu_chosen_by_product_name",
        ),
        "quantity/semver CEL functions misbehave: compare memory with quantity(...) and driver "
        "versions with semver(...), not string comparison",
    ),
    Check(
        "shared-devices",
        "Shared GPUs: consumable capacity splits one GPU's memory between pods",
        "shared devices",
        ("suites/shared_devices/*",),
        "consumable capacity is not enforced: enable DRAConsumableCapacity on kube-apiserver, "
        "kube-scheduler and kubelet and use a driver that publishes allowMultipleAllocations",
    ),
    Check(
        "gang",
        "Gang scheduling: GPU pods of a group bind all together or not at all",
        "gang",
        ("suites/gang/*",),
        "a gang binds partially: use Workload/PodGroup for the minor's scheduling.k8s.io version and "
        "check GenericWorkload (and GangScheduling before 1.37) on kube-apiserver and kube-scheduler",
    ),
    Check(
        "rollout",
        "Driver rollout: a pool migrates to DRA and back without losing workloads",
        "rollout",
        ("suites/rollout/*",),
        "the migration sequence loses or double-books GPUs: cordon and drain before switching a node "
        "from the device plugin to the DRA driver, and switch node by node",
    ),
    Check(
        "faults",
        "Faults: unhealthy devices, taints, driver and node restarts are handled",
        "faults",
        ("suites/faults/*", "suites/fake_driver/test_faults.py::*"),
        "device health changes are not reflected: check the driver's health mode (remove or taint) and "
        "DRADeviceTaints on kube-apiserver, kube-scheduler and kube-controller-manager",
        exclude=("suites/faults/test_control_plane.py::*",),
    ),
    Check(
        "control-plane-restarts",
        "Control-plane restarts (scheduler, API server, etcd) keep allocations intact",
        "faults",
        ("suites/faults/test_control_plane.py::*",),
        "allocations are lost or doubled across a control-plane restart: keep ResourceClaim status as "
        "the source of truth and restart kube-scheduler/kube-apiserver one at a time",
    ),
    Check(
        "scan",
        "The readiness scan finds staged failure modes and refuses bad access in one line",
        "scan",
        ("suites/scan/*",),
        "the readiness scan misreports this cluster: report a harness bug and read its findings with care",
    ),
    Check(
        "deploy",
        "The driver's manifests (DaemonSets, RBAC, admission policy) are accepted, and a node plugin "
        "writes only its own node's ResourceSlices",
        "deploy",
        ("suites/deploy/*",),
        "the API server rejects a manifest (the failure names the field or API version): serve "
        "resource.k8s.io/v1 objects only, and keep the ValidatingAdmissionPolicy that pins a node "
        "plugin's ResourceSlices to spec.nodeName of its own node",
    ),
    Check(
        "node-path",
        "Real nodes: the kubelet prepares and unprepares claims, CDI reaches the container, and the "
        "driver's kubelet plugin survives restarts and faults",
        "node",
        ("suites/node/*",),
        "the node side of DRA fails: check that the kubelet registers the driver's plugin "
        "(plugins_registry), that the container runtime has CDI enabled, and that the kubelet's minor "
        "is within the supported skew of the control plane",
    ),
    Check(
        "fake-driver",
        "Fake driver self-checks: publisher, legacy device plugin, installer guard",
        "harness",
        ("suites/fake_driver/test_publisher.py::*", "suites/fake_driver/test_legacy_and_installer.py::*"),
        "the harness's fake driver misbehaves on this minor: report a harness bug (other checks in "
        "this cell may be unreliable)",
    ),
    Check(
        "device-taints",
        "Device taints: a NoSchedule taint (from the driver or a DeviceTaintRule) keeps claims off a "
        "device, a toleration lets them on",
        "device taints",
        ("suites/device_taints/*",),
        "tainted GPUs are still handed out (or tolerations ignored): enable DRADeviceTaints (and "
        "DRADeviceTaintRules for rules) on kube-apiserver, kube-scheduler and kube-controller-manager",
    ),
    Check(
        "extended-resource-name",
        "DeviceClass extendedResourceName: an invalid name is rejected; with DRAExtendedResource off "
        "the API server drops the field",
        "bridging",
        ("suites/bridging/test_extended_resource_name.py::*",),
        "a class's extendedResourceName is missing after apply: enable DRAExtendedResource on "
        "kube-apiserver before creating the class (the field is dropped silently without it), and use a "
        "domain-prefixed name such as nvidia.com/gpu",
    ),
)

CHECK_IDS = {c.id: c for c in CHECKS}


@dataclass(frozen=True)
class CheckResult:
    check: str
    title: str
    status: Status
    detail: str
    remediation: str = ""
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def ran(self) -> bool:
        return any(self.counts.values())

    def to_json(self) -> dict[str, object]:
        return {
            "check": self.check,
            "title": self.title,
            "status": str(self.status),
            "detail": self.detail,
            "remediation": self.remediation,
            "counts": self.counts,
        }


def _short(nodeid: str) -> str:
    return nodeid.split("::", 1)[-1]


DETAIL_CHARS = 300


def clip(text: str, limit: int = DETAIL_CHARS) -> str:
    """One line, at most `limit` characters: a failure message, not its whole pformat dump."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def skip_meaning(check: Check, record: TestRecord) -> tuple[Status, str]:
    """The worst of a skipped test's reasons; a skip without reasons (pytest's own, or a
    summary.json written before reasons were recorded) is SKIP."""
    meanings = [reason_meaning(check, r) for r in record.reasons]
    if not meanings:
        return Status.SKIP, ""
    worst = max(status for status, _ in meanings)
    return worst, " ".join(_unique(fix for status, fix in meanings if status == worst))


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(i for i in items if i))


def evaluate(check: Check, records: Sequence[TestRecord]) -> CheckResult:
    mine = [r for r in records if check.covers(r.nodeid)]
    counts = {o: sum(1 for r in mine if r.outcome == o) for o in ("passed", "failed", "skipped", "errors")}

    def result(status: Status, detail: str, remediation: str = "") -> CheckResult:
        return CheckResult(check.id, check.title, status, detail, remediation, counts)

    if not mine:
        return result(Status.SKIP, "no test of this check ran in this cell")
    broken = [r for r in mine if r.outcome in ("failed", "errors")]
    if broken:
        first = broken[0]
        detail = f"{len(broken)} of {len(mine)} failed; {_short(first.nodeid)}: {clip(first.message)}"
        return result(Status.FAIL, detail.strip().rstrip(":"), check.on_fail)
    skipped = [r for r in mine if r.outcome == "skipped"]
    meanings = [(r, *skip_meaning(check, r)) for r in skipped]
    mattering = [(r, s, fix) for r, s, fix in meanings if s >= Status.WARN]
    passed = counts["passed"]
    if mattering:
        worst = max(s for _, s, _ in mattering)
        status = Status.WARN if passed else worst
        reasons = "; ".join(_unique(r.message for r, _, _ in mattering))
        prefix = f"{passed} of {len(mine)} passed, {len(mattering)} skipped: " if passed else "skipped: "
        return result(status, prefix + reasons, " ".join(_unique(fix for _, _, fix in mattering)))
    if not passed:
        return result(Status.SKIP, "not applicable: " + "; ".join(_unique(r.message for r in skipped)))
    extra = f" ({len(skipped)} not applicable here)" if skipped else ""
    return result(Status.PASS, f"{passed} of {len(mine)} passed{extra}")


def evaluate_cell(records: Sequence[TestRecord], checks: Sequence[Check] = CHECKS) -> list[CheckResult]:
    return [evaluate(c, records) for c in checks]


def fallback_checks(records: Iterable[TestRecord], checks: Sequence[Check] = CHECKS) -> list[Check]:
    """One "other tests" check per suite area with tests no check in `checks` covers, so a new
    suite shows up in the report before CHECKS names it."""
    areas = sorted({r.area for r in records if r.nodeid in set(uncovered([r], checks))})
    return [
        Check(
            f"other-{area}",
            f"Other tests in suites/{area} (no readiness check describes them yet)",
            area,
            (f"suites/{area}/*",),
            "read the failing test's message; then give these tests a check in harness/readiness/checks.py",
            exclude=tuple(p for c in checks for p in c.tests if p.startswith(f"suites/{area}/")),
        )
        for area in areas
    ]


def uncovered(records: Iterable[TestRecord], checks: Sequence[Check] = CHECKS) -> list[str]:
    """Suite tests no check looks at (the report lists them, so CHECKS stays complete)."""
    return [
        r.nodeid
        for r in records
        if r.nodeid.startswith("suites/") and not any(c.covers(r.nodeid) for c in checks)
    ]
