"""Invariants that must hold on a live cluster whatever happened to it (a pool migrated,
a component restarted, a node deleted): plain functions over API objects returning problem
lists (empty = the invariant holds), so suites assert `== []` and a wait can poll them.

- `double_allocations`: no device is allocated to two claims (same driver/pool/device),
  unless the device allows multiple allocations (or the result is admin access).
- `stale_reservations`: every `reservedFor` pod entry names a live pod (same uid, not done).
- `orphaned_claims`: no scheduler-created claim (annotation
  `resource.kubernetes.io/extended-resource-claim: "true"`) without a live owner pod, or
  whose bound owner records another claim.
- `not_running`: the pods that should run are Running.
- `over_promises`: per node, legacy units in use plus physical GPUs touched by DRA
  allocations never exceed the node's GPUs (the fake driver's physical-device ledger).

`collect` reads one consistent-enough snapshot; `check` runs the first four on it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from fake_driver.core.errors import UnknownChoiceError
from fake_driver.rendering.ledger import Ledger, Share, Usage
from harness.kit import kinds
from harness.kit.drastate import allocated_devices
from harness.kit.kube import Kube, Obj

EXTENDED_RESOURCE_CLAIM = "resource.kubernetes.io/extended-resource-claim"
DONE_PHASES = ("Succeeded", "Failed")

DeviceKey = tuple[str, str, str]  # driver, pool, device


def _ref(obj: Obj) -> str:
    meta = obj["metadata"]
    return f"{meta.get('namespace', '')}/{meta['name']}"


def _phase(pod: Obj) -> str:
    return str((pod.get("status") or {}).get("phase", ""))


def shareable_devices(slices: Iterable[Obj]) -> set[DeviceKey]:
    """Devices published with `allowMultipleAllocations: true`."""
    out: set[DeviceKey] = set()
    for s in slices:
        spec = s["spec"]
        pool = spec["pool"]["name"]
        for d in spec.get("devices") or []:
            if d.get("allowMultipleAllocations"):
                out.add((spec["driver"], pool, d["name"]))
    return out


def double_allocations(claims: Iterable[Obj], slices: Iterable[Obj]) -> list[str]:
    """Devices held by more than one allocation result (across claims, or twice in one)."""
    shareable = shareable_devices(slices)
    holders: dict[DeviceKey, list[str]] = {}
    exclusive: set[DeviceKey] = set()
    for c in claims:
        for r in allocated_devices(c):
            if r.get("adminAccess"):
                continue  # admin access may reach allocated devices by design
            key = (r["driver"], r["pool"], r["device"])
            holders.setdefault(key, []).append(_ref(c))
            # A share of a device that allows several allocations carries a shareID (resource/v1
            # DeviceRequestAllocationResult.ShareID, k8s.io/api v0.37.2): the result says so even
            # when its slice is already gone from the snapshot (another test's cleanup).
            if not r.get("shareID"):
                exclusive.add(key)
    return [
        f"device {driver}/{pool}/{device} allocated {len(who)} times: {', '.join(sorted(who))}"
        for (driver, pool, device), who in sorted(holders.items())
        if len(who) > 1 and (driver, pool, device) not in shareable and (driver, pool, device) in exclusive
    ]


def _live_pods(pods: Iterable[Obj]) -> dict[tuple[str, str], Obj]:
    return {(p["metadata"]["namespace"], p["metadata"]["name"]): p for p in pods}


def stale_reservations(claims: Iterable[Obj], pods: Iterable[Obj]) -> list[str]:
    """`reservedFor` pod entries that do not name a live pod: gone, another pod of the
    same name (uid mismatch), or done (Succeeded/Failed: its claim should be released)."""
    live = _live_pods(pods)
    problems = []
    for c in claims:
        ns = c["metadata"]["namespace"]
        for r in (c.get("status") or {}).get("reservedFor") or []:
            if r.get("resource") != "pods" or r.get("apiGroup"):
                continue
            pod = live.get((ns, r["name"]))
            if pod is None:
                why = "does not exist"
            elif pod["metadata"]["uid"] != r["uid"]:
                why = f"has uid {pod['metadata']['uid']}, not {r['uid']}"
            elif _phase(pod) in DONE_PHASES:
                why = f"is {_phase(pod)}"
            else:
                continue
            problems.append(f"claim {_ref(c)} is reserved for pod {ns}/{r['name']}, which {why}")
    return problems


def _controller_pod(claim: Obj) -> Obj | None:
    for o in claim["metadata"].get("ownerReferences") or []:
        if o.get("controller") and o.get("kind") == "Pod":
            return dict(o)
    return None


def orphaned_claims(claims: Iterable[Obj], pods: Iterable[Obj]) -> list[str]:
    """Scheduler-created claims without a live owner pod, or owned by a bound pod that
    records a different claim in `status.extendedResourceClaimStatus` (a duplicate left by
    an interrupted scheduling cycle)."""
    live = _live_pods(pods)
    problems = []
    for c in claims:
        meta = c["metadata"]
        if (meta.get("annotations") or {}).get(EXTENDED_RESOURCE_CLAIM) != "true":
            continue
        if meta.get("deletionTimestamp"):
            continue  # on its way out
        owner = _controller_pod(c)
        if owner is None:
            problems.append(f"scheduler-created claim {_ref(c)} has no owner pod")
            continue
        pod = live.get((meta["namespace"], owner["name"]))
        if pod is None or pod["metadata"]["uid"] != owner["uid"]:
            problems.append(
                f"scheduler-created claim {_ref(c)} is owned by pod {owner['name']}, which is gone"
            )
            continue
        recorded = ((pod.get("status") or {}).get("extendedResourceClaimStatus") or {}).get(
            "resourceClaimName"
        )
        if pod["spec"].get("nodeName") and recorded != meta["name"]:
            problems.append(
                f"scheduler-created claim {_ref(c)} is owned by bound pod {owner['name']}, "
                f"which records {recorded!r} instead"
            )
    return problems


def not_running(pods: Iterable[Obj], expected: Iterable[tuple[str, str]]) -> list[str]:
    """`expected` (namespace, name) pods that are missing or not Running."""
    live = _live_pods(pods)
    problems = []
    for ns, name in expected:
        pod = live.get((ns, name))
        if pod is None:
            problems.append(f"pod {ns}/{name} should be Running but does not exist")
        elif _phase(pod) != "Running":
            problems.append(f"pod {ns}/{name} should be Running but is {_phase(pod) or 'without phase'}")
    return problems


def _bridged_resources(pod: Obj) -> set[str]:
    status = (pod.get("status") or {}).get("extendedResourceClaimStatus") or {}
    return {m["resourceName"] for m in status.get("requestMappings") or []}


def legacy_in_use(pods: Iterable[Obj], resource: str) -> dict[str, int]:
    """Per node: units of `resource` held through the device plugin (bound, not done pods
    whose request is not bridged to DRA). Sum over containers, max with init containers."""
    used: dict[str, int] = {}
    for p in pods:
        node = p["spec"].get("nodeName")
        if not node or _phase(p) in DONE_PHASES or resource in _bridged_resources(p):
            continue
        n = _requested(p, resource)
        if n:
            used[node] = used.get(node, 0) + n
    return used


def _requested(pod: Obj, resource: str) -> int:
    def of(c: Obj) -> int:
        res = c.get("resources") or {}
        value = {**(res.get("limits") or {}), **(res.get("requests") or {})}.get(resource, "0")
        try:
            return int(str(value))
        except ValueError:
            return 0

    spec = pod["spec"]
    total = sum(of(c) for c in spec.get("containers") or [])
    return max([total, *(of(c) for c in spec.get("initContainers") or [])])


def over_promises(
    ledger: Ledger, nodes: Iterable[str], pods: Iterable[Obj], claims: Iterable[Obj], resource: str
) -> list[str]:
    """Per ledger node: legacy units in use + physical GPUs touched by DRA allocations must
    not exceed its GPUs, and no physical GPU part may be held by two DRA claims."""
    nodes = list(nodes)
    wanted = set(nodes)
    legacy = legacy_in_use(pods, resource)
    shares: dict[str, list[Share]] = {}
    usages: list[Usage] = []
    for c in claims:
        for r in allocated_devices(c):
            if r["pool"] not in wanted or r.get("adminAccess"):
                continue
            try:
                share = ledger.dra(r["driver"], r["pool"], r["device"])
            except UnknownChoiceError:
                continue  # another driver's device: not in this ledger
            shares.setdefault(share.node, []).append(share)
            usages.append(Usage(f"claim {_ref(c)}", share))
    problems = []
    for node in nodes:
        over = ledger.overcommit(node, legacy.get(node, 0), shares.get(node, []))
        if over:
            touched = len({s.gpu_uuid for s in shares.get(node, [])})
            problems.append(
                f"node {node} over-promised by {over} GPU(s): {legacy.get(node, 0)} legacy {resource} "
                f"in use + {touched} GPU(s) allocated through DRA > {len(ledger.gpus(node))} physical"
            )
    problems += [
        f"GPU {c.gpu_uuid} on {c.node} held by {', '.join(c.owners)}" for c in Ledger.conflicts(usages)
    ]
    return problems


@dataclass(frozen=True)
class Snapshot:
    pods: list[Obj] = field(default_factory=list)
    claims: list[Obj] = field(default_factory=list)
    slices: list[Obj] = field(default_factory=list)
    all_claims: list[Obj] = field(default_factory=list)  # cluster-wide, for double allocation


def collect(kube: Kube, namespaces: Iterable[str] | None = None) -> Snapshot:
    """Pods and claims of `namespaces` (default: all), every claim and every slice.

    Claims are read before pods: a claim can only gain reservations for pods that exist,
    so a pod created in between never shows up as a stale reservation."""
    all_claims = kube.list(*kinds.RESOURCE_CLAIM)
    slices = kube.list(*kinds.RESOURCE_SLICE)
    if namespaces is None:
        pods = kube.list(*kinds.POD)
        claims = all_claims
    else:
        wanted = set(namespaces)
        claims = [c for c in all_claims if c["metadata"]["namespace"] in wanted]
        pods = [p for ns in sorted(wanted) for p in kube.list(*kinds.POD, ns)]
    return Snapshot(pods, claims, slices, all_claims)


def check(snapshot: Snapshot, *, running: Iterable[tuple[str, str]] = ()) -> list[str]:
    """No double allocation, no stale reservation, no orphaned scheduler-created claim, and
    the `running` pods Running."""
    return (
        double_allocations(snapshot.all_claims, snapshot.slices)
        + stale_reservations(snapshot.claims, snapshot.pods)
        + orphaned_claims(snapshot.claims, snapshot.pods)
        + not_running(snapshot.pods, running)
    )


def check_cluster(
    kube: Kube, namespaces: Iterable[str] | None = None, *, running: Iterable[tuple[str, str]] = ()
) -> list[str]:
    return check(collect(kube, namespaces), running=running)


def expected_running(pods: Mapping[str, Obj] | Iterable[Obj]) -> list[tuple[str, str]]:
    """(namespace, name) of pod objects, for `running=`."""
    items = pods.values() if isinstance(pods, Mapping) else pods
    return [(p["metadata"]["namespace"], p["metadata"]["name"]) for p in items]
