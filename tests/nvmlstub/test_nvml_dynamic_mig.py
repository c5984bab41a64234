"""DynamicMIG on the fake NVIDIA driver root: the NVML stand-in (nvmlstub/migcreate.go) creates
and destroys GPU and compute instances as NVIDIA's kubelet plugin v0.4.1 asks (the calls of
nvlib.go createMigDevice and deleteMigDevice, made from a child process through ctypes:
tests/support/nvml_dynamic_calls.py), answers misuse as NVML documents it, writes each instance's
capability file and device node below the root and removes them again, and logs each
creating and destroying call every time it is made.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

from harness.clusters.realnodes.nvidiamig import NVIDIA_CAPS_MAJOR, caps_minors
from harness.clusters.realnodes.nvidiaroot import NVML_CALLS, NVML_CONFIG, make_driver_root, nvml_calls
from harness.controlplane.nvidiaparts import RootParts
from harness.core.versions import REPO_ROOT
from tests.harness.clusters.test_nvidia_root import parts  # noqa: F401  (the fixture)

A100 = "a100-80gb-pcie"
DYNAMIC = {"mode": "dynamic", "gpus": [0]}  # GPU 0: MIG on (Ampere); GPU 1: MIG off
ONE_G = (19, 3, 1)  # 1g.10gb: GPU instance profile id 19, placed at memory slice 3 (size 1)
# NVML's return codes (nvml.h nvmlReturn_t)
OK, INVALID_ARGUMENT, NOT_SUPPORTED, NOT_FOUND = 0, 2, 3, 6
RESET_REQUIRED, IN_USE, INSUFFICIENT_RESOURCES = 16, 19, 23


def test_the_stand_in_creates_and_destroys_a_mig_device_and_its_capabilities(
    parts: RootParts,  # noqa: F811
    tmp_path: Path,
) -> None:
    root = make_driver_root(tmp_path / "r", "n-0", parts, profile=A100, gpus=2, mig=DYNAMIC)
    env = {
        **os.environ,
        "DRA_HARNESS_NVML_CONFIG": str(root / NVML_CONFIG),
        "DRA_HARNESS_NVML_CALLS": str(root / NVML_CALLS),
        "PYTHONPATH": str(REPO_ROOT),
    }
    argv = [
        sys.executable,
        str(REPO_ROOT / "tests/support/nvml_dynamic_calls.py"),
        str(root / "usr/lib64/libnvidia-ml.so.1"),
    ]
    done = subprocess.run(
        [*argv, *map(str, ONE_G)], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)

    gi_minor, ci_minor = caps_minors(0, 1, 0)
    assert got.pop("created") == [
        ["gpu0/mig/gi1/access", "gpu0/mig/gi1/ci0/access"],
        {
            f"nvidia-cap{gi_minor}": [NVIDIA_CAPS_MAJOR, gi_minor],
            f"nvidia-cap{ci_minor}": [NVIDIA_CAPS_MAJOR, ci_minor],
        },
    ]
    assert got.pop("destroyed") == [[], {}]
    assert (root / "proc/driver/nvidia/capabilities/gpu0/mig").is_dir()  # the root's, kept
    uuid = got.pop("mig_uuid")
    assert (uuid[0], uuid[1][:4], len(uuid[1])) == (OK, "MIG-", 40), uuid
    assert got == {
        "init": OK,
        "create_gi": OK,
        "create_gi_again": INSUFFICIENT_RESOURCES,  # the placement's memory slice is taken
        "create_gi_bad_size": INVALID_ARGUMENT,  # not one of the profile's placements
        "create_gi_bad_profile": INVALID_ARGUMENT,
        "create_gi_mig_off": NOT_SUPPORTED,
        "gi_info": [OK, 1, 19],  # the lowest free GPU instance id
        "gi_placement": [3, 1],
        "create_ci": OK,
        "create_ci_again": INSUFFICIENT_RESOURCES,  # the first spans the GPU instance
        "destroy_gi_with_ci": IN_USE,
        "ci_info": [OK, 0],
        "by_index": [OK, True],  # the compute instance's device is MIG device 0
        "destroy_ci": OK,
        "destroy_ci_again": INVALID_ARGUMENT,  # a destroyed instance's handle
        "destroy_gi": OK,
        "by_index_after": NOT_FOUND,
        "set_mig_mode": [OK, RESET_REQUIRED],  # Ampere: pending until a reset
        "mig_mode_after": [OK, 0, 1],
    }
    counts = Counter(nvml_calls(root))
    assert {
        name: counts[name] for name in counts if "Create" in name or "Destroy" in name or "Set" in name
    } == {
        "nvmlDeviceCreateGpuInstanceWithPlacement": 5,
        "nvmlGpuInstanceCreateComputeInstance": 2,
        "nvmlGpuInstanceDestroy": 2,
        "nvmlComputeInstanceDestroy": 2,
        "nvmlDeviceSetMigMode": 1,
    }
    assert counts["nvmlGpuInstanceGetInfo"] == 1  # queries: their first call only
