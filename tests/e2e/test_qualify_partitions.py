"""`dra-harness qualify`'s partitions capability against two stand-in drivers on one local cluster
(harness/qualify/standin.py): gpu.acme.example publishes NVIDIA DynamicMIG on a 2-GPU node
(counter sets, the full GPU and its MIG devices); gpu.plain.example publishes two products, H100
and A100, no partitions, and is qualified with a class narrowed to the H100s (the issue's case:
the A100s used to count as "partitions" and made the capability PASS)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.core.versions import REPO_ROOT
from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.kube import Kube
from harness.qualify.standin import StandinPoolSpec, install
from tests.e2e.standin_cluster import standin_cluster

MIG = "gpu.acme.example"
PLAIN = "gpu.plain.example"
NARROWED = "h100.gpu.plain.example"
PARTITIONS = "suites/driver/test_partitions.py"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    fleet = (StandinPoolSpec("mig", 1, 2, "dynamic"),)
    with standin_cluster(tmp_path_factory.mktemp("partitions-cluster"), fleet, MIG) as kubeconfig:
        kube = Kube.from_kubeconfig(kubeconfig)
        try:
            products = (
                StandinPoolSpec("h100", 1, 2),
                StandinPoolSpec("a100", 1, 2, profile="a100-80gb-pcie"),
            )
            install(kube, products, PLAIN)
            # One class maps nvidia.com/gpu (acme's): qualify refuses a name two classes map.
            kube.patch(*kinds.DEVICE_CLASS, PLAIN, {"spec": {"extendedResourceName": None}})
            product = f'device.attributes["{PLAIN}"].productName == "NVIDIA H100 80GB HBM3"'
            kube.create(b.device_class(NARROWED, selectors=[f'device.driver == "{PLAIN}"', product]))
        finally:
            kube.close()
        yield kubeconfig


def _qualify(kubeconfig: Path, out: Path, driver: str, device_class: str) -> tuple[int, dict[str, Any], str]:
    argv = [
        sys.executable,
        "-m",
        "harness.cli.main",
        "qualify",
        f"--kubeconfig={kubeconfig}",
        f"--out={out}",
        f"--driver-name={driver}",
        f"--device-class={device_class}",
        f"--suite={PARTITIONS}",
        "--suite=suites/driver/test_published_devices.py",
    ]
    done = subprocess.run(argv, cwd=REPO_ROOT, capture_output=True, text=True, timeout=900, check=False)
    assert (out / "qualify.json").is_file(), done.stdout[-3000:] + done.stderr[-3000:]
    [cap] = [
        c for c in json.loads((out / "qualify.json").read_text())["capabilities"] if c["id"] == "partitions"
    ]
    return done.returncode, cap, done.stdout + done.stderr


def test_a_driver_with_dynamic_mig_passes_with_exclusion_and_counter_evidence(
    cluster: Path, tmp_path: Path
) -> None:
    code, cap, output = _qualify(cluster, tmp_path / "out", MIG, MIG)

    assert (cap["verdict"], cap["counts"]["failed"], cap["counts"]["errors"]) == ("PASS", 0, 0), output[
        -4000:
    ]
    passed = sorted(e.split(":", 2)[1].strip() for e in cap["evidence"] if e.startswith("passed: "))
    assert passed == [
        "test_a_partition_device_is_allocated_on_its_node",
        "test_a_partition_waits_while_its_parent_is_allocated[installed]",
        "test_partitions_fill_their_counter_set_and_the_next_claim_waits[installed]",
        "test_the_parent_waits_while_a_partition_is_allocated[installed]",
    ], cap["evidence"]
    evidence = "\n".join(cap["evidence"])
    assert "a partition claim waited while gpu-0 was allocated" in evidence
    assert "filled gpu-0-counter-set; the next partition claim and a claim for any of its" in evidence
    assert "cannot allocate all claims" in evidence
    assert code == 0, output[-4000:]


def test_two_products_without_partitions_are_not_supported(cluster: Path, tmp_path: Path) -> None:
    _, cap, output = _qualify(cluster, tmp_path / "out", PLAIN, NARROWED)

    assert (cap["verdict"], cap["counts"]["passed"]) == ("NOT SUPPORTED", 0), output[-4000:]
    assert any(
        "test_a_partition_device_is_allocated_on_its_node: needs partitions (devices consuming shared "
        "counters, or MIG devices with a parentUUID)" in e
        for e in cap["evidence"]
    ), cap["evidence"]
