"""The workloads the scan reads besides pods: every controller whose pod template may ask for a
GPU name, so a CronJob between runs or a Deployment scaled to zero is judged before its next
pod stays Pending. Read-only, with the list verbs the scan's ClusterRole grants
(harness.scan.read.SCAN_RBAC_RULES)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from harness.kit.checks.migration import Workload
from harness.kit.kube import Obj


@dataclass(frozen=True)
class WorkloadKind:
    api: str
    kind: str
    resource: str  # the RBAC resource name
    template: Callable[[Obj], Obj]  # the pod template of one object


def _spec_template(obj: Obj) -> Obj:
    return dict((obj.get("spec") or {}).get("template") or {})


def _cronjob_template(obj: Obj) -> Obj:
    job = ((obj.get("spec") or {}).get("jobTemplate") or {}).get("spec") or {}
    return dict(job.get("template") or {})


WORKLOAD_KINDS = (
    WorkloadKind("apps/v1", "Deployment", "deployments", _spec_template),
    WorkloadKind("apps/v1", "StatefulSet", "statefulsets", _spec_template),
    WorkloadKind("apps/v1", "DaemonSet", "daemonsets", _spec_template),
    WorkloadKind("batch/v1", "Job", "jobs", _spec_template),
    WorkloadKind("batch/v1", "CronJob", "cronjobs", _cronjob_template),
)


def workloads_of(kind: WorkloadKind, objects: list[Obj]) -> list[Workload]:
    """One Workload per object of `kind` (its owner's pods are judged as pods too)."""
    return [
        Workload(
            kind.kind.lower(),
            str(o["metadata"].get("namespace", "")),
            str(o["metadata"]["name"]),
            kind.template(o),
        )
        for o in objects
    ]
