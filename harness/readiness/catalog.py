"""The readiness checks: one table mapping a check to the tests that decide it (fnmatch
patterns over pytest node ids) and to what a platform team must change when it fails."""

from __future__ import annotations

from harness.readiness.status import Check

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
        (
            "suites/bridging/test_extended_resource.py::*",
            "suites/bridging/test_bridging_lifecycle.py::*",
            "suites/bridging/test_several_resources.py::*",
        ),
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
        "device-plugin-leftover",
        "Bridged pods reach nodes the device plugin left (their status keeps nvidia.com/gpu: 0)",
        "bridging",
        ("suites/bridging/test_device_plugin_leftover.py::*",),
        "before 1.35 the scheduler never bridges pods to such nodes: remove nvidia.com/gpu from their "
        "status once the kubelet dropped the plugin (the scan's device-plugin-leftover lists them)",
        bridged=True,
    ),
    Check(
        "device-plugin-names",
        "Every device-plugin name pods request (nvidia.com/mig-1g.10gb, not only nvidia.com/gpu) has a "
        "DeviceClass: without one the pod stays Pending, with one per MIG profile it gets that profile",
        "migration",
        ("suites/migration/test_device_plugin_names.py::*",),
        "pods asking for a name no DeviceClass maps stay Pending (Insufficient <name>) once the device "
        "plugin leaves: run `dra-harness scan` (unmapped-legacy-resource lists each name and its pods) "
        "and create one DeviceClass per name with extendedResourceName set, for MIG one per profile "
        "selecting type == 'mig' and that profile (NVIDIA's chart renders none; dra-driver-nvidia-gpu#939)",
        bridged=True,
    ),
    Check(
        "time-slicing",
        "Device-plugin time-slicing (replicas 4: 4 pods a GPU) does not survive the move: the same "
        "Deployment leaves pods Pending on DRA, and the scan and the rollout say so before the drain",
        "migration",
        ("suites/migration/test_time_slicing.py::*",),
        "pods that shared GPUs through the device plugin's time-slicing stay Pending once the pool moves "
        "(a bridged pod gets whole devices): run `dra-harness scan` (time-slicing counts them per node) "
        "and before migrating give them consumable capacity (DRAConsumableCapacity) or one ResourceClaim "
        "they share with the driver's time-slicing config, or keep the pool on the device plugin",
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
        ("suites/mig/test_prioritized_list.py::*", "suites/mig/test_prioritized_scoring.py::*"),
        "firstAvailable subrequests are not honoured (or nodes where the first choice fits are not "
        "preferred, 1.37): enable DRAPrioritizedList on kube-apiserver and "
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
        "driver-devices",
        "An installed driver's own devices: selectors, prioritized list, partitions, shared devices",
        "driver",
        ("suites/driver/*",),
        "the installed driver's devices do not allocate as published: read the test's claim and the "
        "driver's slices of its node",
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
        "Fake driver self-checks: publisher, legacy device plugin, installer guard, never touching "
        "objects it did not create",
        "harness",
        (
            "suites/fake_driver/test_publisher.py::*",
            "suites/fake_driver/test_legacy_and_installer.py::*",
            "suites/fake_driver/test_ownership.py::*",
        ),
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
        "device-health",
        "Device health on NVIDIA's real plugin: NVML faults (Xid, lost GPU, unmonitored) become device "
        "taints on the sick device; NoSchedule keeps claims off, a NoExecute DeviceTaintRule evicts",
        "device taints",
        ("suites/device_health/*",),
        "sick GPUs are not tainted or still handed out: turn on the plugin's NVMLDeviceHealthCheck gate "
        "(--feature-gates, not with DynamicMIG) and DRADeviceTaints/DRADeviceTaintRules on kube-apiserver, "
        "kube-scheduler and kube-controller-manager",
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
    Check(
        "admin-access",
        "Admin access: monitoring claims reach GPUs in use, only in namespaces labelled "
        "resource.kubernetes.io/admin-access",
        "admin access",
        ("suites/admin_access/*",),
        "GPU monitoring agents cannot reach devices in use (or anyone can): label the agents' namespace "
        "resource.kubernetes.io/admin-access=true, set adminAccess: true on their requests, and keep "
        "DRAAdminAccess on (beta from 1.34, GA in 1.36)",
    ),
    Check(
        "binding-conditions",
        "Binding conditions: pods wait in the scheduler until the driver reports a device attached, and "
        "are rescheduled when attachment fails",
        "binding conditions",
        ("suites/binding_conditions/*",),
        "pods bind to devices that are not attached (or never bind): enable DRADeviceBindingConditions "
        "and DRAResourceClaimDeviceStatus on kube-apiserver and kube-scheduler, and check that the "
        "driver writes its conditions into the claim's status.devices",
    ),
    Check(
        "device-status",
        "Device status: the driver's conditions, data and network data are kept on the claim for "
        "allocated devices only",
        "device status",
        ("suites/device_status/*",),
        "the driver cannot report device status: enable DRAResourceClaimDeviceStatus on kube-apiserver "
        "and let the driver write only entries for devices allocated to the claim",
    ),
    Check(
        "multi-host",
        "Multi-host devices: a device selected per node (perDeviceNodeSelection) serves every node of its "
        "domain and no other",
        "partitioning",
        ("suites/multi_host/*",),
        "claims on multi-node devices land outside their domain or not at all: enable "
        "DRAPartitionableDevices on kube-apiserver and kube-scheduler and check the device's nodeSelector",
    ),
    Check(
        "api-versions",
        "resource.k8s.io v1beta1 and v1beta2 objects, where served, read the same in v1",
        "api versions",
        ("suites/api_versions/*",),
        "a driver or manifest written for a beta resource.k8s.io version loses fields: serve the version "
        "with --runtime-config resource.k8s.io/<version>=true while moving it to v1",
    ),
    Check(
        "upgrade",
        "GPU workloads survive an in-place control-plane upgrade and back, a DRAExtendedResource gate "
        "cycle, and kubelets up to three minors older",
        "upgrade",
        ("suites/upgrade/*",),
        "the step breaks running or new GPU pods: rehearse it with `dra-harness upgrade`, delete objects "
        "stored in an API version the target cannot read, and keep GPU nodes' kubelets at 1.36 or later "
        "(older ones run bridged pods without their devices)",
    ),
)

CHECK_IDS = {c.id: c for c in CHECKS}
