"""The migration guide's recommended rollout, one labeled node pool at a time, as plain
functions over a Kube and a pool description:

    label -> cordon -> drain -> exclude from the device plugin -> install the DRA driver
          -> ensure the DeviceClass (extendedResourceName) -> uncordon

and `rollback_pool`, the reverse for one pool:

    cordon -> drain -> uninstall the DRA driver -> readmit the device plugin (relabel)
           -> uncordon

Every step waits (bounded, named) until its effect is observable, and `migrate_pool` /
`rollback_pool` call `on_step(name)` after each one, so a caller can assert its invariants
at every step. Device-plugin exclusion is pluggable (`DevicePlugin`): the simulated plugin
(fake_driver.publishing.legacy: node status stops advertising `nvidia.com/gpu`), or a real plugin's
DaemonSet, whose node affinity gets `STACK_LABEL NotIn [dra]` so labelled pools lose it.
The driver install/uninstall is a callable (e.g. publishing the fake driver's slices, or
`helm install` for a real one); the step waits for the pool's ResourceSlices.
"""

from __future__ import annotations

from harness.rollout.deviceplugin import (
    STACK_DEVICE_PLUGIN,
    STACK_DRA,
    STACK_LABEL,
    DaemonSetDevicePlugin,
    DevicePlugin,
    SimulatedDevicePlugin,
    device_plugin_affinity,
    exclusion_expression,
    patch_device_plugin_daemonset,
)
from harness.rollout.nodes import PodRef, cordon, drain, label_pool, pods_on, uncordon
from harness.rollout.pool import (
    ClassOutcome,
    PoolToMove,
    RolloutReport,
    ensure_device_class,
    gpu_device_class,
    migrate_pool,
    rollback_pool,
)

__all__ = [
    "STACK_DEVICE_PLUGIN",
    "STACK_DRA",
    "STACK_LABEL",
    "ClassOutcome",
    "DaemonSetDevicePlugin",
    "DevicePlugin",
    "PodRef",
    "PoolToMove",
    "RolloutReport",
    "SimulatedDevicePlugin",
    "cordon",
    "device_plugin_affinity",
    "drain",
    "ensure_device_class",
    "exclusion_expression",
    "gpu_device_class",
    "label_pool",
    "migrate_pool",
    "patch_device_plugin_daemonset",
    "pods_on",
    "rollback_pool",
    "uncordon",
]
