"""What the scan reads, and the read-only ClusterRole that allows exactly that: one place, so
the role users grant (deploy/scan/clusterrole.yaml) and the reads cannot drift apart."""

from __future__ import annotations

import yaml

from harness.clusters.existing import parse_feature_metrics
from harness.clusters.local.upgrade import STORAGE_DROPS
from harness.core.errors import HarnessError
from harness.core.expectations import (
    device_taint_rule_api,
)
from harness.kit.kinds import RESOURCE_V1
from harness.kit.kube import API_ERRORS, DynamicApiError, ForbiddenError, Kube, Obj, ResourceNotFoundError
from harness.scan.shapes import deprecated_requests
from harness.scan.state import ClusterState
from harness.scan.workloads import WORKLOAD_KINDS, workloads_of

# Everything the scan reads: give its user exactly this (read-only) ClusterRole.
SCAN_RBAC_RULES: list[Obj] = [
    {"apiGroups": [""], "resources": ["nodes", "pods", "resourcequotas"], "verbs": ["get", "list", "watch"]},
    {
        "apiGroups": ["apps"],
        "resources": ["daemonsets", "deployments", "statefulsets"],
        "verbs": ["get", "list", "watch"],
    },
    {"apiGroups": ["batch"], "resources": ["jobs", "cronjobs"], "verbs": ["get", "list", "watch"]},
    {
        "apiGroups": ["resource.k8s.io"],
        "resources": [
            "deviceclasses",
            "resourceslices",
            "resourceclaims",
            "resourceclaimtemplates",
            "devicetaintrules",
        ],
        "verbs": ["get", "list", "watch"],
    },
    # --target: PrometheusRules naming renamed metrics, and the scheduling API's stored objects.
    {"apiGroups": ["monitoring.coreos.com"], "resources": ["prometheusrules"], "verbs": ["get", "list"]},
    {
        "apiGroups": sorted({d.group_version.split("/")[0] for d in STORAGE_DROPS}),
        "resources": sorted({r for d in STORAGE_DROPS for r in d.resources}),
        "verbs": ["get", "list"],
    },
    {"nonResourceURLs": ["/metrics", "/version"], "verbs": ["get"]},
]


def scan_cluster_role(name: str) -> Obj:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name},
        "rules": SCAN_RBAC_RULES,
    }


def clusterrole_yaml(name: str = "dra-harness-scan") -> str:
    """deploy/scan/clusterrole.yaml's text (tests/harness/scan/test_scan_rbac.py keeps the file equal)."""
    head = "# The read-only ClusterRole `dra-harness scan` and `fleet export` need (generated:\n"
    head += "# dra-harness scan --print-clusterrole > deploy/scan/clusterrole.yaml).\n"
    return head + yaml.safe_dump(scan_cluster_role(name), sort_keys=False)


def read_state(kube: Kube) -> ClusterState:
    """Everything the checks look at, with get/list only; one line if the server fails us."""
    try:
        return _read_state(kube)
    except API_ERRORS as err:  # silent, unreachable or refusing (what listed() does not explain)
        raise kube.failure(err) from None


def _read_state(kube: Kube) -> ClusterState:
    major, minor = kube.server_version()
    git_version = kube.git_version()

    def listed(api: str, kind: str) -> list[Obj]:
        try:
            return kube.list(api, kind)
        except ForbiddenError:
            raise HarnessError(
                f"the kubeconfig's user may not list {kind} ({api}): forbidden (403); the scan needs get/list"
            ) from None
        except ResourceNotFoundError:
            return []  # e.g. resource.k8s.io/v1 not served: nothing DRA to scan
        except DynamicApiError as err:
            raise kube.failure(err, f"the list of {kind} ({api})") from None

    def optional(api: str, kind: str, resource: str) -> list[Obj]:
        """A read only some checks need: refused, those checks say what they lacked."""
        try:
            return kube.list(api, kind)
        except ForbiddenError:
            unread.append(f"list on {resource} ({api.split('/')[0]})")
            return []
        except ResourceNotFoundError:
            return []
        except DynamicApiError as err:
            raise kube.failure(err, f"the list of {kind} ({api})") from None

    status, metrics = kube.raw_get("/metrics")
    gates: dict[str, bool] = {}
    deprecated: list[dict[str, str]] = []
    if status == 200:
        gates = parse_feature_metrics(metrics)
        deprecated = deprecated_requests(metrics)
    nodes, pods, daemonsets = listed("v1", "Node"), listed("v1", "Pod"), listed("apps/v1", "DaemonSet")
    unread: list[str] = []
    workloads = [
        w
        for k in WORKLOAD_KINDS
        for w in workloads_of(k, daemonsets if k.kind == "DaemonSet" else optional(k.api, k.kind, k.resource))
    ]
    return ClusterState(
        version=(major, minor),
        git_version=git_version,
        gates=gates,
        nodes=nodes,
        pods=pods,
        daemonsets=daemonsets,
        classes=listed(RESOURCE_V1, "DeviceClass"),
        slices=listed(RESOURCE_V1, "ResourceSlice"),
        claims=listed(RESOURCE_V1, "ResourceClaim"),
        templates=listed(RESOURCE_V1, "ResourceClaimTemplate"),
        quotas=listed("v1", "ResourceQuota"),
        # The version the minor serves DeviceTaintRule in (harness.core.expectations); not served: [].
        taint_rules=listed(device_taint_rule_api((major, minor)), "DeviceTaintRule"),
        workloads=workloads,
        deprecated_requests=deprecated,
        unread=unread,
    )
