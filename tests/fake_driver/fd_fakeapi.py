"""In-memory stand-in for the API server (the ``Rest`` protocol of fake_driver.kube).

Not a Kubernetes simulator: it stores objects, honours generateName, resourceVersion,
dryRun and the ResourceSlice field selectors, and lets a test reject or strip fields.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable
from typing import Any

from fake_driver.kube import MERGE_PATCH, ApiError

Obj = dict[str, Any]
# (method, path, body) -> raise ApiError or return a (possibly modified) body to store.
Hook = Callable[[str, str, Obj], Obj]


def _merge(dst: Obj, patch: Obj) -> None:
    for k, v in patch.items():
        if v is None:
            dst.pop(k, None)
        elif isinstance(v, dict) and isinstance(dst.get(k), dict):
            _merge(dst[k], v)
        else:
            dst[k] = copy.deepcopy(v)


class FakeRest:
    def __init__(self) -> None:
        self.objects: dict[str, Obj] = {}  # full path -> object
        self._rv = itertools.count(1)
        self._names = itertools.count(0)
        self.hook: Hook | None = None
        self.calls: list[tuple[str, str, bool]] = []  # (method, path, dry_run)

    # --- test helpers ------------------------------------------------------------------
    def add_node(self, name: str, uid: str | None = None, **status: Any) -> Obj:
        node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "uid": uid or f"uid-{name}"}}
        if status:
            node["status"] = status
        self.objects[f"/api/v1/nodes/{name}"] = node
        return node

    def delete_node(self, name: str) -> None:
        del self.objects[f"/api/v1/nodes/{name}"]

    def under(self, collection: str) -> list[Obj]:
        prefix = collection.rstrip("/") + "/"
        return [o for p, o in self.objects.items() if p.startswith(prefix) and "/" not in p[len(prefix) :]]

    def slices(self, group_version: str = "resource.k8s.io/v1") -> list[Obj]:
        return self.under(f"/apis/{group_version}/resourceslices")

    # --- Rest protocol -------------------------------------------------------------------
    def get(self, path: str) -> Obj | None:
        self.calls.append(("GET", path, False))
        if path == "/version":
            return {"major": "1", "minor": "35"}
        obj = self.objects.get(path)
        return copy.deepcopy(obj) if obj is not None else None

    def list(self, path: str, query: dict[str, str] | None = None) -> list[Obj]:
        self.calls.append(("LIST", path, False))
        items = self.under(path)
        sel = (query or {}).get("fieldSelector", "")
        for term in filter(None, sel.split(",")):
            key, _, want = term.partition("=")
            field = key.removeprefix("spec.")
            items = [o for o in items if str(o.get("spec", {}).get(field, "")) == want]
        return copy.deepcopy(items)

    def _store(self, method: str, path: str, body: Obj, dry_run: bool) -> Obj:
        self.calls.append((method, path, dry_run))
        body = copy.deepcopy(body)
        if self.hook is not None:
            body = self.hook(method, path, body)
        if not dry_run:
            self.objects[path] = body
        return copy.deepcopy(body)

    def create(self, path: str, body: Obj, *, dry_run: bool = False) -> Obj:
        meta = body.setdefault("metadata", {})
        if "name" not in meta:
            meta = {**meta, "name": f"{meta['generateName']}{next(self._names):05d}"}
            body = {**body, "metadata": meta}
        full = f"{path}/{meta['name']}"
        if full in self.objects:
            raise ApiError(409, "AlreadyExists", f"{full} already exists")
        body["metadata"]["resourceVersion"] = str(next(self._rv))
        return self._store("POST", full, body, dry_run)

    def replace(self, path: str, body: Obj, *, dry_run: bool = False) -> Obj:
        cur = self.objects.get(path)
        if cur is None:
            raise ApiError(404, "NotFound", f"{path} not found")
        if body["metadata"].get("resourceVersion") != cur["metadata"].get("resourceVersion"):
            raise ApiError(409, "Conflict", "resourceVersion mismatch")
        body = copy.deepcopy(body)
        body["metadata"]["resourceVersion"] = str(next(self._rv))
        return self._store("PUT", path, body, dry_run)

    def delete(self, path: str) -> None:
        self.calls.append(("DELETE", path, False))
        self.objects.pop(path, None)

    def patch(self, path: str, body: Obj, content_type: str = MERGE_PATCH) -> Obj:
        self.calls.append(("PATCH", path, False))
        target = path.removesuffix("/status")
        obj = self.objects.get(target)
        if obj is None:
            raise ApiError(404, "NotFound", f"{target} not found")
        _merge(obj, body)
        return copy.deepcopy(obj)
