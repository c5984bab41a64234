"""Minimal REST access with plain dicts, so fields the Python models do not know are kept.

``KubeRest`` wraps a ``kubernetes.client.ApiClient`` (``call_api`` with raw JSON). Anything
with the same methods (the ``Rest`` protocol) can stand in, e.g. an in-memory fake in tests.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from urllib3.exceptions import HTTPError

from fake_driver.core.errors import ClusterError, FakeDriverError

Obj = dict[str, Any]

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"


class ApiError(FakeDriverError):
    """An API call failed. ``fields`` are the causes' field paths the server reported."""

    def __init__(self, status: int, reason: str, message: str, fields: tuple[str, ...] = ()) -> None:
        self.status = status
        self.reason = reason
        self.fields = fields
        super().__init__(message)

    @classmethod
    def from_response(cls, status: int, body: str | bytes | None, what: str) -> ApiError:
        reason, message = "", ""
        fields: tuple[str, ...] = ()
        try:
            data = json.loads(body or b"{}")
        except (ValueError, TypeError):
            data = {}
        if isinstance(data, dict):
            reason = str(data.get("reason", ""))
            message = str(data.get("message", ""))
            causes = (data.get("details") or {}).get("causes") or ()
            fields = tuple(str(c.get("field")) for c in causes if isinstance(c, dict) and c.get("field"))
        text = " ".join((message or (body.decode() if isinstance(body, bytes) else str(body or ""))).split())
        return cls(status, reason, f"{what}: {status} {reason}: {text}".strip(), fields)


class Rest(Protocol):
    def get(self, path: str) -> Obj | None: ...
    def list(self, path: str, query: dict[str, str] | None = None) -> list[Obj]: ...
    def create(self, path: str, body: Obj, *, dry_run: bool = False) -> Obj: ...
    def replace(self, path: str, body: Obj, *, dry_run: bool = False) -> Obj: ...
    def delete(self, path: str) -> None: ...
    def patch(self, path: str, body: Obj, content_type: str = MERGE_PATCH) -> Obj: ...


class KubeRest:
    def __init__(self, api_client: Any) -> None:
        self.api_client = api_client

    def _call(
        self,
        method: str,
        path: str,
        *,
        query: dict[str, str] | None = None,
        body: Obj | None = None,
        content_type: str = JSON,
    ) -> Obj | None:
        # kubernetes>=31 (OpenAPI generator 7): param_serialize builds URL, auth and body;
        # call_api returns the raw response without raising on HTTP errors.
        from kubernetes.client.exceptions import ApiException

        from fake_driver.api.apiclient import describe_failure, describe_status

        headers = {"Accept": JSON, "Content-Type": content_type}
        try:
            m, url, hdrs, data, post = self.api_client.param_serialize(
                method,
                path,
                query_params=list((query or {}).items()),
                header_params=headers,
                body=body,
                auth_settings=["BearerToken"],
            )
            resp = self.api_client.call_api(m, url, header_params=hdrs, body=data, post_params=post)
            raw = resp.read()
            status = int(resp.status)
        except ApiException as e:
            raw, status = e.body, int(e.status or 0)
            if not status:  # no answer: the TLS handshake failed
                raise ClusterError(describe_failure(e, self.api_client)) from None
        except HTTPError as e:  # no answer: unreachable, or silent past the client's bound
            raise ClusterError(describe_failure(e, self.api_client)) from None
        if status in (401, 403):  # no request of this client will do better
            server = str(self.api_client.configuration.host)
            raise ClusterError(describe_status(server, status, raw, f"{method} {path}"))
        if status == 404 and method in ("GET", "DELETE"):
            return None
        if not 200 <= status < 300:
            raise ApiError.from_response(status, raw, f"{method} {path}")
        return json.loads(raw) if raw else {}

    def get(self, path: str) -> Obj | None:
        return self._call("GET", path)

    def list(self, path: str, query: dict[str, str] | None = None) -> list[Obj]:
        items: list[Obj] = []
        q = dict(query or {})
        q.setdefault("limit", "500")
        while True:
            page = self._call("GET", path, query=q) or {}
            items.extend(page.get("items") or ())
            cont = (page.get("metadata") or {}).get("continue")
            if not cont:
                return items
            q["continue"] = cont

    def create(self, path: str, body: Obj, *, dry_run: bool = False) -> Obj:
        return self._call("POST", path, query={"dryRun": "All"} if dry_run else None, body=body) or {}

    def replace(self, path: str, body: Obj, *, dry_run: bool = False) -> Obj:
        return self._call("PUT", path, query={"dryRun": "All"} if dry_run else None, body=body) or {}

    def delete(self, path: str) -> None:
        self._call("DELETE", path)

    def patch(self, path: str, body: Obj, content_type: str = MERGE_PATCH) -> Obj:
        return self._call("PATCH", path, body=body, content_type=content_type) or {}


def as_rest(client: Any) -> Rest:
    """Accept an ApiClient or anything already speaking ``Rest``."""
    if hasattr(client, "call_api"):
        return KubeRest(client)
    return client  # type: ignore[no-any-return]


def server_minor(client: Any) -> str:
    """'<major>.<minor>' from /version (strips '+' that some distributions append)."""
    info = as_rest(client).get("/version") or {}
    return f"{info.get('major', '')}.{str(info.get('minor', '')).rstrip('+')}"
