"""A fake NVIDIA driver root for one real node, in the node's run directory: what NVIDIA's
kubelet plugin (v0.4.1) looks for under --nvidia-driver-root, with the GPUs of a fake_driver
GPU profile (the one source of hardware facts) behind the project's NVML stand-in.

    R/usr/lib64/libnvidia-ml.so.<v>   the stand-in (nvmlstub/), reading R/nvml.json; .so.1 links to it
    R/usr/bin/nvidia-smi              a stub (the CDI spec generator looks for it)
    R/usr/bin/nvidia-cdi-hook         the toolkit's hook, as the CDI spec's hook path
    R/dev/nvidia<i>, nvidiactl, nvidia-uvm, nvidia-uvm-tools    character devices (mknod here,
                                      never in the host's /dev)
    R/proc/driver/nvidia/version      the kernel module's version line
    R/sys/bus/pci/devices/<bus id>    links to each GPU under its PCIe root complex, bound over
                                      /sys/bus/pci/devices in the node's mount namespace only
    R/proc/devices, R/proc/driver/nvidia/capabilities/..., R/dev/nvidia-caps/...
                                      MIG's files (nvidiamig.py; DynamicMIG's the stand-in
                                      writes); /proc/driver is bound over in the node's mount
                                      namespace when there are any

Layout as upstream's GPU-less CI makes it (the repository's mock-NVML e2e workflow at v0.4.1,
as recorded in the project's real-drivers notes); device numbers as the kernel driver gives
them: 195:<minor> per GPU, 195:255 nvidiactl. nvidia-uvm's major is dynamic on a real host;
any free one does here (the container only gets the node).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fake_driver.facts.profiles import MIB, get_profile, gpu_uuid, pci_bus_id, pcie_root
from fake_driver.fleetspec.fleet import DEFAULT_CUDA_DRIVER_VERSION, DEFAULT_DRIVER_VERSION, MigConfig
from harness.clusters.realnodes.nvidiamig import (
    CAPABILITIES,
    NVIDIA_CAPS_MAJOR,
    nvml_mig,
    parse_mig,
    write_mig_files,
    write_proc_devices,
)
from harness.controlplane.nvidiaparts import NVML_SONAME, RootParts, root_parts_built
from harness.core.errors import HarnessError

NVIDIA_MAJOR = 195
NVIDIACTL_MINOR = 255
UVM_MAJOR = 510  # dynamic on a real host
NVML_CONFIG = "nvml.json"
NVML_CALLS = "nvml-calls.txt"  # the stand-in appends NVML function names (nvml_calls)
SYS_PCI_DEVICES = "sys/bus/pci/devices"


def cuda_version_number(version: str) -> int:
    """CUDA 13.0 -> 13000, as nvmlSystemGetCudaDriverVersion reports it (the plugin prints it
    back as major.minor: cmd/gpu-kubelet-plugin/nvlib.go getGpuInfo)."""
    major, _, minor = version.partition(".")
    return int(major) * 1000 + int(minor or 0) * 10


def nvml_config(
    node: str, profile: str, gpus: int, driver_version: str, cuda_version: str, mig: MigConfig | None = None
) -> dict[str, Any]:
    """What the stand-in serves for `gpus` GPUs of `profile` on `node`: UUIDs and bus IDs as
    the fake driver gives the same node (fake_driver.facts.profiles), so the personality renders
    the same devices; MIG as `mig` lays it out (nvidiamig.py). A profile the stand-in cannot
    express is refused here."""
    hw = get_profile(profile)
    major, _, minor = hw.compute_capability.partition(".")
    if gpus < 1:
        raise HarnessError(f"a fake NVIDIA driver root needs at least one GPU, not {gpus}")
    return {
        "driverVersion": driver_version,
        "nvmlVersion": f"13.{driver_version}",
        "cudaDriverVersion": cuda_version_number(cuda_version),
        "capsMajor": NVIDIA_CAPS_MAJOR,
        "devices": [
            {
                "name": hw.product_name,
                "uuid": gpu_uuid(node, i),
                "serial": f"{1650000000000 + i}",
                "minor": i,
                "memoryBytes": hw.memory_mib * MIB,
                "architecture": hw.architecture,
                "brand": hw.brand,
                "ccMajor": int(major),
                "ccMinor": int(minor or 0),
                "pciBusId": pci_bus_id(i),
                "addressingMode": hw.addressing_mode or "",
                **nvml_mig(node, profile, i, mig or MigConfig()),
            }
            for i in range(gpus)
        ],
    }


def _char_device(path: Path, major: int, minor: int) -> None:
    os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(major, minor))


def make_driver_root(
    root: Path, node: str, parts: RootParts, *, profile: str, gpus: int, mig: Mapping[str, Any] | None = None
) -> Path:
    """Write the root (replacing one left from before); returns it. A profile or MIG layout
    the stand-in cannot serve is refused here, in one line, before anything else is written."""
    placed = parse_mig(profile, gpus, mig or {}, f"node {node}")
    config = nvml_config(node, profile, gpus, DEFAULT_DRIVER_VERSION, DEFAULT_CUDA_DRIVER_VERSION, placed)
    remove_driver_root(root)
    for d in ("usr/lib64", "usr/bin", "dev", "proc/driver/nvidia"):
        (root / d).mkdir(parents=True, exist_ok=True)
    (root / NVML_CONFIG).write_text(json.dumps(config, indent=1))
    if why := check_config(parts.library, root / NVML_CONFIG):
        remove_driver_root(root)
        raise HarnessError(f"node {node}: the NVML stand-in cannot serve {gpus} x {profile}: {why}")
    # As a driver installs it: the library under its version, its SONAME a link to it. The
    # toolkit's CDI spec generator (nvidia-container-toolkit@v1.19.1 internal/lookup/root/
    # root.go inferVersion) finds the driver's library directory by that versioned name.
    shutil.copy2(parts.library, root / "usr/lib64" / f"libnvidia-ml.so.{DEFAULT_DRIVER_VERSION}")
    (root / "usr/lib64" / NVML_SONAME).symlink_to(f"libnvidia-ml.so.{DEFAULT_DRIVER_VERSION}")
    shutil.copy2(parts.cdi_hook, root / "usr/bin/nvidia-cdi-hook")
    smi = root / "usr/bin/nvidia-smi"
    smi.write_text("#!/bin/sh\necho 'nvidia-smi: a stub of the dra-harness fake driver root'\n")
    smi.chmod(0o755)
    (root / "proc/driver/nvidia/version").write_text(
        f"NVRM version: NVIDIA UNIX x86_64 Kernel Module  {DEFAULT_DRIVER_VERSION}  (dra-harness stand-in)\n"
    )
    for i in range(gpus):
        _char_device(root / "dev" / f"nvidia{i}", NVIDIA_MAJOR, i)
        _pci_link(root, i)
    _char_device(root / "dev/nvidiactl", NVIDIA_MAJOR, NVIDIACTL_MINOR)
    _char_device(root / "dev/nvidia-uvm", UVM_MAJOR, 0)
    _char_device(root / "dev/nvidia-uvm-tools", UVM_MAJOR, 1)
    write_proc_devices(root)
    write_mig_files(root, config)
    return root


# The stand-in's own check (nvmlstub dhCheckConfig), in a child process: its Go runtime stays
# out of this one.
_CHECK = """
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
lib.dhCheckConfig.restype = ctypes.c_void_p
answer = lib.dhCheckConfig(sys.argv[2].encode())
sys.stdout.write(ctypes.string_at(answer).decode())
"""


def check_config(library: Path, config: Path) -> str:
    """ "" when the stand-in can serve `config`; else its one-line reason."""
    done = subprocess.run(
        [sys.executable, "-c", _CHECK, str(library), str(config)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if done.returncode != 0:
        return f"checking it failed: {done.stderr.strip().splitlines()[-1:]}"
    return done.stdout.strip()


def _pci_link(root: Path, index: int) -> None:
    """/sys/bus/pci/devices/<bus id> as the kernel links it, to the device under its PCIe root
    complex: the plugin reads only the link (k8s.io/dynamic-resource-allocation@v0.36.0-rc.0
    deviceattribute/pci_linux.go resolvePCIeRoot) for its pcieRoot attribute. Root complex and
    bus ID are the fake driver's (fake_driver.facts.profiles pcie_root, pci_bus_id)."""
    bus_id = pci_bus_id(index)
    link = root / SYS_PCI_DEVICES / bus_id
    link.parent.mkdir(parents=True, exist_ok=True)
    bridge = f"0000:{pcie_root(index).removeprefix('pci0000:')}:00.0"
    link.symlink_to(f"../../../devices/{pcie_root(index)}/{bridge}/{bus_id}")


def sysfs_binds(root: Path) -> dict[str, Path]:
    """Bind-mounted in the node's mount namespace (only there): the root's PCI links over
    /sys/bus/pci/devices, where the plugin looks for them, and with MIG devices the root's
    proc/driver over /proc/driver (their capability files)."""
    binds = {"/sys/bus/pci/devices": root / SYS_PCI_DEVICES}
    if (root / CAPABILITIES).is_dir():
        binds["/proc/driver"] = root / "proc/driver"
    return binds


def remove_driver_root(root: Path) -> None:
    shutil.rmtree(root, ignore_errors=True)
    if root.exists():
        raise HarnessError(f"cannot remove the fake driver root {root}")


def nvml_calls(root: Path) -> list[str]:
    """The NVML functions the plugin called so far, in call order: each on its first call, and
    those that change the GPUs (DynamicMIG's creating and destroying, setting MIG mode) on
    every call (nvmlstub/config.go traceEach)."""
    path = root / NVML_CALLS
    return path.read_text().split() if path.exists() else []


def make_root(
    root_spec: Mapping[str, str],
    root: Path,
    node: str,
    profile: str,
    gpus: int,
    mig: Mapping[str, Any] | None = None,
) -> Path:
    """The driver root versions.toml [drivers.*.root] describes, for `node`, from the built
    parts (driverparts.driver_built checked them before any node started)."""
    parts = root_parts_built(root_spec)
    if parts is None:
        raise HarnessError("the fake driver root's parts are not built: run `make drivers`")
    return make_driver_root(root, node, parts, profile=profile, gpus=gpus, mig=mig)


# What the plugin looks up under its driver root (cmd/gpu-kubelet-plugin/root.go @ v0.4.1:
# getDriverLibraryPath, getNvidiaSMIPath, getDevRoot; the root itself is searched first), in
# the places this root puts them, and the hook path its flags name.
LOOKED_FOR = (
    f"usr/lib64/{NVML_SONAME}",
    "usr/bin/nvidia-smi",
    "usr/bin/nvidia-cdi-hook",
    "dev",
    "dev/nvidiactl",
)


def describe_root(root: Path) -> str:
    """One line for a plugin that did not come up: what it looks for in the root (present or
    missing) and the NVML functions it called."""
    found = [f"{p} {'present' if (root / p).exists() else 'MISSING'}" for p in LOOKED_FOR]
    calls = nvml_calls(root)
    return f"driver root {root}: {', '.join(found)}; NVML calls: {', '.join(calls) or 'none'}"
