"""Driver personalities: the only module that holds driver-version facts.

Each personality publishes what its release publishes; each rule names the upstream file and
tag it comes from, once, next to the field that carries it. Repositories:
NV = NVIDIA/k8s-dra-driver-gpu (moved to kubernetes-sigs/dra-driver-nvidia-gpu in v0.4.0),
EX = kubernetes-sigs/dra-example-driver. Paths are under ``cmd/gpu-kubelet-plugin/`` unless
they say otherwise.

SOURCES and unknowns (one place):

| release        | read at                                   | how                                      |
|----------------|-------------------------------------------|------------------------------------------|
| NV v0.5.0      | sigs.k8s.io/dra-driver-nvidia-gpu@v0.5.0  | Go module source (go mod download),      |
|                |                                           | read: nvidia-v0.5 renders it             |
| NV v0.4.1      | sigs.k8s.io/dra-driver-nvidia-gpu@v0.4.1  | Go module source (go mod download),      |
|                |                                           | read in full: nvidia-v0.4 renders it     |
| EX v0.4.0      | sigs.k8s.io/dra-example-driver@v0.4.0     | Go module source, read in full           |
| NV v0.4.0      | tag 6910a2be                              | NOT fetched (module proxy answers 403,   |
|                |                                           | 2026-12-04); no v0.4.0-only rule exists  |
| NV v25.3.2,    | tags 7020737a, 2ef1f2ad, fc69d985,        | NOT fetched here (module proxy refuses   |
| v25.8.0/.1,    | 0882da87                                  | these versions; the code store holds     |
| v25.12.0       |                                           | one commit, bb72e603, 2026-12-07); rules |
|                |                                           | follow an earlier per-tag reading of     |
|                |                                           | deviceinfo.go / nvlib.go / partitions.go |
|                |                                           | cited at each field, not re-checked      |

How each personality was checked is its ``provenance`` (one place; every report that shows a
personality prints it): nvidia-v0.4, nvidia-v0.5 and example-v0.4 are compared field by field
with the real plugin's slices on real nodes (tests/e2e/test_nvidia_real_driver.py,
tests/fake_driver/test_fd_real_fidelity.py); the v25.x ones only against hand-written goldens.

NV v0.5.0 against v0.4.1 (cmd/gpu-kubelet-plugin/ @ both): the same devices and attributes with
its alpha gates off, plus ``resource.kubernetes.io/numaNode`` on GPUs and MIG devices when sysfs
has the GPU's numa_node (numa.go discoverNUMANodeAttribute, deviceinfo.go, mig.go
CommonAttributesMig @ v0.5.0; NVIDIA_DRA_SYSFS_ROOT moves sysfs); the fake driver roots give no
numa_node and the fake renders none: not modelled. Gated, off, not modelled: FabricManager
partition attributes (gpuModuleID, partition<N>), ConsumableShares, DRAListTypeAttributes.

nvidia-v0.4 is the v0.4.1 personality (its ``release``): every v0.4 rule below and in
tests/fake_driver/fidelity.py cites v0.4.1's source. The proxy refuses v0.4.0, so whether
v0.4.0 published anything differently cannot be checked here; the features the issue dates
to v0.4.0 (commits 912848d2, 13882467) are in v0.4.1 as read.

Standard NUMA attribute, not modelled: k8s.io/dynamic-resource-allocation deviceattribute/
attribute.go @ v0.37.2 defines ``resource.kubernetes.io/numaNode`` (an int, or an int list with
DRAListTypeAttributes; helpers in numa_linux.go); @ v0.36.3 the package has only pciBusID and
pcieRoot. No modelled release publishes it: NV v0.4.1 and EX v0.4.0 build against v0.36 (go.mod);
NV v0.4.1 takes only pciBusID and pcieRoot from deviceattribute (nvlib.go), and its VFIO
passthrough devices carry a driver-local ``numa`` int (deviceinfo.go VfioDeviceInfo.GetDevice);
EX v0.4.0 publishes no resource.kubernetes.io attribute.

EX v0.4.0 profiles besides gpu (cmd/dra-example-kubeletplugin/main.go validProfiles), not
modelled because the harness models GPU fleets and neither publishes a GPU: ``cpu``
(internal/profiles/cpu/cpu.go: devices numa-<i>, attribute numaNodeID, shared capacity
``<driver>/cpu`` mapped to node-allocatable cpu, KEP-5517) and ``net`` (internal/profiles/net/
net.go: devices nic-<i>, attributes index, uuid, model, driverVersion; capacities vfs and
ingress/egressBandwidth with request policies, multiple allocations allowed).


Unknown, therefore not modelled: whether v25.12.0's ValidateFeatureGates already made
DynamicMIG exclusive of NVMLDeviceHealthCheck (only v0.4.1 is confirmed); the example
driver's health handling (EX v0.4.0 health.go is the gRPC health service, not device health).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from fake_driver.core.errors import UnknownChoiceError

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

# NV device_health.go @ v0.4.1 (xidsToSkip): application XIDs; a taint for them has effect
# None, every other XID NoSchedule (healthEventToTaint).
NON_FATAL_XIDS = (13, 31, 43, 45, 68, 109)
# NV device_health.go @ v0.4.1: health event kinds the fake can raise.
HEALTH_EVENTS = ("xid", "gpu-lost", "unmonitored")
DEFAULT_XID = 79  # "GPU has fallen off the bus", a fatal XID
# NV pkg/featuregates/featuregates.go @ v0.4.1 (ValidateFeatureGates), the driver's error text.
DYNAMIC_MIG_HEALTH_REFUSAL = (
    "feature gate DynamicMIG is currently mutually exclusive with NVMLDeviceHealthCheck"
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
    # How its rendering was checked, shown by every report that shows the personality.
    provenance: str = ""
    # --- NVIDIA attribute set -------------------------------------------------------
    has_index_and_minor: bool = False  # removed in v25.8 (PR #624)
    pci_bus_id_attribute: str = PCI_BUS_ID_LEGACY  # standard name from v25.12
    has_addressing_mode: bool = False  # from v25.12
    mig_name_scheme: MigNameScheme = "gi-start-size"
    supports_dynamic_mig: bool = False  # DynamicMIG gate, v25.12+
    # Static MIG: the MIG-enabled parent GPU is announced next to its MIG devices
    # (nvlib.go enumerateGpusAndMigDevices @ v25.3.2 / v25.8.0; skipped from v25.8.1 on,
    # commit b449d0b7, backport d8fa00e4).
    static_mig_publishes_parent: bool = False
    # DynamicMIG devices carry addressingMode (full GPU and MIG) and pcieRoot (MIG), via
    # GpuInfo.Attributes / CommonAttributesMig (partitions.go, mig.go @ v0.4.1). At v25.12.0
    # the full GPU used PartDevAttributes and MIG devices PartAttributes: neither has them.
    dynamic_mig_addressing_and_root: bool = False
    # Ampere (MIG toggle needs a reset) in DynamicMIG: MIG on -> placements only, MIG off ->
    # legacy full GPU (nvlib.go isDynamicMIGCapable / supportsMIGModeToggle @ v0.4.1).
    # Before (v25.12.0) every MIG-capable GPU got the full GPU plus all placements.
    dynamic_mig_ampere_rule: bool = False
    # The driver refuses to start with DynamicMIG and NVMLDeviceHealthCheck both on.
    health_excludes_dynamic_mig: bool = False
    # --- DeviceClasses ----------------------------------------------------------------
    gpu_class_extended_resource: str | None = None  # nvidia.com/gpu from v25.12 (PR #737)
    has_vfio_class: bool = False  # vfio.gpu.nvidia.com from v25.12
    device_plugin_guard: str | None = None  # chart templates/validation.yaml text
    # --- dra-example-driver (internal/profiles/gpu/gpu.go @ EX v0.4.0) -------------------
    example_model: str = "LATEST-GPU-MODEL"
    example_driver_version: str = "1.0.0"
    example_memory: str = "80Gi"
    example_compute: int | None = 100
    supports_consumable_capacity: bool = False  # gpuAllowMultipleAllocations (example)
    supports_partitions: bool = False  # --gpu-partitions (example, from EX v0.3.0)
    # --- slice layout -----------------------------------------------------------------
    # Counter sets and devices in two slices, all counter sets in the first and all devices in
    # the second (EX gpu.go EnumerateDevices @ v0.4.0), rather than one devices slice per GPU.
    counters_then_devices_slice: bool = False

    @property
    def is_nvidia(self) -> bool:
        return self.family == "nvidia"

    @property
    def api_group_version(self) -> tuple[str, str]:
        group, _, version = self.resource_api_version.partition("/")
        return group, version


def _compared(release: str) -> str:
    return f"compared with the real plugin {release}"


def _from_source(release: str) -> str:
    return f"from source reading at {release}, not compared with a running plugin"


def health_taint(p: Personality, event: str = "", xid: int = DEFAULT_XID) -> Taint:
    """The taint ``p`` puts on a device after a health event (NV device_health.go @ v0.4.1)."""
    if event == "gpu-lost":
        return Taint(f"{p.driver}/gpu-lost", None, "NoSchedule")
    if event == "unmonitored":
        return Taint(f"{p.driver}/unmonitored", None, "None")
    effect = "None" if xid in NON_FATAL_XIDS else "NoSchedule"
    return Taint(f"{p.driver}/xid", str(xid), effect)


# v25.3.x (deviceinfo.go / nvlib.go @ v25.3.2): names use the minor (PR #428); index, minor
# and parentIndex still published; the parent GPU stays announced with MIG on.
_V25_3 = Personality(
    name="nvidia-v25.3",
    release="v25.3.2",
    family="nvidia",
    driver="gpu.nvidia.com",
    resource_api_version="resource.k8s.io/v1",
    slice_name_scheme="node-driver",
    health_mode="none",
    has_index_and_minor=True,
    static_mig_publishes_parent=True,
    device_plugin_guard=_GUARD_V25_3,
    provenance=_from_source("v25.3.2"),
)
# v25.8.1: index/minor/parentIndex removed (commit 36fc80ab, PR #624); parent hidden with MIG on.
_V25_8 = replace(
    _V25_3,
    name="nvidia-v25.8",
    release="v25.8.1",
    has_index_and_minor=False,
    static_mig_publishes_parent=False,
    provenance=_from_source("v25.8.1"),
)
# v25.12.0: standard pciBusID, addressingMode, DynamicMIG, unhealthy devices dropped
# (driver.go deviceHealthEvents), extendedResourceName on the class, vfio class.
_V25_12 = replace(
    _V25_8,
    name="nvidia-v25.12",
    release="v25.12.0",
    health_mode="remove",
    pci_bus_id_attribute=PCI_BUS_ID_STANDARD,
    has_addressing_mode=True,
    mig_name_scheme="profile-gi-start",
    supports_dynamic_mig=True,
    gpu_class_extended_resource="nvidia.com/gpu",
    has_vfio_class=True,
    device_plugin_guard=_GUARD_V25_12,
    provenance=_from_source("v25.12.0"),
)
# v0.4.1 (features from v0.4.0): k8s.io/dynamic-resource-allocation v0.36 slice names, health
# taints, DynamicMIG attribute and Ampere fixes (commits 912848d2, 13882467).
_V0_4 = replace(
    _V25_12,
    name="nvidia-v0.4",
    release="v0.4.1",
    slice_name_scheme="index-driver-node",
    health_mode="taint",
    dynamic_mig_addressing_and_root=True,
    dynamic_mig_ampere_rule=True,
    health_excludes_dynamic_mig=True,
    provenance=_compared("v0.4.1"),
)
# v0.5.0: what v0.4.1 publishes, its new attributes gated off or not served by the fake roots
# (the module docstring's NV v0.5.0 paragraph); compared with the real v0.5.0 plugin.
_V0_5 = replace(_V0_4, name="nvidia-v0.5", release="v0.5.0", provenance=_compared("v0.5.0"))
_EXAMPLE_V0_4 = Personality(
    name="example-v0.4",
    family="example",
    driver="gpu.example.com",
    release="v0.4.0",
    resource_api_version="resource.k8s.io/v1",
    slice_name_scheme="index-driver-node",
    health_mode="none",
    supports_consumable_capacity=True,
    supports_partitions=True,
    counters_then_devices_slice=True,
    provenance=_compared("v0.4.0"),
)

PERSONALITIES: dict[str, Personality] = {
    p.name: p for p in (_V25_3, _V25_8, _V25_12, _V0_4, _V0_5, _EXAMPLE_V0_4)
}

# What a fleet file without `personality` gets: the standalone fake driver's default. The
# repository's is versions.toml's default_personality (tests/harness/core/test_versions.py keeps them one).
DEFAULT_PERSONALITY = "nvidia-v0.5"


def get_personality(name: str) -> Personality:
    try:
        return PERSONALITIES[name]
    except KeyError:
        raise UnknownChoiceError("personality", name, sorted(PERSONALITIES)) from None
