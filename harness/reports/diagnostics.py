"""What a failed test's report should show: the namespace's pods, events and claims, the
slices of the nodes involved, and the tail of every control-plane component's log; each part
redacted, since it is attached to the reports as is."""

from __future__ import annotations

from typing import Any

import yaml

from harness.clusters.host.processes import log_tail
from harness.core.redaction import redact
from harness.kit import kinds
from harness.kit.kube import Kube, Obj
from harness.kit.pods import summary

_MAX = 20_000


def _dump(objs: Any) -> str:
    text = yaml.safe_dump(objs, sort_keys=False, width=120)
    return text if len(text) <= _MAX else text[:_MAX] + "\n...(truncated)"


def _strip(obj: Obj) -> Obj:
    meta = {k: v for k, v in obj.get("metadata", {}).items() if k != "managedFields"}
    return {**obj, "metadata": meta}


def collect_diagnostics(kube: Kube, namespace: str, cluster: object | None) -> list[tuple[str, str]]:
    """[(title, text)]; every part is best-effort: a broken cluster still yields the rest."""
    out: list[tuple[str, str]] = []

    def part(title: str, make: Any) -> None:
        try:
            text = make()
        except Exception as err:  # diagnostics must never hide the real failure
            text = f"<unavailable: {type(err).__name__}: {err}>"
        out.append((title, redact(text)))

    pods: list[Obj] = []

    def pods_text() -> str:
        pods.extend(kube.list(*kinds.POD, namespace))
        return _dump([summary(p) for p in pods])

    part("pods", pods_text)
    part(
        "events",
        lambda: "\n".join(
            f"{e.get('lastTimestamp') or e.get('eventTime')} {e['involvedObject']['kind']}/"
            f"{e['involvedObject']['name']} {e['reason']}: {e.get('message', '')}"
            for e in kube.events(namespace)
        ),
    )
    part(
        "resourceclaims",
        lambda: _dump([_strip(c) for c in kube.list(*kinds.RESOURCE_CLAIM, namespace)]),
    )

    def slices_text() -> str:
        nodes = {p["spec"].get("nodeName") for p in pods} - {None}
        ours = [s for s in kube.list(*kinds.RESOURCE_SLICE) if s["spec"].get("nodeName") in nodes]
        return _dump([_strip(s) for s in ours])

    part("resourceslices of the pods' nodes", slices_text)
    log_path = getattr(cluster, "log_path", None)
    components = getattr(cluster, "components", {})
    if callable(log_path):
        for name in components:
            part(f"log tail: {name}", lambda name=name: log_tail(log_path(name)))
    return out
