"""The kubelet plugin's device status (fake_driver/kubeletplugin/devicestatus.py): the entries it
builds, how it merges them into a claim's status, and when the plugin writes them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from fake_driver.core.errors import FakeDriverError, FleetError
from fake_driver.fleetspec.fleet import parse_fleet
from fake_driver.kubeletplugin import devicestatus
from fake_driver.kubeletplugin.checkpoint import PreparedDevice
from fake_driver.kubeletplugin.plugin import ClaimRef, KubeletPlugin, StaticClaimSource
from tests.fake_driver.kubeletplugin.grpc_support import DRIVER, NODE, claim, make_plugin

STATUS_FLEET = """
pools:
  - {name: h100, count: 1, profile: h100-80gb-hbm3, gpus: 2, personality: nvidia-v25.12, device_status: true}
"""


class Recorder:
    def __init__(self, fail: str = "") -> None:
        self.calls: list[tuple[str, str, tuple[str, ...]]] = []
        self.fail = fail

    def write(
        self, driver: str, claim: Any, devices: Sequence[PreparedDevice], visible: Mapping[str, str]
    ) -> None:
        if self.fail:
            raise FakeDriverError(self.fail)
        self.calls.append((driver, claim["metadata"]["name"], tuple(d.device for d in devices)))


def _plugin(tmp_path: Path, claims: StaticClaimSource, status: Recorder | None) -> KubeletPlugin:
    return make_plugin(parse_fleet(STATUS_FLEET, "fleet"), tmp_path, claims, status=status)


def test_an_entry_names_the_device_and_says_it_is_ready_with_what_the_container_sees() -> None:
    prepared = PreparedDevice(("gpu",), NODE, "gpu-1", ("k8s.gpu.nvidia.com/claim=u1-gpu-1",), "s-1")
    body = claim("u1", "c", ("gpu", "gpu-1")) | {"metadata": {"name": "c", "generation": 2}}

    [entry] = devicestatus.entries(DRIVER, body, [prepared], {"gpu-1": "GPU-abc"})

    ready = entry["conditions"][0]
    assert {k: v for k, v in ready.items() if k != "lastTransitionTime"} == {
        "type": "Ready",
        "status": "True",
        "reason": "Prepared",
        "message": "CDI devices k8s.gpu.nvidia.com/claim=u1-gpu-1 written",
        "observedGeneration": 2,
    }
    assert {k: v for k, v in entry.items() if k != "conditions"} == {
        "driver": DRIVER,
        "pool": NODE,
        "device": "gpu-1",
        "shareID": "s-1",
        "data": {"visibleDevice": "GPU-abc", "cdiDeviceIDs": ["k8s.gpu.nvidia.com/claim=u1-gpu-1"]},
    }


def test_merging_replaces_the_drivers_own_entries_and_keeps_the_others() -> None:
    other = {"driver": "nic.example.com", "pool": NODE, "device": "eth0", "data": {"x": 1}}
    old = {"driver": DRIVER, "pool": NODE, "device": "gpu-0", "data": {"old": True}}
    new = {"driver": DRIVER, "pool": NODE, "device": "gpu-0", "data": {"new": True}}

    assert devicestatus.merged([other, old], [new]) == [other, new]


def test_the_plugin_writes_status_once_per_claim_it_prepares(tmp_path: Path) -> None:
    recorder = Recorder()
    plugin = _plugin(tmp_path, StaticClaimSource([claim("u1", "c", ("gpu", "gpu-0"))]), recorder)

    first = plugin.prepare([ClaimRef("ns", "u1", "c")])
    again = plugin.prepare([ClaimRef("ns", "u1", "c")])

    assert (first["u1"].error, again["u1"].error) == ("", "")
    assert recorder.calls == [(DRIVER, "c", ("gpu-0",))]


def test_a_failed_status_write_fails_the_prepare_so_the_kubelet_retries(tmp_path: Path) -> None:
    plugin = _plugin(tmp_path, StaticClaimSource([claim("u1", "c", ("gpu", "gpu-0"))]), Recorder("409 x3"))

    result = plugin.prepare([ClaimRef("ns", "u1", "c")])

    assert result["u1"].error == "409 x3"
    assert "u1" not in plugin.prepared


def test_a_pool_that_writes_status_needs_a_writer(tmp_path: Path) -> None:
    with pytest.raises(FakeDriverError, match=r"^pool h100: device_status needs the API server"):
        _plugin(tmp_path, StaticClaimSource(), None)


def test_device_status_must_be_a_boolean() -> None:
    with pytest.raises(FleetError, match="device_status must be true or false, got 'sometimes'"):
        parse_fleet(STATUS_FLEET.replace("device_status: true", "device_status: sometimes"), "fleet")
