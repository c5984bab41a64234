"""Partitions against the real scheduler, on any driver that publishes them (harness.kit.partitions:
devices drawing on shared counters, or MIG devices naming a parentUUID): a parent and its
partitions are never allocated at once, either way round; partitions fill their counter set and
the next claim on it waits; a partition's container sees the partition, not its parent.
With --driver fake they run on kwok nodes the fake driver publishes as NVIDIA DynamicMIG
(k8s-dra-driver-gpu partitions.go @ v25.12.0) and as the example driver's --gpu-partitions
(dra-example-driver gpu.go EnumerateDevices @ v0.4.0); with --driver external, on its fleet.
Upstream: test/e2e/dra/dra.go "must consume and free up counters" @ v1.37.2."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from fixtures.artifacts.reporting import EVIDENCE
from fixtures.driver import DriverUnderTest
from fixtures.fake_driver import GpuPoolSpec, MakeGpuFleet
from fixtures.requirements import fleet_lacks, provider_unmet, skip
from harness.clusters.nodes import KWOK_ANNOTATION
from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.drastate import allocation
from harness.kit.fleet_inventory import NodeFamilies, partitioned
from harness.kit.kube import Kube, Obj
from harness.kit.nodepods import REAL_KUBELET_GRACE_SECONDS, container_output, view_container
from harness.kit.objects import Created
from harness.kit.partitions import Family, fits, over, overcommits, used_by
from harness.kit.pods import (
    assert_stays_pending,
    condition,
    create_claim_pod,
    scheduling_message,
    unschedulable_reasons,
    wait_phase,
)
from harness.kit.waits import TIMEOUTS, wait_for
from suites.driver.published import WHAT, exact_selector

RecordProperty = Callable[[str, object], None]
REASON = "cannot allocate all claims"  # the DRA plugin's Filter (dynamicresources.go @ v1.37.2)

# The fake driver's partitionable fleets: (driver name, one pool of one GPU).
FAKE_FLEETS = {
    "nvidia-dynamic-mig": ("gpu.nvidia.com", GpuPoolSpec(gpus=1, mig="dynamic", personality="nvidia-v25.12")),
    "example-gpu-partitions": (
        "gpu.example.com",
        GpuPoolSpec(profile="l4", gpus=1, partitions=2, personality="example-v0.4"),
    ),
}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "fleet" not in metafunc.fixturenames:
        return
    if metafunc.config.getoption("--driver") == "external":
        metafunc.parametrize("fleet", ["installed"], indirect=True)
        return
    gate = pytest.mark.feature_gate("DRAPartitionableDevices")
    metafunc.parametrize("fleet", [pytest.param(k, marks=gate) for k in FAKE_FLEETS], indirect=True)


@dataclass(frozen=True)
class Fleet:
    driver: str
    nodes: tuple[NodeFamilies, ...]
    fake: bool = False  # the harness's own fleet: lacking a family is its bug, not a skip


@pytest.fixture
def fleet(request: pytest.FixtureRequest, kube: Kube, driver: DriverUnderTest) -> Fleet:
    """The nodes with partitions of the driver under test (fake: a fresh one-GPU pool)."""
    if request.param == "installed":
        selector = dict(driver.node_selector)
        found = [
            n
            for n in partitioned(kube, driver.driver)
            if "kubernetes.io/hostname" in n.labels and all(n.labels.get(k) == v for k, v in selector.items())
        ]
        if not found:
            skip(fleet_lacks(driver.device_class, WHAT, f"none on any node of {driver.driver}"))
        return Fleet(driver.driver, tuple(found))
    name, spec = FAKE_FLEETS[request.param]
    gpu_fleet: MakeGpuFleet = request.getfixturevalue("gpu_fleet")
    made = gpu_fleet(spec, classes=False)
    mine = [n for n in partitioned(kube, name) if n.node in made.node_names]
    assert [n.node for n in mine] == made.node_names, f"the fake driver's {request.param} has no {WHAT}"
    return Fleet(name, tuple(mine), fake=True)


@dataclass(frozen=True)
class Chosen:
    node: NodeFamilies
    family: Family
    classes: dict[str, str]  # "parent", "partition", "any" -> a DeviceClass selecting just those

    @property
    def host(self) -> dict[str, str]:
        return {"kubernetes.io/hostname": self.node.labels["kubernetes.io/hostname"]}


def _choose(
    fleet: Fleet,
    objects: Created,
    namespace: str,
    driver: DriverUnderTest,
    need: str,
    ok: Callable[[NodeFamilies, Family], bool],
) -> Chosen:
    """The first family that passes `ok` and whose parent, partitions and both can each be
    singled out by a selector; a class for each."""
    for node in fleet.nodes:
        for family in node.families:
            if not ok(node, family):
                continue
            groups = {"partition": family.partitions, "any": family.devices}
            if family.parent is not None:
                groups["parent"] = (family.parent,)
            selectors = {k: exact_selector(node.devices, v, fleet.driver) for k, v in groups.items()}
            if all(selectors.values()):
                classes = {}
                for k, sel in selectors.items():
                    classes[k] = f"{namespace}-{k}"
                    expr = [f'device.driver == "{fleet.driver}"', str(sel)]
                    objects.create(b.device_class(classes[k], selectors=expr))
                return Chosen(node, family, classes)
    has = ", ".join(f"{n.node}: {_described(n)}" for n in fleet.nodes)
    if fleet.fake:
        pytest.fail(f"the fake driver's fleet lacks {need}: {has}", pytrace=False)
    skip(fleet_lacks(driver.device_class, need, has))


def _described(node: NodeFamilies) -> str:
    parents = [f.parent["name"] if f.parent else "not published" for f in node.families]
    return "; ".join(
        f"{f.key} ({len(f.partitions)} partitions, parent {p})"
        for f, p in zip(node.families, parents, strict=True)
    )


def _claim(kube: Kube, namespace: str, pod: str, chosen: Chosen, what: str) -> None:
    create_claim_pod(kube, namespace, pod, [b.exact_request("dev", chosen.classes[what])], chosen.host)


def _settled(kube: Kube, namespace: str, pod: str) -> Obj:
    """The pod once the scheduler decided: bound, or PodScheduled False (Unschedulable)."""
    return wait_for(
        lambda: kube.get(*kinds.POD, pod, namespace),
        lambda p: (
            bool(p["spec"].get("nodeName"))
            or (condition(p, "PodScheduled") or {}).get("reason") == "Unschedulable"
        ),
        timeout=TIMEOUTS.pod_scheduled,
        describe=f"pod {namespace}/{pod} bound or Unschedulable",
    )


def _waits(kube: Kube, namespace: str, pod: str, why: str) -> str:
    """The pod stays Pending with the scheduler's reason; its message (the evidence)."""
    settled = _settled(kube, namespace, pod)
    assert not settled["spec"].get("nodeName"), (
        f"pod {pod} was allocated {allocation(kube, namespace, pod)} while {why}"
    )
    message = scheduling_message(settled)
    assert unschedulable_reasons(message).get(REASON) == 1, f"pod {pod}: {message!r}, expected 1 x {REASON!r}"
    assert_stays_pending(kube, namespace, pod, why)
    return message


def _device_of(kube: Kube, namespace: str, pod: str, chosen: Chosen) -> str:
    [(_, pool, device)] = allocation(kube, namespace, pod)
    assert pool == chosen.node.node, f"pod {pod} got {pool}/{device}, not a device on {chosen.node.node}"
    return device


PARENT_NEED = f"{WHAT}, published together with their parent device"


def _one_excludes_the_other(
    kube: Kube, namespace: str, chosen: Chosen, first: str, second: str, record_property: RecordProperty
) -> None:
    """``first`` ("parent" or "partition") runs; ``second`` waits with the scheduler's reason, then
    runs once ``first`` is deleted: both directions of the parent/partition exclusion."""
    assert chosen.family.parent is not None
    parent = chosen.family.parent["name"]
    _claim(kube, namespace, first, chosen, first)
    wait_phase(kube, namespace, first, "Running")
    held = _device_of(kube, namespace, first, chosen)
    expected = [parent] if first == "parent" else list(chosen.family.names())
    assert held in expected, f"pod {first} got {held}, expected one of {expected}"

    _claim(kube, namespace, second, chosen, second)
    why = (
        f"{parent} (the parent of {len(chosen.family.partitions)} partitions) is allocated to pod parent"
        if first == "parent"
        else f"its partition {held} is allocated to pod partition"
    )
    message = _waits(kube, namespace, second, why)

    kube.delete(*kinds.POD, first, namespace)
    wait_phase(kube, namespace, second, "Running")
    got = _device_of(kube, namespace, second, chosen)
    expected = [parent] if second == "parent" else list(chosen.family.names())
    assert got in expected, f"pod {second} got {got}, expected one of {expected}"
    # The evidence's words are what qualify's reports (and their tests) quote.
    if first == "parent":
        said = (
            f"a partition claim waited while {held} was allocated ({message!r}), "
            f"then got {got} once it was freed"
        )
    else:
        said = (
            f"{got} waited while its partition {held} was allocated ({message!r}), "
            "then was allocated once it was freed"
        )
    record_property(EVIDENCE, f"{chosen.node.node}: {said}")


def test_a_partition_waits_while_its_parent_is_allocated(
    kube: Kube,
    namespace: str,
    driver: DriverUnderTest,
    fleet: Fleet,
    objects: Created,
    record_property: RecordProperty,
) -> None:
    chosen = _choose(fleet, objects, namespace, driver, PARENT_NEED, lambda _, f: f.parent is not None)
    _one_excludes_the_other(kube, namespace, chosen, "parent", "partition", record_property)


def test_the_parent_waits_while_a_partition_is_allocated(
    kube: Kube,
    namespace: str,
    driver: DriverUnderTest,
    fleet: Fleet,
    objects: Created,
    record_property: RecordProperty,
) -> None:
    chosen = _choose(fleet, objects, namespace, driver, PARENT_NEED, lambda _, f: f.parent is not None)
    _one_excludes_the_other(kube, namespace, chosen, "partition", "parent", record_property)


def _counted(node: NodeFamilies, family: Family) -> bool:
    """Its devices draw on counter sets, and not all of them fit at once (or a set is missing:
    the test says so)."""
    known = {s for s, _ in node.capacity}
    sets = set(family.counter_sets)
    return bool(sets) and (not sets <= known or overcommits(family, node.capacity))


def test_partitions_fill_their_counter_set_and_the_next_claim_waits(
    kube: Kube,
    namespace: str,
    driver: DriverUnderTest,
    fleet: Fleet,
    objects: Created,
    record_property: RecordProperty,
) -> None:
    need = f"{WHAT} drawing on a counter set their family needs more of than it holds"
    chosen = _choose(fleet, objects, namespace, driver, need, _counted)
    family, capacity = chosen.family, chosen.node.capacity
    missing = sorted(set(family.counter_sets) - {s for s, _ in capacity})
    assert missing == [], f"{family.names()[:3]} and others consume counter sets {chosen.node.node} lacks"
    by_name = {d["name"]: d for d in family.devices}
    held: list[str] = []
    waiting = ""
    # One partition per pod until one waits: at most every partition, then one more.
    for k in range(len(family.partitions) + 1):
        pod = f"fill-{k}"
        _claim(kube, namespace, pod, chosen, "partition")
        if k == 0:  # the set is empty: it runs (the scheduler may not know the new class yet)
            wait_phase(kube, namespace, pod, "Running")
        elif not _settled(kube, namespace, pod)["spec"].get("nodeName"):
            waiting = pod
            break
        held.append(_device_of(kube, namespace, pod, chosen))
    used = used_by(by_name[n] for n in held)
    assert over(used, capacity) == [], f"the partitions {held} over-commit {family.counter_sets}"
    assert waiting, f"all {len(held)} partitions of {family.key} were allocated; none waited"
    free = [n for n in by_name if n not in held]
    assert [n for n in free if fits(by_name[n], used, capacity)] == [], (
        f"{held} leave room on {family.counter_sets} the scheduler did not use"
    )
    assert free, f"{family.key}: every device is allocated; the counters decided nothing"
    why = f"{held} fill {', '.join(family.counter_sets)}"
    message = _waits(kube, namespace, waiting, why)
    # Any device drawing on the set (the parent too) waits: counters, not a lack of devices.
    _claim(kube, namespace, "next", chosen, "any")
    _waits(kube, namespace, "next", f"{why}; {len(free)} devices of it are free")

    kube.delete(*kinds.POD, "next", namespace)  # else it may take what fill-0 gives back
    kube.delete(*kinds.POD, "fill-0", namespace)  # gives its counters back
    wait_phase(kube, namespace, waiting, "Running")
    assert _device_of(kube, namespace, waiting, chosen) in family.names()
    record_property(
        EVIDENCE,
        f"{chosen.node.node}: {len(held)} partitions ({', '.join(held)}) filled "
        f"{', '.join(family.counter_sets)}; "
        f"the next partition claim and a claim for any of its {len(free)} free devices waited ({message!r}); "
        "freeing one let the partition claim run",
    )


def test_a_partition_claims_container_sees_the_partition_not_its_parent(
    kube: Kube,
    namespace: str,
    driver: DriverUnderTest,
    fleet: Fleet,
    objects: Created,
    record_property: RecordProperty,
) -> None:
    view = driver.container_view
    if driver.source != "external" or view is None:
        skip(
            provider_unmet(
                "a container view of an external driver: --container-command and --container-device-pattern"
            )
        )
    real = [n for n in fleet.nodes if KWOK_ANNOTATION not in _annotations(kube, n.node)]
    if not real:
        skip(provider_unmet("nodes with real kubelets (kwok runs no containers)"))
    chosen = _choose(
        Fleet(fleet.driver, tuple(real), fleet.fake), objects, namespace, driver, WHAT, lambda _, f: True
    )
    if not all(view.can_name(n) for n in chosen.family.names()):
        # NVIDIA's view names /dev/nvidia<N>, which a MIG container gets for its parent
        # (cdi.go GetDevNodesForMigDevice); tests/e2e/test_nvidia_real_driver.py checks its caps nodes.
        skip(
            provider_unmet(
                f"a container view that can name a partition ({chosen.family.names()[0]}); "
                f"--container-device-pattern {view.pattern!r} cannot"
            )
        )
    kube.create(b.claim_template("one", namespace, [b.exact_request("dev", chosen.classes["partition"])]))
    pod = b.pod(
        "p",
        namespace,
        containers=[view_container("claims", driver.container_image, view.command, claims=["gpu"])],
        claim_templates={"gpu": "one"},
        node_selector=chosen.host,
        grace_seconds=REAL_KUBELET_GRACE_SECONDS,
    )
    pod["spec"]["automountServiceAccountToken"] = False
    kube.create(pod)
    wait_phase(kube, namespace, "p", "Running")

    got = _device_of(kube, namespace, "p", chosen)
    seen = view.devices(container_output(kube, namespace, "p", "claims"))
    parent = chosen.family.parent["name"] if chosen.family.parent else None
    assert seen == [got], f"the container of a claim for partition {got} shows {seen} (parent: {parent})"
    record_property(EVIDENCE, f"on {chosen.node.node}, the container of partition {got} shows {seen}")


def _annotations(kube: Kube, node: str) -> dict[str, str]:
    return dict(kube.get(*kinds.NODE, node)["metadata"].get("annotations") or {})
