"""What a skip reason (harness.core.requirements.Reason) means for a check: its status and what
to change, decided on the reason's fields, never on its wording."""

from __future__ import annotations

from typing import assert_never

from harness.core.requirements import Capability, Kind, Reason
from harness.readiness.status import Check, Status

# Where each feature gate must be on, and from which release it need not be set at all.
# Source: kubernetes/kubernetes pkg/features/kube_features.go at v1.34.0-v1.37.0 (each gate's
# stage per release), as published in the feature-gates reference on kubernetes.io.
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
    "DRAAdminAccess": ("kube-apiserver and kube-scheduler", "it is on by default from 1.34 (GA in 1.36)"),
    "DRAResourceClaimDeviceStatus": ("kube-apiserver", "it is on by default from 1.33 (GA in 1.37)"),
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
        case Kind.PROVIDER | Kind.FLEET | Kind.NOT_BUILT:  # could not run here: says nothing of the platform
            return Status.SKIP, ""
    assert_never(r.kind)
