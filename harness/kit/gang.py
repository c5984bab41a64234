"""Gang scheduling objects (KEP-4671 Workload API) for every minor that has them, behind one
builder, so a gang test reads the same on 1.35, 1.36, 1.37 and 1.38.

    api = gang_api(cell.minor)
    for obj in gang_objects(api, "train", namespace, min_count=4):
        kube.create(obj)
    kube.create(join_gang(b.pod("train-0", namespace, ...), api, "train"))

What each minor serves (checked against k8s.io/api and the scheduler at the pinned releases):

- 1.35: scheduling.k8s.io/v1alpha1; one Workload (spec.podGroups[].policy.gang); pods join
  with spec.workloadRef{name, podGroup}; no PodGroup kind, so no group status.
- 1.36: scheduling.k8s.io/v1alpha2; Workload (spec.podGroupTemplates) + PodGroup
  (spec.podGroupTemplateRef.workload); pods join with spec.schedulingGroup{podGroupName};
  the scheduler writes the PodGroup condition PodGroupScheduled.
- 1.37: scheduling.k8s.io/v1beta1; Workload + PodGroup (spec.workloadRef{workloadName,
  templateName}); spec.schedulingGroup; condition PodGroupInitiallyScheduled.

- 1.38: as 1.37 (k8s.io/api scheduling/v1beta1/types.go @ v0.38.0-beta.0 line 759
  PodGroupInitiallyScheduled; the scheduler patches PodGroup status through SchedulingV1beta1,
  pkg/scheduler/util/utils.go line 192 @ v1.38.0-beta.0).

1.37 also has v1alpha3 (Workload, PodGroup, CompositePodGroup), but its scheduler watches
PodGroups through v1beta1 only (v1alpha3 only for CompositePodGroup), so v1beta1 is the one
a gang test must use there.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from harness.core.errors import HarnessError
from harness.kit.kube import Obj

GROUP = "scheduling.k8s.io"
POD_GROUP_TEMPLATE = "workers"


@dataclass(frozen=True)
class GangApi:
    minor: str
    version: str  # e.g. "v1beta1"
    has_pod_group: bool  # a PodGroup object of its own (1.36+); 1.35 keeps groups in the Workload
    scheduled_condition: str | None  # the PodGroup condition the scheduler writes, if any

    @property
    def api_version(self) -> str:
        return f"{GROUP}/{self.version}"


_APIS: dict[str, GangApi] = {
    "1.35": GangApi("1.35", "v1alpha1", has_pod_group=False, scheduled_condition=None),
    "1.36": GangApi("1.36", "v1alpha2", has_pod_group=True, scheduled_condition="PodGroupScheduled"),
    "1.37": GangApi("1.37", "v1beta1", has_pod_group=True, scheduled_condition="PodGroupInitiallyScheduled"),
    "1.38": GangApi("1.38", "v1beta1", has_pod_group=True, scheduled_condition="PodGroupInitiallyScheduled"),
}


def gang_api(minor: str) -> GangApi:
    """The gang API of a Kubernetes minor ("1.36"); HarnessError if it has none."""
    try:
        return _APIS[minor]
    except KeyError:
        raise HarnessError(
            f"Kubernetes {minor} has no gang scheduling API (Workload API: 1.35+); "
            f"known: {', '.join(sorted(_APIS))}"
        ) from None


def _policy(min_count: int) -> Obj:
    if min_count < 1:
        raise HarnessError(f"gang minCount must be >= 1, got {min_count}")
    return {"gang": {"minCount": min_count}}


def gang_objects(api: GangApi, name: str, namespace: str, *, min_count: int) -> list[Obj]:
    """The objects to create, in order, for one gang `name` of at least `min_count` pods:
    a Workload with one pod group template, plus (1.36+) the PodGroup made from it, which
    has the same name as the Workload."""
    meta = {"name": name, "namespace": namespace}
    if api.version == "v1alpha1":
        workload_spec: Obj = {"podGroups": [{"name": POD_GROUP_TEMPLATE, "policy": _policy(min_count)}]}
        return [{"apiVersion": api.api_version, "kind": "Workload", "metadata": meta, "spec": workload_spec}]
    template = {"name": POD_GROUP_TEMPLATE, "schedulingPolicy": _policy(min_count)}
    workload = {
        "apiVersion": api.api_version,
        "kind": "Workload",
        "metadata": dict(meta),
        "spec": {"podGroupTemplates": [template]},
    }
    if api.version == "v1alpha2":
        ref: Obj = {
            "podGroupTemplateRef": {
                "workload": {"workloadName": name, "podGroupTemplateName": POD_GROUP_TEMPLATE}
            }
        }
    else:
        ref = {"workloadRef": {"workloadName": name, "templateName": POD_GROUP_TEMPLATE}}
    pod_group = {
        "apiVersion": api.api_version,
        "kind": "PodGroup",
        "metadata": dict(meta),
        "spec": {**ref, "schedulingPolicy": _policy(min_count)},
    }
    return [workload, pod_group]


def join_gang(pod: Obj, api: GangApi, name: str) -> Obj:
    """A copy of `pod` that is a member of gang `name`."""
    out = copy.deepcopy(pod)
    if api.version == "v1alpha1":
        out["spec"]["workloadRef"] = {"name": name, "podGroup": POD_GROUP_TEMPLATE}
    else:
        out["spec"]["schedulingGroup"] = {"podGroupName": name}
    return out


def pod_group_kind(api: GangApi) -> tuple[str, str]:
    """(apiVersion, kind) of the object that carries the gang's status."""
    if not api.has_pod_group:
        raise HarnessError(f"Kubernetes {api.minor} has no PodGroup kind ({api.api_version})")
    return api.api_version, "PodGroup"
