"""Builders for the objects tests create. Each returns a plain dict in the exact API shape,
so a test reads like the manifest a user would write."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from harness.kit.kinds import resource_api
from harness.kit.kube import Obj

PAUSE_IMAGE = "registry.k8s.io/pause:3.10"  # never pulled: kwok nodes run no containers

# pkg/apis/resource/types.go DRAAdminNamespaceLabelKey @ v1.34.4 and v1.37.2
ADMIN_ACCESS_LABEL = "resource.kubernetes.io/admin-access"


def container(
    name: str = "main",
    *,
    limits: Mapping[str, str] | None = None,
    claims: Sequence[str] = (),
    requests: Mapping[str, str] | None = None,
) -> Obj:
    c: Obj = {"name": name, "image": PAUSE_IMAGE}
    resources: Obj = {}
    if limits:
        resources["limits"] = dict(limits)
    if requests:
        resources["requests"] = dict(requests)
    if claims:
        resources["claims"] = [{"name": n} for n in claims]
    if resources:
        c["resources"] = resources
    return c


def pod(
    name: str,
    namespace: str,
    *,
    containers: Sequence[Obj] | None = None,
    init_containers: Sequence[Obj] = (),
    claim_templates: Mapping[str, str] | None = None,
    claims: Mapping[str, str] | None = None,
    node_selector: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    restart_policy: str = "Never",
    grace_seconds: int = 0,
) -> Obj:
    """A pod; `claim_templates` maps pod claim name -> ResourceClaimTemplate name,
    `claims` maps pod claim name -> existing ResourceClaim name. `grace_seconds` 0 suits kwok
    pods (nothing runs); a pod on a real kubelet takes nodepods.REAL_KUBELET_GRACE_SECONDS."""
    spec: Obj = {
        "containers": list(containers or [container()]),
        "restartPolicy": restart_policy,
        "terminationGracePeriodSeconds": grace_seconds,
    }
    if init_containers:
        spec["initContainers"] = list(init_containers)
    pod_claims = [{"name": n, "resourceClaimTemplateName": t} for n, t in (claim_templates or {}).items()] + [
        {"name": n, "resourceClaimName": c} for n, c in (claims or {}).items()
    ]
    if pod_claims:
        spec["resourceClaims"] = pod_claims
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    meta: Obj = {"name": name, "namespace": namespace}
    if labels:
        meta["labels"] = dict(labels)
    if annotations:
        meta["annotations"] = dict(annotations)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def legacy_pod(
    name: str,
    namespace: str,
    resource: str,
    count: int,
    *,
    node_selector: Mapping[str, str] | None = None,
    **pod_options: Any,
) -> Obj:
    """An unchanged, device-plugin-era pod: `limits: {resource: count}` and nothing else."""
    return pod(
        name,
        namespace,
        node_selector=node_selector,
        containers=[container(limits={resource: str(count)})],
        **pod_options,
    )


def template_pod(
    name: str,
    namespace: str,
    template: str,
    *,
    claim: str = "gpu",
    **pod_options: Any,
) -> Obj:
    """A pod whose one container uses one claim made from ResourceClaimTemplate `template`."""
    return pod(
        name,
        namespace,
        containers=[container(claims=[claim])],
        claim_templates={claim: template},
        **pod_options,
    )


def device_class(
    name: str,
    *,
    selectors: Sequence[str] = (),
    extended_resource_name: str | None = None,
    api: str = "v1",
) -> Obj:
    spec: Obj = {"selectors": [{"cel": {"expression": e}} for e in selectors]}
    if extended_resource_name:
        spec["extendedResourceName"] = extended_resource_name
    return {"apiVersion": resource_api(api), "kind": "DeviceClass", "metadata": {"name": name}, "spec": spec}


def exact_request(
    name: str,
    device_class_name: str,
    *,
    count: int = 1,
    selectors: Sequence[str] = (),
    capacity: Mapping[str, str] | None = None,
    tolerations: Sequence[Obj] = (),
    admin_access: bool = False,
) -> Obj:
    exactly: Obj = {"deviceClassName": device_class_name, "allocationMode": "ExactCount", "count": count}
    if admin_access:  # DRAAdminAccess: needs the namespace label ADMIN_ACCESS_LABEL
        exactly["adminAccess"] = True
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    if capacity:
        exactly["capacity"] = {"requests": dict(capacity)}
    if tolerations:
        exactly["tolerations"] = list(tolerations)
    return {"name": name, "exactly": exactly}


def device_toleration(key: str, effect: str, value: str | None = None) -> Obj:
    """A request's toleration of a device taint (Equal with a value, else Exists)."""
    if value is None:
        return {"key": key, "operator": "Exists", "effect": effect}
    return {"key": key, "operator": "Equal", "value": value, "effect": effect}


def device_taint_rule(
    name: str, api_version: str, *, driver: str, pool: str, device: str, key: str, effect: str
) -> Obj:
    """A DeviceTaintRule tainting one device (`api_version` from harness.core.expectations)."""
    selector = {"driver": driver, "pool": pool, "device": device}
    spec = {"deviceSelector": selector, "taint": {"key": key, "effect": effect}}
    return {"apiVersion": api_version, "kind": "DeviceTaintRule", "metadata": {"name": name}, "spec": spec}


def claim_spec(requests: Sequence[Obj], constraints: Sequence[Obj] = ()) -> Obj:
    devices: Obj = {"requests": list(requests)}
    if constraints:
        devices["constraints"] = list(constraints)
    return {"devices": devices}


def claim_template(
    name: str, namespace: str, requests: Sequence[Obj], constraints: Sequence[Obj] = (), api: str = "v1"
) -> Obj:
    return {
        "apiVersion": resource_api(api),
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"spec": claim_spec(requests, constraints)},
    }


def resource_claim(
    name: str, namespace: str, requests: Sequence[Obj], constraints: Sequence[Obj] = (), api: str = "v1"
) -> Obj:
    return {
        "apiVersion": resource_api(api),
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": claim_spec(requests, constraints),
    }


def resource_slice(
    name: str,
    *,
    driver: str,
    node_name: str,
    devices: Sequence[Obj],
    pool: str | None = None,
    generation: int = 1,
    slice_count: int = 1,
    api: str = "v1",
) -> Obj:
    """A hand-written slice, for tests that must not depend on the fake driver."""
    return {
        "apiVersion": resource_api(api),
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": {
            "driver": driver,
            "nodeName": node_name,
            "pool": {"name": pool or node_name, "generation": generation, "resourceSliceCount": slice_count},
            "devices": list(devices),
        },
    }


def device(
    name: str, attributes: Mapping[str, Any] | None = None, capacity: Mapping[str, str] | None = None
) -> Obj:
    """A device; attribute values are typed by their Python type (str, bool, int) or given
    as {"version": "1.2.3"}."""

    def typed(value: Any) -> Obj:
        if isinstance(value, dict):
            return dict(value)
        if isinstance(value, bool):
            return {"bool": value}
        if isinstance(value, int):
            return {"int": value}
        return {"string": str(value)}

    out: Obj = {"name": name}
    if attributes:
        out["attributes"] = {k: typed(v) for k, v in attributes.items()}
    if capacity:
        out["capacity"] = {k: {"value": v} for k, v in capacity.items()}
    return out


def subrequest(name: str, device_class_name: str, *, count: int = 1, selectors: Sequence[str] = ()) -> Obj:
    """One alternative of a `firstAvailable` request (DRAPrioritizedList)."""
    sub: Obj = {
        "name": name,
        "deviceClassName": device_class_name,
        "allocationMode": "ExactCount",
        "count": count,
    }
    if selectors:
        sub["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    return sub


def first_available_request(name: str, subrequests: Sequence[Obj]) -> Obj:
    """A request satisfied by the first of `subrequests` that can be allocated; the
    allocation result names it `<name>/<subrequest>`."""
    return {"name": name, "firstAvailable": list(subrequests)}


def match_attribute(requests: Sequence[str], attribute: str) -> Obj:
    """A claim constraint: every device of `requests` has the same value of `attribute`."""
    return {"requests": list(requests), "matchAttribute": attribute}


def token_kubeconfig(cluster: Obj, token: str, user: str = "token") -> Obj:
    """A kubeconfig whose one context pairs `cluster` (a kubeconfig clusters[].cluster: server,
    CA) with a bearer-token user: what a ServiceAccount token gives a client."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": user,
        "clusters": [{"name": user, "cluster": cluster}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": user, "context": {"cluster": user, "user": user}}],
    }


def daemon_set(name: str, namespace: str, template: Obj) -> Obj:
    """A DaemonSet running `template`'s spec (a pod from `pod`/`template_pod`) on every node it
    selects; its pods are labelled app=<name>."""
    labels = {"app": name}
    spec = dict(template["spec"])
    spec["restartPolicy"] = "Always"  # the only policy a DaemonSet accepts
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": spec},
        },
    }
