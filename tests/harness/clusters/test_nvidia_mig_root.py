"""MIG on the fake NVIDIA driver root (harness/clusters/realnodes/nvidiamig.py): the
NVML stand-in's per-GPU MIG config from the fake driver's profile and the pool's layout, the
capability files and device nodes the plugin reads, DynamicMIG's starting point (MIG mode, an
empty capability directory, the plugin's gate), and the one-line refusals of a layout the GPU
does not allow or a profile the stand-in cannot name as NVML callers would.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from fake_driver.facts.profiles import get_profile, mig_uuid
from fake_driver.fleetspec.fleet import MigConfig
from harness.clusters.realnodes.nvidiamig import (
    NVIDIA_CAPS_MAJOR,
    caps_minors,
    live_capabilities,
    nvml_mig,
    nvml_profile_index,
    parse_mig,
    write_proc_devices,
)
from harness.clusters.realnodes.nvidiaroot import make_driver_root, remove_driver_root, sysfs_binds
from harness.clusters.realnodes.pools import RealPoolSpec
from harness.controlplane.nvidiaparts import RootParts
from harness.core.drivers import driver_ref
from harness.core.errors import HarnessError
from tests.harness.clusters.test_nvidia_root import parts  # noqa: F401  (the fixture)

A100 = "a100-80gb-pcie"
LAYOUT = {"mode": "static", "layout": ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"], "gpus": [0, 1]}


def test_the_layout_is_placed_on_the_gpus_it_names() -> None:
    mig = parse_mig(A100, 4, LAYOUT, "node n-0")
    on, off = nvml_mig("n-0", A100, 1, mig), nvml_mig("n-0", A100, 2, mig)
    assert [p["name"] for p in on["migProfiles"]] == [m.name for m in get_profile(A100).mig_profiles]
    assert (on["migEnabled"], "migEnabled" in off, "migDevices" in off) == (True, False, False)
    assert [(d["profileId"], d["start"], d["gi"], d["ci"]) for d in on["migDevices"]] == [
        (14, 0, 1, 0),
        (19, 2, 2, 0),
        (19, 3, 3, 0),
        (9, 4, 4, 0),
    ]
    assert on["migDevices"][3]["uuid"] == mig_uuid("n-0", 1, "gpu-1-mig-3g40gb-9-4")
    assert nvml_mig("n-0", "t4", 0, MigConfig()) == {}


def test_nvml_profile_numbers_follow_the_profile_kind() -> None:
    names = {m.name: nvml_profile_index(m) for m in get_profile("h100-80gb-hbm3").mig_profiles}
    assert names == {
        "1g.10gb": 0,
        "1g.10gb+me": 7,
        "1g.20gb": 9,
        "2g.20gb": 1,
        "3g.40gb": 2,
        "4g.40gb": 3,
        "7g.80gb": 4,
    }


def test_a_layout_the_gpu_does_not_allow_is_refused_in_one_line() -> None:
    with pytest.raises(HarnessError) as err:
        parse_mig(A100, 2, {"mode": "static", "layout": ["4g.40gb", "4g.40gb"]}, "node n-0")
    assert (
        str(err.value)
        == "node n-0: pool 'mig': MIG layout ['4g.40gb', '4g.40gb'] does not fit on one a100-80gb-pcie"
    )
    with pytest.raises(HarnessError) as err:
        parse_mig(A100, 2, {"mode": "dynamic", "layout": ["1g.10gb"]}, "node n-0")
    assert str(err.value) == "node n-0: pool 'mig': 'layout' is only valid with mig mode static"


def test_dynamic_mig_starts_without_mig_devices_and_mig_on_where_a_reset_would_toggle_it() -> None:
    """Ampere needs a reset to toggle MIG: `enabled` says whether it is on (the personality's
    rule, fake_driver/rendering/nvidia_devices.py render_nvidia_gpu); Hopper starts with it off."""
    mig = parse_mig(A100, 3, {"mode": "dynamic", "gpus": [0, 1]}, "node n-0")
    assert (mig.mode, mig.gpus, mig.placements) == ("dynamic", (0, 1), ())
    fields = [
        {k: v for k, v in nvml_mig("n-0", A100, i, mig).items() if k != "migProfiles"} for i in range(3)
    ]
    assert fields == [{"migDynamic": True, "migEnabled": True}, {"migDynamic": True, "migEnabled": True}, {}]
    off = parse_mig(A100, 1, {"mode": "dynamic", "enabled": False}, "node n-0")
    hopper = parse_mig("h100-80gb-hbm3", 1, {"mode": "dynamic"}, "node n-0")
    assert {k: v for k, v in nvml_mig("n-0", A100, 0, off).items() if k != "migProfiles"} == {
        "migDynamic": True
    }
    assert {k: v for k, v in nvml_mig("n-0", "h100-80gb-hbm3", 0, hopper).items() if k != "migProfiles"} == {
        "migDynamic": True
    }


def test_a_dynamic_pool_passes_the_plugin_its_dynamic_mig_gate() -> None:
    spec, version = driver_ref("nvidia@v0.4.1")
    dynamic = RealPoolSpec("d", profile=A100, driver="nvidia@v0.4.1", mig={"mode": "dynamic"})
    static = RealPoolSpec("s", profile=A100, driver="nvidia@v0.4.1", mig=LAYOUT)
    fields = {"node": "d-0", "kubeconfig": "/k", "gpus": "2", "root": "/r"}
    assert dynamic.plugin_settings() == {"dynamic_mig": True}
    assert spec.argv(version, fields, dynamic.plugin_settings())[-1] == "--feature-gates=DynamicMIG=true"
    assert not any("feature-gates" in a for a in spec.argv(version, fields, static.plugin_settings()))


def test_capability_minors_follow_the_kernel_drivers_table() -> None:
    # internal/common/nvcaps.go @ v0.4.1: gpu0/gi0/access 3, gpu0/gi0/ci0/access 4, gpu3/gi3/ci3/access 439
    assert (caps_minors(0, 0, 0), caps_minors(3, 3, 3)[1]) == ((3, 4), 439)


def test_proc_devices_gains_nvidia_caps(tmp_path: Path) -> None:
    host = tmp_path / "devices"
    host.write_text("Character devices:\n  1 mem\n195 nvidia\n\nBlock devices:\n  8 sd\n")
    (tmp_path / "proc").mkdir()
    write_proc_devices(tmp_path, host)
    assert (tmp_path / "proc/devices").read_text() == (
        f"Character devices:\n  1 mem\n195 nvidia\n{NVIDIA_CAPS_MAJOR} nvidia-caps\n"
        "\nBlock devices:\n  8 sd\n"
    )


def test_the_root_has_each_mig_devices_capabilities_and_goes_whole(parts: RootParts, tmp_path: Path) -> None:  # noqa: F811
    root = make_driver_root(tmp_path / "r", "n-0", parts, profile=A100, gpus=2, mig={**LAYOUT, "gpus": [1]})
    caps = {
        p.name: (os.major(p.lstat().st_rdev), os.minor(p.lstat().st_rdev))
        for p in (root / "dev/nvidia-caps").iterdir()
        if stat.S_ISCHR(p.lstat().st_mode)
    }
    expected = [n for gi in (1, 2, 3, 4) for n in caps_minors(1, gi, 0)]
    assert caps == {f"nvidia-cap{n}": (NVIDIA_CAPS_MAJOR, n) for n in expected}
    access = root / "proc/driver/nvidia/capabilities/gpu1/mig/gi4/ci0/access"
    assert access.read_text().splitlines()[0] == f"DeviceFileMinor: {caps_minors(1, 4, 0)[1]}"
    assert sysfs_binds(root)["/proc/driver"] == root / "proc/driver"
    remove_driver_root(root)
    assert not root.exists()


def test_a_profile_nvml_callers_would_name_otherwise_is_refused_in_one_line(
    parts: RootParts,  # noqa: F811
    tmp_path: Path,
) -> None:
    """H200's MIG rows carry nominal memory (18432 MiB a slice of 144384 MiB): go-nvlib would
    name 1g.18gb "1g.35gb", so the plugin's names would not be the profile's."""
    with pytest.raises(HarnessError) as err:
        make_driver_root(
            tmp_path / "r",
            "n-0",
            parts,
            profile="h200-141gb-hbm3e",
            gpus=1,
            mig=LAYOUT | {"gpus": [0], "layout": ["3g.71gb"]},
        )
    assert str(err.value) == (
        'node n-0: the NVML stand-in cannot serve 1 x h200-141gb-hbm3e: device 0: MIG profile "1g.18gb": '
        'with 18432 MiB of the GPU\'s 144384 MiB NVML callers would name it "1g.35gb"'
    )
    assert not (tmp_path / "r").exists()
    with pytest.raises(HarnessError) as err:  # DynamicMIG publishes the profiles' names too
        make_driver_root(
            tmp_path / "r", "n-0", parts, profile="h200-141gb-hbm3e", gpus=1, mig={"mode": "dynamic"}
        )
    assert str(err.value).endswith('NVML callers would name it "1g.35gb"'), err.value


def test_a_dynamic_root_has_the_capability_directory_and_no_mig_device(
    parts: RootParts,  # noqa: F811
    tmp_path: Path,
) -> None:
    root = make_driver_root(
        tmp_path / "r", "n-0", parts, profile=A100, gpus=2, mig={"mode": "dynamic", "gpus": [1]}
    )
    assert live_capabilities(root) == ([], {})
    assert sorted(
        p.relative_to(root).as_posix() for p in (root / "proc/driver/nvidia/capabilities").rglob("*")
    ) == [
        "proc/driver/nvidia/capabilities/gpu1",
        "proc/driver/nvidia/capabilities/gpu1/mig",
    ]
    assert sysfs_binds(root)["/proc/driver"] == root / "proc/driver"  # where the plugin reads them
