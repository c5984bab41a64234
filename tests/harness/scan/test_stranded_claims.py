"""The scan's stranded-claim check: a deleted claim still reserved for pods that are gone."""

from __future__ import annotations

from harness.scan.cluster import stranded_claims
from harness.scan.state import ClusterState


def _claim(name: str, reserved_for: dict[str, str], deleted: bool) -> dict[str, object]:
    meta: dict[str, object] = {"name": name, "namespace": "team"}
    if deleted:
        meta["deletionTimestamp"] = "2026-12-04T16:52:04Z"
    return {
        "metadata": meta,
        "status": {
            "reservedFor": [{"resource": "pods", "name": n, "uid": u} for n, u in reserved_for.items()]
        },
    }


def _state(version: tuple[int, int], pods: dict[str, str], claims: list[dict[str, object]]) -> ClusterState:
    return ClusterState(
        version=version,
        git_version=f"v{version[0]}.{version[1]}.0",
        gates={},
        nodes=[],
        pods=[{"metadata": {"name": n, "uid": u}} for n, u in pods.items()],
        daemonsets=[],
        classes=[],
        slices=[],
        claims=claims,
        templates=[],
        quotas=[],
    )


def test_only_a_deleted_claim_reserved_for_a_gone_pod_is_stranded() -> None:
    claims = [
        _claim("stranded", {"a": "uid-a", "b": "uid-b"}, deleted=True),  # a gone, b alive
        _claim("pod-alive", {"b": "uid-b"}, deleted=True),
        _claim("not-deleted", {"c": "uid-c"}, deleted=False),
        _claim("replaced", {"b": "uid-old"}, deleted=True),  # same name, new pod
    ]
    found = stranded_claims(_state((1, 34), {"b": "uid-b"}, claims))
    assert [(f.check, f.subject, f.message) for f in found] == [
        (
            "stranded-claim",
            "resourceclaim/team/stranded",
            "deleted but still reserved for pod(s) a, which no longer exist: its devices stay allocated",
        ),
        (
            "stranded-claim",
            "resourceclaim/team/replaced",
            "deleted but still reserved for pod(s) b, which no longer exist: its devices stay allocated",
        ),
    ]
    assert found[0].remediation.endswith("; 1.35 requeues it when the pod goes")


def test_the_remediation_names_the_upgrade_only_where_it_helps() -> None:
    [found] = stranded_claims(_state((1, 37), {}, [_claim("x", {"a": "uid-a"}, deleted=True)]))
    assert found.remediation == (
        "change the claim (e.g. add a label: any update requeues it) or restart kube-controller-manager"
    )
