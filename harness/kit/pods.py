"""Reading and waiting on pods: phase, conditions, why one is unschedulable (their claims are
read in harness.kit.drastate)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from harness.core.errors import WaitTimeout
from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.kube import Kube, Obj
from harness.kit.waits import TIMEOUTS, assert_stays, wait_for


def condition(pod: Obj, kind: str) -> Obj | None:
    for c in pod.get("status", {}).get("conditions") or []:
        if c["type"] == kind:
            return dict(c)
    return None


def phase(pod: Obj) -> str:
    return str(pod.get("status", {}).get("phase", ""))


def summary(pod: Obj) -> dict[str, object]:
    """What a timeout message should show about a pod: phase, node and PodScheduled."""
    return {
        "name": pod["metadata"]["name"],
        "phase": phase(pod),
        "nodeName": pod["spec"].get("nodeName"),
        "PodScheduled": condition(pod, "PodScheduled"),
    }


def assert_stays_pending(kube: Kube, namespace: str, name: str, why: str) -> Obj:
    """The pod stays Pending and unbound for TIMEOUTS.stays_pending; `why` names the cause."""
    return assert_stays(
        lambda: kube.get(*kinds.POD, name, namespace),
        lambda p: phase(p) == "Pending" and not p["spec"].get("nodeName"),
        duration=TIMEOUTS.stays_pending,
        describe=f"pod {name} Pending while {why}",
    )


def pod_story(pod: Obj, events: Sequence[Obj]) -> str:
    """What a failed wait on a pod shows first: phase and node, each condition with its reason
    and message, each container's waiting or terminated reason, then the pod's events
    (FailedScheduling with the scheduler's reason, a kubelet's Prepare error) - not a pod dict
    cut off before its status."""
    status = pod.get("status") or {}
    lines = [f"phase {phase(pod) or '-'}, node {pod.get('spec', {}).get('nodeName') or '-'}"]
    for c in status.get("conditions") or []:
        why = " ".join(x for x in (c.get("reason"), c.get("message")) if x)
        lines.append(f"  {c['type']}={c['status']}{': ' + why if why else ''}")
    for cs in [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]:
        for state, detail in (cs.get("state") or {}).items():
            if state != "running" and detail:
                why = " ".join(str(x) for x in (detail.get("reason"), detail.get("message")) if x)
                lines.append(f"  container {cs['name']} {state}: {why}")
    shown = sorted(events, key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime") or ""))[-10:]
    lines += ["events:" if shown else "events: none"]
    lines += [
        f"  {e.get('type')} {e.get('reason')} ({e.get('count') or 1}x): {e.get('message')}" for e in shown
    ]
    return "\n".join(lines)


def _wait_pod(kube: Kube, namespace: str, name: str, until: Any, timeout: float, describe: str) -> Obj:
    try:
        return wait_for(
            lambda: kube.get(*kinds.POD, name, namespace), until, timeout=timeout, describe=describe
        )
    except WaitTimeout as err:
        try:
            pod = kube.get(*kinds.POD, name, namespace)
            events = kube.list(*kinds.EVENT, namespace, field_selector=f"involvedObject.name={name}")
        except Exception:  # the story is extra; the timeout is the failure
            raise err from None
        raise WaitTimeout(
            f"timed out after {timeout:g}s waiting for {describe}:\n{pod_story(pod, events)}"
        ) from None


def wait_phase(
    kube: Kube, namespace: str, name: str, want: str, timeout: float = TIMEOUTS.pod_running
) -> Obj:
    return _wait_pod(
        kube, namespace, name, lambda p: phase(p) == want, timeout, f"pod {namespace}/{name} {want}"
    )


def wait_unschedulable(kube: Kube, namespace: str, name: str, timeout: float = TIMEOUTS.pod_scheduled) -> Obj:
    """Wait until the scheduler has tried and reported the pod Unschedulable."""

    def unschedulable(p: Obj) -> bool:
        c = condition(p, "PodScheduled")
        return c is not None and c["status"] == "False" and c.get("reason") == "Unschedulable"

    return _wait_pod(kube, namespace, name, unschedulable, timeout, f"pod {namespace}/{name} Unschedulable")


# The reasons end at the first ". "; what follows differs by minor (1.36 adds e.g.
# "still not schedulable, preemption: ..." from the DRA PostFilter).
_FIT_ERROR = re.compile(r"^0/(\d+) nodes are available: (.*?)\.(?:\s.*)?$")


def unschedulable_reasons(message: str) -> dict[str, int]:
    """The scheduler's FitError text as {reason: node count}.

    "0/3 nodes are available: 1 cannot allocate all claims, 2 node(s) didn't match Pod's node
    affinity/selector. preemption: ..." -> {"cannot allocate all claims": 1, "node(s) didn't
    match Pod's node affinity/selector": 2}. Tests assert the reason for their own nodes, so
    other tests' nodes in the cluster do not make them flaky.
    """
    m = _FIT_ERROR.match(message)
    if not m:
        raise ValueError(f"not a scheduler FitError message: {message!r}")
    reasons: dict[str, int] = {}
    for part in m[2].split(", "):
        count, _, reason = part.partition(" ")
        reasons[reason] = reasons.get(reason, 0) + int(count)
    return reasons


# Verdicts on nodes that are not the pod's: other tests add, cordon, taint and remove such
# nodes while a pod waits, so their counts in the scheduler's message change (parallel tests
# on one cluster). The node-level filters (node selector, taints, cordon, ports, ...) word
# their reasons "node(s) ..."; a pod pinned to its own nodes fails there on its resources.
_OTHER_NODES = "node(s) "


def own_reasons(message: str) -> dict[str, int]:
    """unschedulable_reasons without the node-level filters' counts (nodes the pod, pinned to
    its own nodes, cannot use anyway)."""
    return {k: v for k, v in unschedulable_reasons(message).items() if not k.startswith(_OTHER_NODES)}


def verdict(scheduled: Obj | None) -> Obj | None:
    """A PodScheduled condition as what it says about the pod's own nodes: every field, with a
    FitError message as its own_reasons."""
    if scheduled is None:
        return None
    try:
        return {**scheduled, "message": own_reasons(str(scheduled.get("message", "")))}
    except ValueError:  # not a FitError (e.g. a SchedulerError): nothing counts other nodes
        return scheduled


def scheduling_message(pod: Obj) -> str:
    c = condition(pod, "PodScheduled")
    return str(c.get("message", "")) if c else ""


def create_claim_pod(
    kube: Kube,
    namespace: str,
    name: str,
    requests: Sequence[Obj],
    node_selector: Mapping[str, str],
    constraints: Sequence[Obj] = (),
) -> None:
    """ResourceClaimTemplate `name` with `requests`, and pod `name` using it as claim "gpu"."""
    kube.create(b.claim_template(name, namespace, requests, constraints))
    kube.create(b.template_pod(name, namespace, name, node_selector=node_selector))
