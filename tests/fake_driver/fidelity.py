"""Golden inventories of what each release publishes, and the comparison with the fake's render.

Written out by hand from the drivers' source, never derived from ``fake_driver``; the fake is
rendered for one H100 80GB HBM3 node (NVML driver 580.95.05, CUDA 13.0) or one A100 80GB PCIe.
Sources (NV = NVIDIA/k8s-dra-driver-gpu, now kubernetes-sigs/dra-driver-nvidia-gpu, paths
under cmd/gpu-kubelet-plugin/; EX = kubernetes-sigs/dra-example-driver):
(v25.x: as cited by an earlier per-tag reading; their source is not fetched here, see
fake_driver/facts/personalities.py SOURCES; v0.4.1 and v0.5.0: the Go module source, and the real plugin.)
- full GPU: deviceinfo.go GpuInfo.GetDevice/Attributes @ v25.3.2, v25.8.1, v25.12.0, v0.4.1;
  tests/bats/test_gpu_basic.bats (name set at v0.4).
- static MIG: deviceinfo.go MigDeviceInfo.GetDevice, mig.go CommonAttributesMig @ v0.4.1;
  tests/bats/test_gpu_mig.bats (13 names).
- DynamicMIG: partitions.go PartGetDevice @ v25.12.0 (PartDevAttributes, PartAttributes) and
  @ v0.4.1 (Attributes, CommonAttributesMig); nvlib.go isDynamicMIGCapable @ v0.4.1.
- health: device_health.go healthEventToTaint / xidsToSkip @ v0.4.1;
  pkg/featuregates/featuregates.go ValidateFeatureGates @ v0.4.1.
- v0.5.0: the same files @ v0.5.0 publish v0.4.1's set with its alpha gates off (FabricManager
  attributes, ConsumableShares, DRAListTypeAttributes) and adds resource.kubernetes.io/numaNode
  only where sysfs gives the GPU a NUMA node (numa.go @ v0.5.0): this node has none. Health
  (device_health.go) and isDynamicMIGCapable differ from v0.4.1 only in error wrapping.
- chart guard: deployments/helm/*/templates/validation.yaml (refuses without the override).
- example: EX internal/profiles/gpu/gpu.go EnumerateDevices, memoryCapacity @ v0.4.0.
- H100 memory: NVIDIA/k8s-test-infra tests/e2e/go/assertions/nvidiasmi/testdata/hardware/
  qx-h100.xml @ 63018b86 (81559 MiB); its MIG profiles' SMs and memory: a real
  `nvidia-smi mig -lgip` (https://jbarrow.ai/field_notes/nvidia-mig/, 2026-06-11).

Each check returns the mismatches as lines; a check that cannot run against the fake (an API
it lacks) is one mismatch, so the same checks measure an older fake too.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

Obj = dict[str, Any]
Golden = dict[str, tuple[str, str]]  # name -> (API type, exact value or "re:<pattern>")

UUID = "re:^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
MIG_UUID = "re:^MIG-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
BUS_ID = r"re:^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f]$"
ROOT = "re:^pci[0-9a-f]{4}:[0-9a-f]{2}$"
INT = "re:^[0-9]+$"

_H100: Golden = {
    "productName": ("string", "NVIDIA H100 80GB HBM3"),
    "brand": ("string", "Nvidia"),
    "architecture": ("string", "Hopper"),
    "cudaComputeCapability": ("version", "9.0.0"),
    "driverVersion": ("version", "580.95.5"),
    "cudaDriverVersion": ("version", "13.0.0"),
}
_STD_BUS = {"resource.kubernetes.io/pciBusID": ("string", BUS_ID)}
_OLD_BUS = {"pcieBusID": ("string", BUS_ID)}
_ROOT = {"resource.kubernetes.io/pcieRoot": ("string", ROOT)}
_AM = {"addressingMode": ("string", "HMM")}
_GPU = {"type": ("string", "gpu"), "uuid": ("string", UUID), **_H100}
_MIG_3G = {
    "type": ("string", "mig"),
    "parentUUID": ("string", UUID),
    "profile": ("string", "3g.40gb"),
    **_H100,
}

FULL_GPU: dict[str, Golden] = {
    "nvidia-v25.3": {**_GPU, **_OLD_BUS, **_ROOT, "index": ("int", INT), "minor": ("int", INT)},
    "nvidia-v25.8": {**_GPU, **_OLD_BUS, **_ROOT},
    "nvidia-v25.12": {**_GPU, **_STD_BUS, **_ROOT, **_AM},
    "nvidia-v0.4": {**_GPU, **_STD_BUS, **_ROOT, **_AM},
    "nvidia-v0.5": {**_GPU, **_STD_BUS, **_ROOT, **_AM},
}
STATIC_MIG: dict[str, Golden] = {
    "nvidia-v25.3": {
        **_MIG_3G,
        **_OLD_BUS,
        **_ROOT,
        "uuid": ("string", MIG_UUID),
        "index": ("int", INT),
        "parentIndex": ("int", INT),
    },
    "nvidia-v25.8": {**_MIG_3G, **_OLD_BUS, **_ROOT, "uuid": ("string", MIG_UUID)},
    "nvidia-v25.12": {**_MIG_3G, **_STD_BUS, **_ROOT, **_AM, "uuid": ("string", MIG_UUID)},
    "nvidia-v0.4": {**_MIG_3G, **_STD_BUS, **_ROOT, **_AM, "uuid": ("string", MIG_UUID)},
    "nvidia-v0.5": {**_MIG_3G, **_STD_BUS, **_ROOT, **_AM, "uuid": ("string", MIG_UUID)},
}
DYNAMIC_FULL: dict[str, Golden] = {
    "nvidia-v25.12": {**_GPU, **_STD_BUS, **_ROOT},  # PartDevAttributes: no addressingMode
    "nvidia-v0.4": {**_GPU, **_STD_BUS, **_ROOT, **_AM},
    "nvidia-v0.5": {**_GPU, **_STD_BUS, **_ROOT, **_AM},
}
DYNAMIC_MIG: dict[str, Golden] = {
    "nvidia-v25.12": {**_MIG_3G, **_STD_BUS},  # PartAttributes: no addressingMode, no pcieRoot
    "nvidia-v0.4": {**_MIG_3G, **_STD_BUS, **_ROOT, **_AM},
    "nvidia-v0.5": {**_MIG_3G, **_STD_BUS, **_ROOT, **_AM},
}
_MIG_CAPS = {  # NVML's numbers for a 3g.40gb, from a real H100's `nvidia-smi mig -lgip`
    "multiprocessors": "60",
    "copyEngines": "3",
    "decoders": "3",
    "encoders": "0",
    "jpegEngines": "3",
    "ofaEngines": "0",
    "memory": "40448Mi",
}
# The real driver's device names per MIG mode (H100, layout 3g.40gb + 2g.20gb + 1g.10gb on GPU 0).
STATIC_NAMES = {
    "nvidia-v25.3": ["gpu-0", "gpu-0-mig-14-4-2", "gpu-0-mig-19-6-1", "gpu-0-mig-9-0-4"],
    "nvidia-v25.8": ["gpu-0-mig-14-4-2", "gpu-0-mig-19-6-1", "gpu-0-mig-9-0-4"],
    "nvidia-v25.12": ["gpu-0-mig-1g10gb-19-6", "gpu-0-mig-2g20gb-14-4", "gpu-0-mig-3g40gb-9-0"],
    "nvidia-v0.4": ["gpu-0-mig-1g10gb-19-6", "gpu-0-mig-2g20gb-14-4", "gpu-0-mig-3g40gb-9-0"],
    "nvidia-v0.5": ["gpu-0-mig-1g10gb-19-6", "gpu-0-mig-2g20gb-14-4", "gpu-0-mig-3g40gb-9-0"],
}
# A100 (MIG toggle needs a reset) with MIG on, DynamicMIG: is the full GPU announced?
AMPERE_FULL_WITH_MIG_ON = {"nvidia-v25.12": True, "nvidia-v0.4": False, "nvidia-v0.5": False}
# (health event, xid) -> taint, v0.4 and v0.5.
TAINTS = {
    ("xid", 79): {"key": "gpu.nvidia.com/xid", "value": "79", "effect": "NoSchedule"},
    ("xid", 13): {"key": "gpu.nvidia.com/xid", "value": "13", "effect": "None"},
    ("gpu-lost", 79): {"key": "gpu.nvidia.com/gpu-lost", "effect": "NoSchedule"},
    ("unmonitored", 79): {"key": "gpu.nvidia.com/unmonitored", "effect": "None"},
}
EXAMPLE_DEVICE: Golden = {
    "index": ("int", "0"),
    "uuid": ("string", "re:^gpu-[0-9a-f-]{36}$"),
    "model": ("string", "LATEST-GPU-MODEL"),
    "driverVersion": ("version", "1.0.0"),
}
EXAMPLE_SHARED_CAPACITY = {
    "memory": {
        "value": "80Gi",
        "requestPolicy": {"default": "80Gi", "validRange": {"min": "1Gi", "step": "1Gi", "max": "80Gi"}},
    },
    "compute": {
        "value": "100",
        "requestPolicy": {"default": "100", "validRange": {"min": "1", "step": "1", "max": "100"}},
    },
}


def compare_attributes(where: str, device: Obj, golden: Golden) -> list[str]:
    """Names, types and values of ``device``'s attributes against ``golden``."""
    attrs = device.get("attributes", {})
    out = [f"{where}: missing attribute {n}" for n in sorted(set(golden) - set(attrs))]
    out += [f"{where}: extra attribute {n}" for n in sorted(set(attrs) - set(golden))]
    for name in sorted(set(golden) & set(attrs)):
        kind, want = golden[name]
        ((got_kind, got),) = attrs[name].items()
        if got_kind != kind:
            out.append(f"{where}: {name} is {got_kind}, release has {kind}")
        elif not _value_matches(str(got), want):
            out.append(f"{where}: {name} = {got!r}, release has {want!r}")
    return out


def compare_capacity(where: str, device: Obj, golden: dict[str, str]) -> list[str]:
    caps = {k: v.get("value") for k, v in device.get("capacity", {}).items()}
    out = [f"{where}: missing capacity {n}" for n in sorted(set(golden) - set(caps))]
    out += [f"{where}: extra capacity {n}" for n in sorted(set(caps) - set(golden))]
    out += [
        f"{where}: capacity {n} = {caps[n]!r}, release has {golden[n]!r}"
        for n in sorted(set(golden) & set(caps))
        if caps[n] != golden[n]
    ]
    return out


def _value_matches(got: str, want: str) -> bool:
    if want.startswith("re:"):
        return re.fullmatch(want[3:], got) is not None
    return got == want


def guarded(where: str, check: Callable[[], list[str]]) -> list[str]:
    """A check that cannot run against this fake (missing API) counts as one mismatch."""
    try:
        return check()
    except Exception as e:  # any failure to render is a fidelity gap
        return [f"{where}: cannot be rendered: {type(e).__name__}: {e}"]
