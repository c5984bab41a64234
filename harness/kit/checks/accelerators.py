"""Which extended resource names are accelerators: the names the readiness scan's migration
checks judge. A cluster also runs device plugins that have nothing to do with GPUs (EKS's
security groups for pods advertise vpc.amazonaws.com/pod-eni, FUSE and RDMA plugins their own
names); a pod asking for one of those is no migration risk, so the scan lists such names once
as a note and checks only the names below, the ones a DeviceClass maps, the scan's own
--extended-resource and what --include-resource adds.

Each vendor's names come from its device plugin's own documentation or source."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from harness.kit.checks.detectors import IMPLICIT_PREFIX


@dataclass(frozen=True)
class Vendor:
    name: str
    pattern: re.Pattern[str]
    source: str


VENDORS = (
    Vendor(
        "NVIDIA (k8s-device-plugin: whole GPUs, MIG profiles of the mixed strategy, renamed shared GPUs)",
        re.compile(r"^nvidia\.com/(gpu|mig-[^/]+)(\.shared)?$"),
        "NVIDIA/k8s-device-plugin README.md (nvidia.com/gpu; MIG strategy mixed: nvidia.com/mig-<profile>); "
        "api/config/v1/consts.go DefaultSharedRename (.shared)",
    ),
    Vendor(
        "AMD (ROCm k8s-device-plugin, Xilinx FPGA plugin)",
        re.compile(r"^amd\.com/[^/]+$"),
        "ROCm/k8s-device-plugin README.md; aws/karpenter-provider-aws pkg/apis/v1/labels.go ResourceAMDGPU",
    ),
    Vendor(
        "Intel GPU (intel-device-plugins-for-kubernetes gpu_plugin)",
        re.compile(r"^gpu\.intel\.com/[^/]+$"),
        "intel/intel-device-plugins-for-kubernetes cmd/gpu_plugin/README.md (gpu.intel.com/i915, "
        "gpu.intel.com/xe; cmd/gpu_nfdhook/README.md gpu.intel.com/millicores, memory.max, tiles)",
    ),
    Vendor(
        "Intel Gaudi (habana-device-plugin)",
        re.compile(r"^habana\.ai/[^/]+$"),
        "aws/karpenter-provider-aws pkg/apis/v1/labels.go ResourceHabanaGaudi (habana.ai/gaudi)",
    ),
    Vendor(
        "Google Cloud TPU (GKE)",
        re.compile(r"^google\.com/tpu$"),
        "cloud.google.com/kubernetes-engine/docs/how-to/tpus (resources: google.com/tpu)",
    ),
    Vendor(
        "AWS Neuron (Inferentia, Trainium: neuron-device-plugin)",
        re.compile(r"^aws\.amazon\.com/neuron(core|device)?$"),
        "awsdocs/amazon-eks-user-guide latest/ug/ml/device-management-neuron.adoc (aws.amazon.com/neuron, "
        "aws.amazon.com/neuroncore); aws.amazon.com/neurondevice as nodes of the plugin list it",
    ),
)


def vendor_of(name: str) -> Vendor | None:
    return next((v for v in VENDORS if v.pattern.match(name)), None)


@dataclass(frozen=True)
class AcceleratorScope:
    """The names the migration checks judge: known vendors' names, every name a DeviceClass
    maps (explicitly or implicitly), the scan's --extended-resource and --include-resource."""

    mapped: frozenset[str] = frozenset()
    included: frozenset[str] = frozenset()

    @classmethod
    def of(cls, classes: Iterable[dict[str, object]] = (), include: Iterable[str] = ()) -> AcceleratorScope:
        mapped = set()
        for c in classes:
            spec = c.get("spec") or {}
            name = spec.get("extendedResourceName") if isinstance(spec, dict) else None
            if isinstance(name, str) and name:
                mapped.add(name)
        return cls(frozenset(mapped), frozenset(include))

    def why(self, name: str) -> str | None:
        """Why `name` is judged, or None: not an accelerator as far as the scan knows."""
        if name in self.included:
            return "--include-resource"
        if name in self.mapped:
            return "a DeviceClass maps it"
        if name.startswith(IMPLICIT_PREFIX):
            return "a DeviceClass's implicit name"
        vendor = vendor_of(name)
        return vendor.name if vendor else None

    def covers(self, name: str) -> bool:
        return self.why(name) is not None


def looked_for() -> str:
    """The vendors' names the scan knows, for the note on names it does not check."""
    return "; ".join(v.pattern.pattern.strip("^$").replace("\\", "") for v in VENDORS)
