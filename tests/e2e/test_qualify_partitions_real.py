"""The partitions capability against the upstream dra-example-driver's kubelet plugin started with
--gpu-partitions=2 (versions.toml [drivers.example.settings] partitions) on a real node: per GPU
a counter set, two partitions and a full device drawing on it (gpu.go EnumerateDevices @
v0.4.0). Qualify must PASS it on every check, the container's (its env names the partition) too.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.clusters.realnodes.pools import RealPoolSpec
from harness.core.versions import load_matrix
from tests.support.realdriver import RealDriverCluster, real_driver_cluster, real_driver_missing

DRIVER = next((d for d in load_matrix().test_drivers if d.startswith("example@")), "example@v0.4.0")
POOL = RealPoolSpec("exp", count=1, gpus=2, driver=DRIVER, settings={"partitions": 2})
SUITES = ("suites/driver/test_partitions.py", "suites/driver/test_published_devices.py")
pytestmark = [pytest.mark.real_node]


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealDriverCluster]:
    if why := real_driver_missing(DRIVER):
        pytest.skip(why)
    with real_driver_cluster(tmp_path_factory.mktemp("example-partitions"), [POOL]) as env:
        yield env


def test_the_example_driver_with_gpu_partitions_passes_every_partitions_check(
    example: RealDriverCluster, tmp_path: Path
) -> None:
    out = tmp_path / "results"
    done = example.qualify(DRIVER, out, SUITES)

    report = json.loads((out / "qualify.json").read_text())
    [cap] = [c for c in report["capabilities"] if c["id"] == "partitions"]
    assert (cap["verdict"], cap["headline"]) == ("PASS", "PASS, 5 of 5 ran"), done.stdout[-4000:]
    evidence = "\n".join(cap["evidence"])
    assert "exp-0: gpu-0-full waited while its partition gpu-0-partition-" in evidence, evidence
    assert (
        "filled gpu-0-counters; the next partition claim and a claim for any of its 1 free devices"
        in evidence
    )
    assert "the container of partition gpu-0-partition-" in evidence, evidence
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr
