"""Before a qualification run creates anything: is the cluster one the suites can qualify a
driver on? One line per missing piece; any line means exit 1 with nothing created.

Checked, read-only: the server's version (>= 1.34, the first minor serving resource.k8s.io/v1),
the API versions served (discovery), the feature gates the API server reports on /metrics
(`kubernetes_feature_enabled`; not visible to every user, which is noted, not fatal), the
DeviceClass and the driver's ResourceSlices, that no extended resource name is mapped by two
DeviceClasses (the bridged pods would be stranded), and whether the kubeconfig's user may do what the
suites do (SelfSubjectAccessReview, which every authenticated user may create).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from fake_driver.api.ownership import OWNER_LABEL, OWNER_VALUE
from harness.kit import kinds
from harness.kit.checks.detectors import detect_ambiguous_mappings, mapping_claimants
from harness.kit.kube import API_ERRORS, Kube, Obj
from harness.qualify.rbac import NEEDED_ACCESS

MIN_VERSION = (1, 34)
NEEDED_APIS = ("resource.k8s.io/v1",)
_FEATURE = re.compile(
    r'^kubernetes_feature_enabled\{name="(?P<name>[^"]+)",stage="[^"]*"\} (?P<on>[01])', re.M
)


@dataclass
class ClusterFacts:
    git_version: str = ""
    minor: str = ""
    apis: list[str] = field(default_factory=list)
    gates: dict[str, bool] = field(default_factory=dict)
    gates_note: str = ""  # why gates are not listed, when they are not
    slices: int = 0
    nodes_with_slices: int = 0
    # The driver's slices carry the harness's owner label: it is the stand-in (the fake driver
    # under the driver's name), whatever the name says.
    standin: bool = False

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def version_problem(major: int, minor: int) -> str:
    """'' when the suites can run on this version, else the line that says why not."""
    if (major, minor) >= MIN_VERSION:
        return ""
    need = ".".join(map(str, MIN_VERSION))
    return f"the cluster runs Kubernetes {major}.{minor}; qualification needs >= {need}"


def served_apis(kube: Kube) -> list[str]:
    status, body = kube.raw_get("/apis")
    if status != 200:
        return []
    return sorted(
        v["groupVersion"] for g in json.loads(body).get("groups", []) for v in g.get("versions", [])
    )


def visible_gates(kube: Kube) -> tuple[dict[str, bool], str]:
    status, body = kube.raw_get("/metrics")
    if status != 200:
        return {}, f"feature gates not visible: GET /metrics answered {status}"
    gates = {m["name"]: m["on"] == "1" for m in _FEATURE.finditer(body)}
    return gates, "" if gates else "feature gates not visible: no kubernetes_feature_enabled metric"


def allowed(kube: Kube, verb: str, group: str, resource: str) -> bool:
    review: Obj = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {
            "resourceAttributes": {
                "verb": verb,
                "group": group,
                "resource": resource.partition("/")[0],
                "subresource": resource.partition("/")[2],
            }
        },
    }
    status, body = kube.raw_post("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", review)
    return status == 201 and bool(json.loads(body).get("status", {}).get("allowed"))


def ambiguous_mappings(kube: Kube, classes: list[Obj], version: tuple[int, int]) -> list[str]:
    """One line per extended resource name several DeviceClasses map: the bridging suites'
    pods would get the scheduler's pick of classes, or none (harness.kit.checks.detectors)."""
    if not any(len(names) > 1 for names in mapping_claimants(classes).values()):
        return []  # the pods are listed only when there is something to name
    pods = kube.list(*kinds.POD)
    return [f"{f.subject}: {f.message}" for f in detect_ambiguous_mappings(classes, pods, version)]


def _driver_pieces(
    kube: Kube, facts: ClusterFacts, driver: str, device_class: str, version: tuple[int, int]
) -> list[str]:
    class_objects = kube.list(*kinds.DEVICE_CLASS)
    missing = ambiguous_mappings(kube, class_objects, version)
    classes = [dc["metadata"]["name"] for dc in class_objects]
    if device_class not in classes:
        missing.append(f"DeviceClass {device_class} does not exist (classes: {', '.join(classes) or 'none'})")
    slices = [s for s in kube.list(*kinds.RESOURCE_SLICE) if s["spec"]["driver"] == driver]
    facts.slices = len(slices)
    facts.nodes_with_slices = len({s["spec"].get("nodeName") for s in slices if s["spec"].get("nodeName")})
    facts.standin = any(s["metadata"].get("labels", {}).get(OWNER_LABEL) == OWNER_VALUE for s in slices)
    if not slices:
        missing.append(f"driver {driver} publishes no ResourceSlices")
    return missing


def preflight(kube: Kube, driver: str, device_class: str) -> tuple[ClusterFacts, list[str]]:
    """(facts, missing pieces); raises HarnessError (one line) if the server cannot be asked."""
    facts = ClusterFacts()
    try:
        major, minor = kube.server_version()
        facts.git_version, facts.minor = kube.git_version(), f"{major}.{minor}"
        too_old = version_problem(major, minor)
        if too_old:
            return facts, [too_old]
        facts.apis = served_apis(kube)
        missing = [f"{api} is not served" for api in NEEDED_APIS if api not in facts.apis]
        if missing:
            return facts, missing
        denied = [f"{v} {r}{'.' + g if g else ''}" for v, g, r in NEEDED_ACCESS if not allowed(kube, v, g, r)]
        if denied:
            return facts, [f"the kubeconfig's user may not {', '.join(denied)} (the suites need to)"]
        facts.gates, facts.gates_note = visible_gates(kube)
        return facts, _driver_pieces(kube, facts, driver, device_class, (major, minor))
    except API_ERRORS as err:
        raise kube.failure(err) from None
