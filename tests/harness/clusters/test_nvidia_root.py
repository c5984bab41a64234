"""The fake NVIDIA driver root a real node gets (harness/clusters/realnodes/nvidiaroot.py): its
NVML stand-in config comes from the fake driver's GPU profile (one source of hardware facts),
UUIDs unique per node; the stand-in refuses what it cannot serve in one line before anything
runs; the root is gone, device nodes included, once removed.
"""

from __future__ import annotations

import json
import os
import stat
import tomllib
from pathlib import Path

import pytest

from fake_driver.facts.profiles import MIB, get_profile, gpu_uuid, pci_bus_id, pcie_root
from fake_driver.fleetspec.fleet import DEFAULT_CUDA_DRIVER_VERSION, DEFAULT_DRIVER_VERSION
from harness.clusters.realnodes.nvidiaroot import (
    NVML_CONFIG,
    check_config,
    cuda_version_number,
    describe_root,
    make_driver_root,
    nvml_config,
    remove_driver_root,
)
from harness.controlplane.driverparts import not_built_line
from harness.controlplane.nvidiaparts import RootParts, root_parts_built
from harness.core.drivers import load_drivers, parse_drivers
from harness.core.errors import HarnessError
from harness.core.versions import REPO_ROOT, VersionsError

SPEC = load_drivers()["nvidia"]


@pytest.fixture(scope="module")
def parts() -> RootParts:
    built = root_parts_built(SPEC.root)
    if built is None:
        pytest.skip(not_built_line(SPEC, SPEC.default))
    return built


def test_the_config_is_the_profile_with_uuids_of_the_node() -> None:
    hw = get_profile("a100-40gb")
    a, b = (nvml_config(node, "a100-40gb", 2, "580.1", "13.0") for node in ("n-0", "n-1"))
    # MIG-capable, MIG off (tests/harness/clusters/test_nvidia_mig_root.py: the profiles and layouts)
    assert [p["name"] for p in a["devices"][1].pop("migProfiles")] == [m.name for m in hw.mig_profiles]
    assert a["devices"][1] == {
        "name": hw.product_name,
        "uuid": gpu_uuid("n-0", 1),
        "serial": "1650000000001",
        "minor": 1,
        "memoryBytes": hw.memory_mib * MIB,
        "architecture": "Ampere",
        "brand": "Nvidia",
        "ccMajor": 8,
        "ccMinor": 0,
        "pciBusId": pci_bus_id(1),
        "addressingMode": "HMM",
    }
    assert (a["driverVersion"], a["cudaDriverVersion"]) == ("580.1", 13000)
    uuids = [d["uuid"] for c in (a, b) for d in c["devices"]]
    assert len(set(uuids)) == 4
    assert cuda_version_number("12.8") == 12080


def test_the_root_holds_what_the_plugin_looks_for_and_goes_whole(parts: RootParts, tmp_path: Path) -> None:
    root = make_driver_root(tmp_path / "r", "n-0", parts, profile="h100-80gb-hbm3", gpus=3)
    devices = {
        p.relative_to(root).as_posix(): (os.major(p.lstat().st_rdev), os.minor(p.lstat().st_rdev))
        for p in root.rglob("*")
        if stat.S_ISCHR(p.lstat().st_mode)
    }
    assert devices == {
        "dev/nvidia0": (195, 0),
        "dev/nvidia1": (195, 1),
        "dev/nvidia2": (195, 2),
        "dev/nvidiactl": (195, 255),
        "dev/nvidia-uvm": (510, 0),
        "dev/nvidia-uvm-tools": (510, 1),
    }
    assert (
        (root / "proc/driver/nvidia/version")
        .read_text()
        .startswith(f"NVRM version: NVIDIA UNIX x86_64 Kernel Module  {DEFAULT_DRIVER_VERSION}  ")
    )
    assert os.readlink(root / "sys/bus/pci/devices" / pci_bus_id(2)) == (
        f"../../../devices/{pcie_root(2)}/0000:{pcie_root(2)[8:]}:00.0/{pci_bus_id(2)}"
    )
    assert (root / "usr/lib64/libnvidia-ml.so.1").read_bytes() == parts.library.read_bytes()
    assert os.readlink(root / "usr/lib64/libnvidia-ml.so.1") == f"libnvidia-ml.so.{DEFAULT_DRIVER_VERSION}"
    assert os.access(root / "usr/bin/nvidia-smi", os.X_OK)
    assert os.access(root / "usr/bin/nvidia-cdi-hook", os.X_OK)
    assert check_config(parts.library, root / NVML_CONFIG) == ""
    assert describe_root(root) == (
        f"driver root {root}: usr/lib64/libnvidia-ml.so.1 present, usr/bin/nvidia-smi present, "
        "usr/bin/nvidia-cdi-hook present, dev present, dev/nvidiactl present; NVML calls: none"
    )
    remove_driver_root(root)
    assert not root.exists()
    assert DEFAULT_CUDA_DRIVER_VERSION  # the config's CUDA version: fake_driver.fleetspec.fleet's default


def test_a_profile_the_stand_in_cannot_serve_is_refused_in_one_line(parts: RootParts, tmp_path: Path) -> None:
    # 256 GPUs: the last one would need minor 255, nvidiactl's.
    with pytest.raises(HarnessError) as err:
        make_driver_root(tmp_path / "r", "n-0", parts, profile="t4", gpus=256)
    assert str(err.value) == (
        "node n-0: the NVML stand-in cannot serve 256 x t4: "
        "device 255: minor 255 is not a unique number below 255"
    )
    assert not (tmp_path / "r").exists()


def test_the_stand_in_refuses_an_architecture_it_has_no_nvml_value_for(
    parts: RootParts, tmp_path: Path
) -> None:
    config = nvml_config("n-0", "b200", 1, "580.1", "13.0")
    config["devices"][0]["architecture"] = "Rubin"
    path = tmp_path / "nvml.json"
    path.write_text(json.dumps(config))
    assert check_config(parts.library, path) == 'device 0: unknown architecture "Rubin"'


def test_no_gpus_is_refused_in_one_line() -> None:
    with pytest.raises(HarnessError) as err:
        nvml_config("n-0", "l4", 0, "580.1", "13.0")
    assert str(err.value) == "a fake NVIDIA driver root needs at least one GPU, not 0"


def test_the_describe_line_names_what_is_missing(tmp_path: Path) -> None:
    (tmp_path / "dev").mkdir()
    (tmp_path / "nvml-calls.txt").write_text("nvmlInit_v2\nnvmlDeviceGetCount_v2\n")
    assert describe_root(tmp_path) == (
        f"driver root {tmp_path}: usr/lib64/libnvidia-ml.so.1 MISSING, usr/bin/nvidia-smi MISSING, "
        "usr/bin/nvidia-cdi-hook MISSING, dev present, dev/nvidiactl MISSING; "
        "NVML calls: nvmlInit_v2, nvmlDeviceGetCount_v2"
    )


def test_versions_toml_gives_the_nvidia_driver_its_chart_classes_and_root() -> None:
    assert [(c.name, c.extended_resource) for c in SPEC.classes] == [
        ("gpu.nvidia.com", True),
        ("mig.nvidia.com", False),
    ]
    assert SPEC.classes[1].cel == (
        "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'"
    )
    assert (SPEC.root["kind"], SPEC.build_env["CGO_ENABLED"]) == ("nvidia", "1")


def test_a_driver_root_of_an_unknown_kind_is_refused_in_one_line() -> None:
    data = tomllib.loads((REPO_ROOT / "versions.toml").read_text())
    data["drivers"]["nvidia"]["root"]["kind"] = "amd"
    with pytest.raises(VersionsError) as err:
        parse_drivers(data, "versions.toml")
    assert str(err.value) == "versions.toml: drivers.nvidia.root: kind must be one of nvidia"


def test_each_release_runs_on_the_nvml_header_and_hook_its_go_mod_pins() -> None:
    """go.mod @ v0.4.1: go-nvml v0.13.1-0, nvidia-container-toolkit v1.19.1; @ v0.5.0: v0.13.3-1,
    v1.20.0. v0.5.0's two modules the proxy does not serve are built through a workspace."""
    pins = {
        v: (SPEC.root_for(v)["nvml_header_version"], SPEC.root_for(v)["cdi_hook_version"])
        for v in SPEC.versions
    }
    assert pins == {"v0.4.1": ("v0.13.1-0", "v1.19.1"), "v0.5.0": ("v0.13.3-1", "v1.20.0")}
    assert SPEC.unserved == {
        "v0.5.0": {"github.com/NVIDIA/go-nvfm@v0.1.0": "nvfmstub", "k8s.io/kubernetes@v1.37.0-rc.0": ""}
    }
    assert (REPO_ROOT / "nvfmstub" / "pkg" / "nvfm" / "nvfm.go").is_file()


@pytest.mark.parametrize("table", ["root_versions", "unserved"])
def test_a_per_release_table_of_an_unpinned_release_is_refused_in_one_line(table: str) -> None:
    data = tomllib.loads((REPO_ROOT / "versions.toml").read_text())
    data["drivers"]["nvidia"][table]["v0.6.0"] = {}
    with pytest.raises(VersionsError) as err:
        parse_drivers(data, "versions.toml")
    assert str(err.value) == "driver nvidia has no version 'v0.6.0' in versions.toml; known: v0.4.1, v0.5.0"
