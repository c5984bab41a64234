"""The fake driver's kubelet plugin: a real DRA kubelet plugin in Python.

It speaks the kubelet's gRPC APIs over unix sockets, like the Go helper
``k8s.io/dynamic-resource-allocation/kubeletplugin`` does:

- plugin registration (``pluginregistration.Registration``: GetInfo /
  NotifyRegistrationStatus) on ``<registry-dir>/<driver>-reg.sock``;
- the DRA service ``k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin`` and ``...v1beta1.DRAPlugin``
  (NodePrepareResources / NodeUnprepareResources) on ``<plugins-dir>/<driver>/dra.sock``.

Prepare reads the ResourceClaim's allocation, maps each allocated device to the physical GPU
the fleet rendering says it stands for, writes one CDI spec per claim and records the claim
in a checkpoint, so prepare and unprepare are idempotent across calls and restarts.
"""

from fake_driver.kubeletplugin.checkpoint import PreparedClaim, PreparedDevice
from fake_driver.kubeletplugin.plugin import ClaimRef, ClaimResult, KubeletPlugin, PluginFaults

__all__ = ["ClaimRef", "ClaimResult", "KubeletPlugin", "PluginFaults", "PreparedClaim", "PreparedDevice"]
