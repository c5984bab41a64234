"""kwok configuration: the node and pod lifecycle stages the simulated nodes follow.

The stages are kwok's own "fast" node/pod stages and its node-heartbeat-with-lease stage,
read from the pinned kwok module source (not copied into this repo), plus two stages of
ours: a pod annotated `dra-harness.io/outcome: Succeeded|Failed` runs to completion, so
tests can end a pod's life without a Job.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from harness.clusters.nodes import KWOK_ANNOTATION, KWOK_VALUE
from harness.controlplane.build import module_dir
from harness.core.versions import Matrix

OUTCOME_ANNOTATION = "dra-harness.io/outcome"

_UPSTREAM_STAGES = (
    "kustomize/stage/node/fast/node-initialize.yaml",
    "kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
    "kustomize/stage/pod/fast/pod-ready.yaml",
    "kustomize/stage/pod/fast/pod-complete.yaml",
    "kustomize/stage/pod/fast/pod-delete.yaml",
)


def _outcome_stage(pod_complete: dict[str, Any], phase: str, exit_code: int) -> dict[str, Any]:
    """kwok's pod-complete stage, selected by our annotation instead of a Job owner."""
    stage = copy.deepcopy(pod_complete)
    stage["metadata"]["name"] = f"pod-outcome-{phase.lower()}"
    expressions = [
        e for e in stage["spec"]["selector"]["matchExpressions"] if "ownerReferences" not in e["key"]
    ]
    expressions.append(
        {"key": f'.metadata.annotations["{OUTCOME_ANNOTATION}"]', "operator": "In", "values": [phase]}
    )
    stage["spec"]["selector"]["matchExpressions"] = expressions
    template: str = stage["spec"]["next"]["statusTemplate"]
    template = template.replace("phase: Succeeded", f"phase: {phase}")
    if exit_code:
        template = template.replace("exitCode: 0", f"exitCode: {exit_code}").replace(
            "reason: Completed", "reason: Error"
        )
    stage["spec"]["next"]["statusTemplate"] = template
    return stage


def kwok_stages(matrix: Matrix, *, pods: bool = True) -> list[dict[str, Any]]:
    """Node stages always; pod stages unless `pods` is False (bound pods then stay Pending,
    as in upstream scheduler_perf, which runs no kubelets)."""
    source = module_dir(matrix.kwok_module, matrix.kwok_version)
    stages = [yaml.safe_load((source / rel).read_text()) for rel in _UPSTREAM_STAGES]
    if not pods:
        return [s for s in stages if s["spec"]["resourceRef"]["kind"] == "Node"]
    pod_complete = next(s for s in stages if s["metadata"]["name"] == "pod-complete")
    return [*stages, _outcome_stage(pod_complete, "Succeeded", 0), _outcome_stage(pod_complete, "Failed", 1)]


def kwok_config(matrix: Matrix, path: Path, *, pods: bool = True) -> Path:
    path.write_text(yaml.safe_dump_all(kwok_stages(matrix, pods=pods), sort_keys=False))
    return path


def kwok_flags(kubeconfig: Path, config: Path, port: int) -> list[str]:
    """kwok manages only the nodes of harness.clusters.nodes (by their annotation), never a real
    kubelet's node; /healthz on 127.0.0.1:`port`."""
    return [
        f"--kubeconfig={kubeconfig}",
        f"--config={config}",
        "--manage-all-nodes=false",
        f"--manage-nodes-with-annotation-selector={KWOK_ANNOTATION}={KWOK_VALUE}",
        f"--server-address=127.0.0.1:{port}",
        "--node-lease-duration-seconds=40",
    ]
