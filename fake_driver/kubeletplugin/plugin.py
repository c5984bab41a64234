"""Prepare / unprepare logic of the kubelet plugin, independent of gRPC.

The kubelet sends only (namespace, uid, name) per claim; the plugin reads the ResourceClaim
(``status.allocation.devices.results`` of this driver), checks each allocated device is one
this node publishes, writes the claim's CDI spec and checkpoints the result. Everything is
idempotent: a claim already prepared returns the devices recorded for it, and unpreparing a
claim that is not prepared succeeds.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from fake_driver.api.apilimits import Minor
from fake_driver.api.kube import Obj, as_rest
from fake_driver.core.errors import FakeDriverError
from fake_driver.fleetspec.fleet import NodeSpec
from fake_driver.kubeletplugin import cdi, checkpoint
from fake_driver.kubeletplugin.checkpoint import PreparedClaim, PreparedDevice
from fake_driver.rendering.slices import RenderedPool, render_node

RESOURCE_CLAIMS = "/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims/{name}"
ANY_CLAIM = "*"


@dataclass(frozen=True)
class ClaimRef:
    namespace: str
    uid: str
    name: str

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class ClaimResult:
    """One claim's answer: devices, or a non-empty error (the kubelet then retries)."""

    devices: tuple[PreparedDevice, ...] = ()
    error: str = ""


class ClaimSource(Protocol):
    def get(self, namespace: str, name: str) -> Obj | None: ...


class StatusWriter(Protocol):
    """Writes the claim's status.devices entries for the devices prepared (devicestatus.py)."""

    def write(
        self, driver: str, claim: Obj, devices: Sequence[PreparedDevice], visible: Mapping[str, str]
    ) -> None: ...


class ApiClaimSource:
    """ResourceClaims read from the API server (resource.k8s.io/v1, served from 1.34)."""

    def __init__(self, api_client: Any) -> None:
        self.rest = as_rest(api_client)

    def get(self, namespace: str, name: str) -> Obj | None:
        return self.rest.get(RESOURCE_CLAIMS.format(namespace=namespace, name=name))


class StaticClaimSource:
    """ResourceClaims given up front (a JSON list of claim objects): no API server needed."""

    def __init__(self, claims: Sequence[Obj] = ()) -> None:
        self.claims: dict[str, Obj] = {}
        for c in claims:
            self.put(c)

    def put(self, claim: Obj) -> None:
        meta = claim["metadata"]
        self.claims[f"{meta['namespace']}/{meta['name']}"] = claim

    def get(self, namespace: str, name: str) -> Obj | None:
        return self.claims.get(f"{namespace}/{name}")

    @classmethod
    def from_file(cls, path: Path) -> StaticClaimSource:
        try:
            raw = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as err:
            raise FakeDriverError(f"cannot read claims file {path}: {err}") from None
        if not isinstance(raw, list):
            raise FakeDriverError(f"claims file {path}: expected a JSON list of ResourceClaims")
        return cls(raw)


class InjectedGrpcError(FakeDriverError):
    """A fault asks the whole call to fail at the gRPC level (the kubelet retries it all)."""


@dataclass(frozen=True)
class PluginFaults:
    """Injected failures. Keys are a claim UID, ``namespace/name`` or ``*`` (every claim).

    ``prepare_errors`` / ``unprepare_errors``: the claim's response carries this error text.
    ``grpc_error``: every call fails with gRPC status UNAVAILABLE and this message.
    """

    prepare_errors: Mapping[str, str] = field(default_factory=dict)
    unprepare_errors: Mapping[str, str] = field(default_factory=dict)
    grpc_error: str = ""

    @classmethod
    def from_file(cls, path: Path | None) -> PluginFaults:
        """Read on every call, so a running plugin's faults change by rewriting the file."""
        if path is None or not path.exists():
            return cls()
        try:
            raw = json.loads(path.read_text() or "{}")
        except (OSError, json.JSONDecodeError) as err:
            raise FakeDriverError(f"cannot read faults file {path}: {err}") from None
        known = {"prepareErrors", "unprepareErrors", "grpcError"}
        if not isinstance(raw, dict) or set(raw) - known:
            raise FakeDriverError(f"faults file {path}: expected an object with keys {sorted(known)}")
        return cls(
            prepare_errors={str(k): str(v) for k, v in (raw.get("prepareErrors") or {}).items()},
            unprepare_errors={str(k): str(v) for k, v in (raw.get("unprepareErrors") or {}).items()},
            grpc_error=str(raw.get("grpcError") or ""),
        )

    @staticmethod
    def lookup(errors: Mapping[str, str], ref: ClaimRef) -> str:
        return errors.get(ref.uid) or errors.get(ref.key) or errors.get(ANY_CLAIM) or ""


def visible_ids(rendered: RenderedPool) -> dict[str, str]:
    """Device name -> the ID a container sees: the device's own ``uuid`` attribute (full GPU,
    static MIG), else the physical GPU it stands for (abstract DynamicMIG devices)."""
    out = {r.name: r.gpu_uuid for r in rendered.devices}
    for s in rendered.slices:
        for d in s["spec"].get("devices", ()):
            uuid = d.get("attributes", {}).get("uuid", {}).get("string")
            if uuid:
                out[d["name"]] = uuid
    return out


class KubeletPlugin:
    """One node's plugin state: what the node publishes, what is prepared, where specs go."""

    def __init__(
        self,
        node: NodeSpec,
        minor: Minor,
        claims: ClaimSource,
        *,
        plugin_dir: Path,
        cdi_root: Path,
        faults: PluginFaults | None = None,
        faults_file: Path | None = None,
        shared: bool = False,
        status: StatusWriter | None = None,
    ) -> None:
        """`status`: where the device status goes when the node's pool sets device_status.
        `shared`: another instance of the driver serves the same node at the same time (a
        rolling update), so every call holds `<plugin_dir>/serialize.lock` and reads the
        checkpoint afresh, as the kubeletplugin library's Serialize does across instances."""
        self.node = node
        self.driver = node.pool.personality.driver
        self.rendered = render_node(node, minor)
        self.devices = visible_ids(self.rendered)
        self.claims = claims
        self.plugin_dir = plugin_dir
        self.cdi_root = cdi_root
        self.faults = faults
        self.faults_file = faults_file
        self.checkpoint_path = plugin_dir / checkpoint.CHECKPOINT_FILE
        self.shared = shared
        self.status = status if node.pool.device_status else None
        if node.pool.device_status and status is None:
            raise FakeDriverError(
                f"pool {node.pool.name}: device_status needs the API server (no --claims-file)"
            )
        self._lock = threading.Lock()  # prepare/unprepare are serialised, like NVIDIA's pu.lock
        self._prepared = checkpoint.load(self.checkpoint_path)

    @contextlib.contextmanager
    def _serialized(self) -> Iterator[None]:
        with self._lock:
            if not self.shared:
                yield
                return
            self.plugin_dir.mkdir(parents=True, exist_ok=True)
            with (self.plugin_dir / "serialize.lock").open("a") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
                self._prepared = checkpoint.load(self.checkpoint_path)
                yield

    @property
    def prepared(self) -> dict[str, PreparedClaim]:
        with self._serialized():
            return dict(self._prepared)

    def current_faults(self) -> PluginFaults:
        return self.faults if self.faults is not None else PluginFaults.from_file(self.faults_file)

    def prepare(self, refs: Sequence[ClaimRef]) -> dict[str, ClaimResult]:
        faults = self.current_faults()
        if faults.grpc_error:
            raise InjectedGrpcError(faults.grpc_error)
        with self._serialized():
            out = {ref.uid: self._prepare_one(ref, faults) for ref in refs}
            checkpoint.save(self.checkpoint_path, self._prepared)
        return out

    def unprepare(self, refs: Sequence[ClaimRef]) -> dict[str, ClaimResult]:
        faults = self.current_faults()
        if faults.grpc_error:
            raise InjectedGrpcError(faults.grpc_error)
        out: dict[str, ClaimResult] = {}
        with self._serialized():
            for ref in refs:
                injected = PluginFaults.lookup(faults.unprepare_errors, ref)
                if injected:
                    out[ref.uid] = ClaimResult(error=injected)
                    continue
                cdi.remove_spec(self.cdi_root, self.driver, ref.uid)
                self._prepared.pop(ref.uid, None)
                out[ref.uid] = ClaimResult()
            checkpoint.save(self.checkpoint_path, self._prepared)
        return out

    def _prepare_one(self, ref: ClaimRef, faults: PluginFaults) -> ClaimResult:
        injected = PluginFaults.lookup(faults.prepare_errors, ref)
        if injected:
            return ClaimResult(error=injected)
        done = self._prepared.get(ref.uid)
        if done is not None:
            return ClaimResult(devices=done.devices)
        try:
            claim, devices = self._allocated(ref)
        except FakeDriverError as err:
            return ClaimResult(error=str(err))
        spec = cdi.claim_spec(
            self.driver,
            ref.uid,
            ref.key,
            [cdi.CdiDevice(d.device, self.devices[d.device]) for d in devices],
        )
        cdi.write_spec(self.cdi_root, self.driver, ref.uid, spec)
        if self.status is not None:
            try:  # before the claim counts as prepared: a failed write is retried by the kubelet
                self.status.write(self.driver, claim, devices, self.devices)
            except FakeDriverError as err:
                return ClaimResult(error=str(err))
        self._prepared[ref.uid] = PreparedClaim(ref.namespace, ref.name, devices)
        return ClaimResult(devices=devices)

    def _allocated(self, ref: ClaimRef) -> tuple[Obj, tuple[PreparedDevice, ...]]:
        claim = self.claims.get(ref.namespace, ref.name)
        if claim is None:
            raise FakeDriverError(f"ResourceClaim {ref.key} not found")
        uid = claim.get("metadata", {}).get("uid")
        if uid != ref.uid:
            raise FakeDriverError(f"ResourceClaim {ref.key} has UID {uid}, the kubelet asked for {ref.uid}")
        allocation = (claim.get("status") or {}).get("allocation")
        if not allocation:
            raise FakeDriverError(f"ResourceClaim {ref.key} is not allocated")
        results = [
            r
            for r in (allocation.get("devices") or {}).get("results") or ()
            if r.get("driver") == self.driver
        ]
        if not results:
            raise FakeDriverError(f"ResourceClaim {ref.key} has no devices of driver {self.driver}")
        node = self.node.name
        devices: list[PreparedDevice] = []
        for r in results:
            pool, name = r.get("pool", ""), r.get("device", "")
            if pool != node:
                raise FakeDriverError(f"ResourceClaim {ref.key}: device {pool}/{name} is not on node {node}")
            if name not in self.devices:
                raise FakeDriverError(
                    f"ResourceClaim {ref.key}: device {name} is not published on node {node}"
                )
            devices.append(
                PreparedDevice(
                    requests=(str(r.get("request", "")),),
                    pool=pool,
                    device=name,
                    cdi_device_ids=(cdi.cdi_device_id(self.driver, ref.uid, name),),
                    share_id=str(r.get("shareID") or ""),
                )
            )
        return claim, tuple(devices)
