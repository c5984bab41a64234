"""Kubernetes API access for the harness: one typed entry point over the official client.

DRA objects are read and written as plain dicts through the dynamic client, so fields the
Python models do not know yet (new DRA fields, pod.status.extendedResourceClaimStatus)
are never dropped before a test can assert them.
"""

from __future__ import annotations

import builtins
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from kubernetes import __version__ as CLIENT_LIBRARY_VERSION
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.discovery import LazyDiscoverer
from kubernetes.dynamic.exceptions import (
    ConflictError,
    DynamicApiError,
    ForbiddenError,
    NotFoundError,
    ResourceNotFoundError,
)
from kubernetes.dynamic.resource import Resource
from kubernetes.utils.quantity import parse_quantity as _parse_quantity

from fake_driver.api.apiclient import API_ERRORS, describe_failure, describe_status, new_api_client
from fake_driver.api.kubeconfig import check_kubeconfig, kubeconfig_paths
from fake_driver.core.errors import ClusterError
from harness.core.errors import HarnessError
from harness.kit import kinds
from harness.kit.waits import TIMEOUTS

Obj = dict[str, Any]
# The discovery cache's file: a path that cannot exist (a file under /dev/null), so the
# discoverer starts empty and MemoryDiscoverer never reads nor writes one.
NO_CACHE_FILE = os.path.join(os.devnull, "dra-harness-discovery.json")

# The one module of the harness that imports the kubernetes client (an import contract keeps
# it so): what others need of it is re-exported here.
__all__ = [
    "API_ERRORS",
    "CLIENT_LIBRARY_VERSION",
    "ApiException",
    "ConflictError",
    "DynamicApiError",
    "ForbiddenError",
    "Kube",
    "NotFoundError",
    "Obj",
    "ResourceNotFoundError",
    "ServerVersion",
    "checked_kubeconfig",
    "kubeconfig_files",
    "parse_quantity",
]


def parse_quantity(value: str) -> Any:
    """A Kubernetes quantity ("80Gi", "100m") as a Decimal (the client's own parser)."""
    return _parse_quantity(value)  # type: ignore[no-untyped-call]


@dataclass(frozen=True)
class ServerVersion:
    major: int
    minor: int  # "37+" on some distributions reads as 37
    git_version: str  # "v1.37.2"


# "37", or "37+" on some distributions, which reads as 37
_VERSION_NUMBER = re.compile(r"(\d+)\+?")


def parse_version(server: str, body: str) -> ServerVersion:
    """A /version answer as a ServerVersion; else one line saying what the server sent."""
    try:
        info = json.loads(body)
    except (ValueError, RecursionError):
        info = None
    fields = info if isinstance(info, dict) else {}
    major, minor = (_VERSION_NUMBER.fullmatch(str(fields.get(k, ""))) for k in ("major", "minor"))
    git_version = fields.get("gitVersion")
    if major and minor and isinstance(git_version, str) and git_version:
        return ServerVersion(int(major[1]), int(minor[1]), git_version)
    if not isinstance(info, dict):
        shown = " ".join(body[:80].split()) + ("..." if len(body) > 80 else "")
        raise HarnessError(f"the API server {server} answered /version with {shown!r}, not JSON")
    raise HarnessError(
        f"the API server {server} answered /version without a Kubernetes version: "
        f"major={fields.get('major')!r}, minor={fields.get('minor')!r}, gitVersion={git_version!r}"
    )


def checked_kubeconfig(kubeconfig: Path | str, context: str | None = None) -> str:
    """The server a kubeconfig points at, after checking the file offline; else one line."""
    try:
        return check_kubeconfig(kubeconfig, context).server
    except ClusterError as err:
        raise HarnessError(str(err)) from None


def kubeconfig_files(kubeconfig: Path | str | None) -> tuple[Path, ...]:
    """The files a kubeconfig value names (`a:b` as kubectl merges them; None: $KUBECONFIG,
    then ~/.kube/config) that are there, all regular files; else one line. Nothing is read."""
    try:
        return kubeconfig_paths(kubeconfig)
    except ClusterError as err:
        raise HarnessError(str(err)) from None


@dataclass
class Kube:
    """A connection to one cluster, with helpers that return plain dicts."""

    api_client: client.ApiClient

    @classmethod
    def from_kubeconfig(cls, kubeconfig: Path | str, context: str | None = None) -> Kube:
        """Every request of the client bounded by TIMEOUTS.api_request; the file checked first."""
        try:
            # Tests create many objects concurrently; the default pool of 4 serialises them.
            api = new_api_client(kubeconfig, context, TIMEOUTS.api_request, pool_size=32)
        except ClusterError as err:
            raise HarnessError(str(err)) from None
        return cls(api)

    def failure(self, err: Exception, what: str = "the request") -> HarnessError:
        """One line for a call that failed with one of API_ERRORS: the server did not answer
        within the client's bound, cannot be reached, or refused `what` (401, 403, ...)."""
        return HarnessError(describe_failure(err, self.api_client, what))

    @cached_property
    def dynamic(self) -> DynamicClient:
        return DynamicClient(self.api_client, discoverer=MemoryDiscoverer)  # type: ignore[no-untyped-call]

    def resource(self, api_version: str, kind: str) -> Resource:
        try:
            res: Resource = self.dynamic.resources.get(api_version=api_version, kind=kind)
        except ResourceNotFoundError:
            # Discovery is cached: a CRD created (or an API enabled) since may be served now.
            self.dynamic.resources.invalidate_cache()
            res = self.dynamic.resources.get(api_version=api_version, kind=kind)
        return res

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> Obj:
        obj: Obj = self.resource(api_version, kind).get(name=name, namespace=namespace).to_dict()
        return obj

    def list(
        self, api_version: str, kind: str, namespace: str | None = None, **selectors: str
    ) -> builtins.list[Obj]:
        items = self.resource(api_version, kind).get(namespace=namespace, **selectors).to_dict()["items"]
        return list(items)

    def pages(self, api_version: str, kind: str, limit: int = 500) -> Iterator[Obj]:
        """Every object of a cluster-wide list, read `limit` at a time (limit/continue), so
        a 5,000-node cluster is never one response in memory."""
        res, token = self.resource(api_version, kind), None
        while True:
            page = res.get(limit=limit, _continue=token).to_dict()
            yield from page["items"]
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return

    def create(self, body: Obj, namespace: str | None = None) -> Obj:
        res = self.resource(body["apiVersion"], body["kind"])
        ns = namespace or body.get("metadata", {}).get("namespace")
        created: Obj = res.create(body=body, namespace=ns if res.namespaced else None).to_dict()
        return created

    def delete(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None = None,
        *,
        grace: int | None = None,
    ) -> bool:
        """Delete; False when it was already gone. `grace=0` with a pod is a force delete: the
        object goes at once, whatever the kubelet is still doing."""
        body = None if grace is None else {"gracePeriodSeconds": grace}
        try:
            self.resource(api_version, kind).delete(name=name, namespace=namespace, body=body)
        except NotFoundError:
            return False
        return True

    def patch(self, api_version: str, kind: str, name: str, patch: Obj, namespace: str | None = None) -> Obj:
        """JSON merge patch (null deletes a field)."""
        out: Obj = (
            self.resource(api_version, kind)
            .patch(body=patch, name=name, namespace=namespace, content_type="application/merge-patch+json")
            .to_dict()
        )
        return out

    def patch_status(
        self, api_version: str, kind: str, name: str, patch: Obj, namespace: str | None = None
    ) -> Obj:
        res = self.resource(api_version, kind).subresources["status"]
        out: Obj = res.patch(
            body=patch, name=name, namespace=namespace, content_type="application/merge-patch+json"
        ).to_dict()
        return out

    def raw_get(self, path: str) -> tuple[int, str]:
        """GET a non-resource path (/metrics, /readyz) with the client's credentials."""
        return self._raw("GET", path)

    def raw_post(self, path: str, obj: Obj) -> tuple[int, str]:
        """POST an object without building client models: the cheapest create there is, for
        benchmarks that must not be limited by the client's own CPU."""
        return self._raw("POST", path, obj)

    def raw_merge_patch(self, path: str, patch: Obj) -> tuple[int, str]:
        """A JSON merge patch without building client models (null deletes a field)."""
        return self._raw("PATCH", path, patch, "application/merge-patch+json")

    def _raw(
        self, verb: str, path: str, obj: Obj | None = None, content_type: str = "application/json"
    ) -> tuple[int, str]:
        """(status, body) of one request with the client's credentials, no models built."""
        method, url, headers, body, post = self.api_client.param_serialize(
            verb,
            path,
            body=obj,
            header_params={"Content-Type": content_type} if obj is not None else None,
            auth_settings=["BearerToken"],
        )
        resp = self.api_client.call_api(method, url, header_params=headers, body=body, post_params=post)
        resp.read()  # type: ignore[no-untyped-call]
        return int(resp.status), (resp.data or b"").decode("utf-8", "replace")

    def version(self) -> ServerVersion:
        """The server's /version; one line when it answers anything else (an empty or partial
        version, a proxy's HTML page, JSON nested too deep to read)."""
        status, body = self.raw_get("/version")
        server = self.api_client.configuration.host
        if status != 200:
            raise HarnessError(describe_status(server, status, body))
        return parse_version(server, body)

    def server_version(self) -> tuple[int, int]:
        v = self.version()
        return v.major, v.minor

    def git_version(self) -> str:
        return self.version().git_version

    def evict(self, name: str, namespace: str, uid: str) -> bool:
        """Evict a pod (policy/v1 Eviction, only if it is still the pod with `uid`), as
        `kubectl drain` does; False when it was already gone."""
        body = client.V1Eviction(
            metadata=client.V1ObjectMeta(name=name, namespace=namespace),
            delete_options=client.V1DeleteOptions(preconditions=client.V1Preconditions(uid=uid)),
        )
        try:
            client.CoreV1Api(self.api_client).create_namespaced_pod_eviction(name, namespace, body)
        except ApiException as err:
            if err.status != 404:
                raise
            return False
        return True

    def events(self, namespace: str, involved_name: str | None = None) -> builtins.list[Obj]:
        selector = {"field_selector": f"involvedObject.name={involved_name}"} if involved_name else {}
        return self.list(*kinds.EVENT, namespace, **selector)

    def close(self) -> None:
        self.api_client.close()  # type: ignore[no-untyped-call]


class MemoryDiscoverer(LazyDiscoverer):
    """The dynamic client's discovery, kept by this client alone. The library's default
    caches it in /tmp/osrcp-<md5 of host:port>.json, server version included, and reads it
    back before asking the server: a cluster started on a port an earlier one used read the
    earlier cluster's APIs (a silent test server on a reused port was never asked), and the
    files stayed on the host (1,628 after a day of runs)."""

    def __init__(self, client: DynamicClient, cache_file: str | None) -> None:
        super().__init__(client, NO_CACHE_FILE)  # type: ignore[no-untyped-call]

    def _write_cache(self) -> None:
        """Nothing is written: the cache lives as long as this client."""
