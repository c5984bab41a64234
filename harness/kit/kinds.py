"""The (apiVersion, kind) pairs the harness reads and writes, one spelling each.

A `Kind` unpacks into the Kube methods' first two arguments:
`kube.get(*DEVICE_CLASS, name)`. resource.k8s.io/v1 is the version every supported minor
serves (GA in 1.34, pkg/apis/resource/v1 @ v1.34.4); older versions are asked for by name
where a test is about them."""

from __future__ import annotations

from typing import NamedTuple

RESOURCE_GROUP = "resource.k8s.io"


def resource_api(version: str) -> str:
    """resource.k8s.io at `version` (v1, v1beta1, v1beta2)."""
    return f"{RESOURCE_GROUP}/{version}"


RESOURCE_V1 = resource_api("v1")


class Kind(NamedTuple):
    api_version: str
    kind: str


DEVICE_CLASS = Kind(RESOURCE_V1, "DeviceClass")
RESOURCE_CLAIM = Kind(RESOURCE_V1, "ResourceClaim")
RESOURCE_CLAIM_TEMPLATE = Kind(RESOURCE_V1, "ResourceClaimTemplate")
RESOURCE_SLICE = Kind(RESOURCE_V1, "ResourceSlice")

POD = Kind("v1", "Pod")
NODE = Kind("v1", "Node")
NAMESPACE = Kind("v1", "Namespace")
EVENT = Kind("v1", "Event")
CONFIG_MAP = Kind("v1", "ConfigMap")
SECRET = Kind("v1", "Secret")
SERVICE_ACCOUNT = Kind("v1", "ServiceAccount")
RESOURCE_QUOTA = Kind("v1", "ResourceQuota")
DAEMON_SET = Kind("apps/v1", "DaemonSet")
JOB = Kind("batch/v1", "Job")
LEASE = Kind("coordination.k8s.io/v1", "Lease")
CLUSTER_ROLE = Kind("rbac.authorization.k8s.io/v1", "ClusterRole")
CLUSTER_ROLE_BINDING = Kind("rbac.authorization.k8s.io/v1", "ClusterRoleBinding")
