"""The legacy device-plugin simulation, the installer's guard against it, and the ledger
catching the real scheduler promising the same GPU twice."""

from __future__ import annotations

import pytest

from fake_driver.core.errors import InstallRefusedError
from fake_driver.facts.personalities import get_personality
from fake_driver.publishing import installer, legacy
from fake_driver.rendering.ledger import Ledger, Usage
from fixtures.fake_driver import GpuPoolSpec, MakeGpuFleet
from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.drastate import allocated_devices, claims_of
from harness.kit.kube import Kube
from harness.kit.objects import Created
from harness.kit.pods import wait_phase
from harness.kit.waits import TIMEOUTS, wait_for

pytestmark = [pytest.mark.fake_driver_only("own slices, faults and installer")]

GPU = "nvidia.com/gpu"
NVIDIA_CLASSES = [
    "gpu.nvidia.com",
    "mig.nvidia.com",
    "vfio.gpu.nvidia.com",
    "compute-domain-daemon.nvidia.com",
    "compute-domain-default-channel.nvidia.com",
]


def _gpu_status(kube: Kube, node: str) -> tuple[str | None, str | None]:
    status = kube.get(*kinds.NODE, node)["status"]
    return status["capacity"].get(GPU), status["allocatable"].get(GPU)


def _renew_time(kube: Kube, node: str) -> str:
    return str(kube.get(*kinds.LEASE, node, "kube-node-lease")["spec"]["renewTime"])


def test_advertised_gpus_survive_kwok_heartbeats_and_withdraw(kube: Kube, gpu_fleet: MakeGpuFleet) -> None:
    fleet = gpu_fleet(
        GpuPoolSpec(gpus=2, nodes=2, device_plugin=True, suffix="p"), classes=False, publish=False
    )
    n1, n2 = fleet.node_names
    renewed = _renew_time(kube, n1)

    assert [_gpu_status(kube, n) for n in (n1, n2)] == [("2", "2"), ("2", "2")]
    wait_for(
        lambda: _renew_time(kube, n1),
        lambda t: t != renewed,
        timeout=TIMEOUTS.node_ready,
        describe=f"kwok heartbeat (lease renewal) of {n1}",
    )
    assert _gpu_status(kube, n1) == ("2", "2")
    assert legacy.advertising_nodes(kube.api_client, [n1, n2]) == {n1: 2, n2: 2}

    legacy.withdraw(kube.api_client, [n1])
    legacy.withdraw(kube.api_client, [n2], remove=True)

    assert [_gpu_status(kube, n) for n in (n1, n2)] == [("0", "0"), (None, None)]
    assert legacy.advertising_nodes(kube.api_client, [n1, n2]) == {}


def _nvidia_classes(kube: Kube) -> dict[str, str]:
    """name -> resourceVersion of the NVIDIA classes that exist now."""
    return {
        c["metadata"]["name"]: c["metadata"]["resourceVersion"]
        for c in kube.list(*kinds.DEVICE_CLASS)
        if c["metadata"]["name"] in NVIDIA_CLASSES
    }


@pytest.mark.serial
@pytest.mark.feature_gate("DRAExtendedResource")  # asserts the stored extendedResourceName
def test_installer_refuses_gpu_mode_next_to_the_device_plugin(
    kube: Kube, gpu_fleet: MakeGpuFleet, objects: Created
) -> None:
    fleet = gpu_fleet(GpuPoolSpec(gpus=2, nodes=2, suffix="p"), classes=False, publish=False)
    _, n2 = fleet.node_names
    legacy.advertise(kube.api_client, fleet.fleet, [n2])
    p = get_personality("nvidia-v25.12")
    # The session's driver fixture may have installed these names already: leave them as found.
    before = _nvidia_classes(kube)

    def remove_installed() -> None:
        for name in set(NVIDIA_CLASSES) - set(before):
            kube.delete(*kinds.DEVICE_CLASS, name)

    objects.defer("delete the DeviceClasses the installer added", remove_installed)
    with pytest.raises(InstallRefusedError) as err:
        installer.install(kube.api_client, p, fleet=fleet.fleet)

    assert str(err.value) == (
        f"refusing to install nvidia-v25.12 in GPU mode: nodes advertise nvidia.com/gpu through the "
        f"device plugin: {n2} (2); the same GPUs would be promised twice. Chart says: "
        f"{p.device_plugin_guard}"
    )
    assert _nvidia_classes(kube) == before  # nothing created, nothing changed

    names = installer.install(kube.api_client, p, fleet=fleet.fleet, gpu_resources_enabled_override=True)

    assert names == NVIDIA_CLASSES
    gpu = kube.get(*kinds.DEVICE_CLASS, "gpu.nvidia.com")
    assert gpu["spec"]["extendedResourceName"] == GPU
    again = installer.install(kube.api_client, p, fleet=fleet.fleet, gpu_resources_enabled_override=True)
    assert again == NVIDIA_CLASSES
    assert kube.get(*kinds.DEVICE_CLASS, "gpu.nvidia.com")["metadata"]["uid"] == gpu["metadata"]["uid"]
    objects.cleanup()  # now, to see the classes it found are left as found
    assert set(_nvidia_classes(kube)) == set(before)


@pytest.mark.serial
def test_example_installer_has_no_device_plugin_guard(
    kube: Kube, gpu_fleet: MakeGpuFleet, objects: Created
) -> None:
    gpu_fleet(GpuPoolSpec(gpus=2, device_plugin=True, suffix="p"), classes=False, publish=False)
    p = get_personality("example-v0.4")
    objects.defer("uninstall example-v0.4", lambda: installer.uninstall(kube.api_client, p))
    assert installer.install(kube.api_client, p) == ["gpu.example.com"]
    assert kube.get(*kinds.DEVICE_CLASS, "gpu.example.com")["spec"]["selectors"] == [
        {"cel": {"expression": "device.driver == 'gpu.example.com'"}}
    ]


def test_ledger_catches_the_scheduler_promising_one_gpu_twice(
    kube: Kube, namespace: str, gpu_fleet: MakeGpuFleet
) -> None:
    fleet = gpu_fleet(GpuPoolSpec(gpus=2, device_plugin=True, suffix="p"))
    [node] = fleet.node_names
    kube.create(
        b.claim_template("one-gpu", namespace, [b.exact_request("gpu", fleet.device_class("gpu.nvidia.com"))])
    )
    kube.create(
        b.pod(
            "legacy",
            namespace,
            containers=[b.container(limits={GPU: "2"})],
            node_selector=fleet.node_selector,
        )
    )
    kube.create(b.template_pod("dra", namespace, "one-gpu", node_selector=fleet.node_selector))

    # The scheduler cannot know both stacks count the same two GPUs: both pods run.
    assert wait_phase(kube, namespace, "legacy", "Running")["spec"]["nodeName"] == node
    assert wait_phase(kube, namespace, "dra", "Running")["spec"]["nodeName"] == node

    [claim] = claims_of(kube, namespace, "dra")
    [result] = allocated_devices(claim)
    led = Ledger([fleet.publisher.rendered(node)], legacy={node: 2})
    dra = led.dra(result["driver"], result["pool"], result["device"])
    usages = [
        Usage(f"{namespace}/legacy", led.legacy(node, 0)),
        Usage(f"{namespace}/legacy", led.legacy(node, 1)),
        Usage(f"{namespace}/dra", dra),
    ]
    assert led.double_advertised() == {node: tuple(g.uuid for g in led.gpus(node))}
    assert [(c.node, c.gpu_uuid, c.owners) for c in Ledger.conflicts(usages)] == [
        (node, dra.gpu_uuid, (f"{namespace}/dra", f"{namespace}/legacy"))
    ]
    assert led.overcommit(node, legacy_in_use=2, dra_shares=[dra]) == 1
