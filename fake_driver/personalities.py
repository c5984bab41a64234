"""Driver personalities: the only module that holds driver-version facts.

Source: /work/shared/reference/reference-drivers.md §1 (NVIDIA/k8s-dra-driver-gpu at the tags
v25.3.2, v25.8.1, v25.12.0, v0.4.0) and §2 (kubernetes-sigs/dra-example-driver v0.4.0).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from fake_driver.errors import UnknownChoiceError

Family = Literal["nvidia", "example"]
# "gi-start-size": gpu-<minor>-mig-<giProfileId>-<start>-<size>   (v25.3 to v25.8)
# "profile-gi-start": gpu-<minor>-mig-<profile, RFC1123>-<giProfileId>-<start>  (v25.12+)
MigNameScheme = Literal["gi-start-size", "profile-gi-start"]
# "node-driver": <node>-<driver>-<5 random>     (k8s.io/dynamic-resource-allocation <= v0.35)
# "index-driver-node": <5-hex index>-<driver>-<node>-<random>   (>= v0.36)
SliceNameScheme = Literal["node-driver", "index-driver-node"]
# What the driver does to an unhealthy device: nothing, drop it from the slice (v25.12),
# or add a device taint (v0.4).
HealthMode = Literal["none", "remove", "taint"]

PCI_BUS_ID_LEGACY = "pcieBusID"
PCI_BUS_ID_STANDARD = "resource.kubernetes.io/pciBusID"
PCIE_ROOT = "resource.kubernetes.io/pcieRoot"

_GUARD_V25_3 = (
    "The default value of 'resources.gpus.enabled=true' is not yet supported; please explicitly "
    "set 'resources.gpus.enabled=false' or, if you know what you are doing, you must also set "
    "'gpuResourcesEnabledOverride=true'"
)
_GUARD_V25_12 = (
    "when 'resources.gpus.enabled=true' this DRA driver cannot be deployed alongside the standard "
    "GPU device plugin on the same node; set 'gpuResourcesEnabledOverride=true' to proceed "
    "(needs the DRAExtendedResource feature gate on kube-apiserver, kube-scheduler, "
    "kube-controller-manager and kubelet, Kubernetes v1.35+)"
)


@dataclass(frozen=True)
class Taint:
    key: str
    value: str | None
    effect: str


@dataclass(frozen=True)
class Personality:
    name: str
    family: Family
    driver: str
    release: str  # the tag it mimics
    resource_api_version: str  # group/version the slices are written with
    slice_name_scheme: SliceNameScheme
    health_mode: HealthMode
    # --- NVIDIA attribute set -------------------------------------------------------
    has_index_and_minor: bool = False  # removed in v25.8 (PR #624)
    pci_bus_id_attribute: str = PCI_BUS_ID_LEGACY  # standard name from v25.12
    has_addressing_mode: bool = False  # from v25.12
    mig_name_scheme: MigNameScheme = "gi-start-size"
    supports_dynamic_mig: bool = False  # DynamicMIG gate, v25.12+
    # --- DeviceClasses ----------------------------------------------------------------
    gpu_class_extended_resource: str | None = None  # nvidia.com/gpu from v25.12 (PR #737)
    has_vfio_class: bool = False  # vfio.gpu.nvidia.com from v25.12
    device_plugin_guard: str | None = None  # chart templates/validation.yaml text
    unhealthy_taint: Taint | None = None
    # --- dra-example-driver -----------------------------------------------------------
    example_model: str = "LATEST-GPU-MODEL"
    example_driver_version: str = "1.0.0"
    example_memory: str = "80Gi"
    # compute capacity: present at dra-example-driver HEAD (appVersion v0.4.0);
    # UNCONFIRMED for the v0.4.0 tag itself.
    example_compute: int | None = 100
    supports_consumable_capacity: bool = False  # gpuAllowMultipleAllocations (example)

    @property
    def is_nvidia(self) -> bool:
        return self.family == "nvidia"

    @property
    def api_group_version(self) -> tuple[str, str]:
        group, _, version = self.resource_api_version.partition("/")
        return group, version


def _nvidia(name: str, release: str, **kw: Any) -> Personality:
    return Personality(
        name=name,
        release=release,
        family="nvidia",
        driver="gpu.nvidia.com",
        resource_api_version="resource.k8s.io/v1",
        **kw,
    )


PERSONALITIES: dict[str, Personality] = {
    p.name: p
    for p in (
        # v25.3.x: names use the minor (PR #428); index/minor still published.
        _nvidia(
            "nvidia-v25.3",
            "v25.3.2",
            slice_name_scheme="node-driver",
            health_mode="none",
            has_index_and_minor=True,
            device_plugin_guard=_GUARD_V25_3,
        ),
        _nvidia(
            "nvidia-v25.8",
            "v25.8.1",
            slice_name_scheme="node-driver",
            health_mode="none",
            device_plugin_guard=_GUARD_V25_3,
        ),
        _nvidia(
            "nvidia-v25.12",
            "v25.12.0",
            slice_name_scheme="node-driver",
            health_mode="remove",
            pci_bus_id_attribute=PCI_BUS_ID_STANDARD,
            has_addressing_mode=True,
            mig_name_scheme="profile-gi-start",
            supports_dynamic_mig=True,
            gpu_class_extended_resource="nvidia.com/gpu",
            has_vfio_class=True,
            device_plugin_guard=_GUARD_V25_12,
        ),
        _nvidia(
            "nvidia-v0.4",
            "v0.4.0",
            slice_name_scheme="index-driver-node",
            health_mode="taint",
            pci_bus_id_attribute=PCI_BUS_ID_STANDARD,
            has_addressing_mode=True,
            mig_name_scheme="profile-gi-start",
            supports_dynamic_mig=True,
            gpu_class_extended_resource="nvidia.com/gpu",
            has_vfio_class=True,
            device_plugin_guard=_GUARD_V25_12,
            # device_health.go @ HEAD: XID taints; fatal XIDs use NoSchedule.
            unhealthy_taint=Taint("gpu.nvidia.com/xid", "79", "NoSchedule"),
        ),
        Personality(
            name="example-v0.4",
            family="example",
            driver="gpu.example.com",
            release="v0.4.0",
            resource_api_version="resource.k8s.io/v1",
            slice_name_scheme="index-driver-node",
            # The example driver's health handling is not documented in the reference: none.
            health_mode="none",
            supports_consumable_capacity=True,
        ),
    )
}

DEFAULT_PERSONALITY = "nvidia-v25.12"


def get_personality(name: str) -> Personality:
    try:
        return PERSONALITIES[name]
    except KeyError:
        raise UnknownChoiceError("personality", name, sorted(PERSONALITIES)) from None
