"""What the scan read of a cluster, with get and list only: the one input of every check
(harness.scan.checks and harness.scan.cluster read it; neither owns it, so neither imports
the other for its type)."""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.kit.checks.migration import Workload
from harness.kit.kube import Obj


@dataclass(frozen=True)
class ClusterState:
    version: tuple[int, int]
    git_version: str
    gates: dict[str, bool]
    nodes: list[Obj]
    pods: list[Obj]
    daemonsets: list[Obj]
    classes: list[Obj]
    slices: list[Obj]
    claims: list[Obj]
    templates: list[Obj]
    quotas: list[Obj]
    taint_rules: list[Obj] = field(default_factory=list)  # DeviceTaintRules, where served
    workloads: list[Workload] = field(default_factory=list)  # controllers' pod templates
    # apiserver_requested_deprecated_apis' labels (harness.scan.shapes.deprecated_requests)
    deprecated_requests: list[dict[str, str]] = field(default_factory=list)
    unread: list[str] = field(default_factory=list)  # "list on jobs (batch)": what the user may not read
