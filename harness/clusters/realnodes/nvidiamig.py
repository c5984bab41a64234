"""MIG on a fake NVIDIA driver root: what the NVML stand-in serves per GPU (nvmlstub/
migconfig.go: migProfiles, migEnabled, migDevices, migDynamic) and the files NVIDIA's kubelet
plugin v0.4.1 reads to give a container a MIG device, all from the fake driver's GPU profile and
the pool's `mig` in the fleet's syntax: {mode: static, layout: [...], gpus: [...]}, placed by
fake_driver.facts.profiles place_layout (which refuses a layout the GPU does not allow), or
{mode: dynamic, gpus: [...], enabled: bool} for the plugin's DynamicMIG gate, whose MIG devices
the stand-in creates and destroys (nvmlstub/migcreate.go), writing and removing their
capability files and nodes below the same root itself.

    R/proc/driver/nvidia/capabilities/gpu<minor>/mig/gi<G>/access, .../gi<G>/ci<C>/access
        "DeviceFileMinor: N" files, as the kernel driver writes them; the plugin reads them at
        /proc/driver/nvidia/capabilities (cmd/gpu-kubelet-plugin/cdi.go GetDevNodesForMigDevice,
        an absolute path), so the node's mount namespace binds R/proc/driver over /proc/driver
    R/proc/devices     the host's list plus nvidia-caps' major: the plugin reads it where
                       ALT_PROC_DEVICES_PATH says (internal/common/nvcaps.go GetDeviceMajor)
    R/dev/nvidia-caps/nvidia-cap<N>    character devices (mknod here, never in the host's /dev)

For DynamicMIG the root starts with R/proc/driver/nvidia/capabilities/gpu<minor>/mig/ of each
dynamic GPU (so /proc/driver is bound) and no MIG device: MIG mode is on where the part needs a
reset to toggle it (Ampere) and `enabled` says so, as the nvidia-v0.4 personality renders it
(fake_driver/rendering/nvidia_devices.py render_nvidia_gpu); the plugin turns it on elsewhere.

Capability minors follow the kernel driver's fixed table (internal/common/nvcaps.go, the
/proc/driver/nvidia-caps/mig-minors excerpt): per GPU 15 GPU instances of 9 minors each (the
GPU instance's, then 8 compute instances'), after config (1) and monitor (2). GPU instance ids
are 1.. in placement order (DynamicMIG: the lowest free) and each has compute instance 0:
NVML's own id choice is not modelled (the plugin only passes ids back).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fake_driver.core.errors import FleetError
from fake_driver.facts.personalities import get_personality
from fake_driver.facts.profiles import MigPlacement, MigProfile, get_profile, mig_uuid
from fake_driver.fleetspec.fleet import MigConfig, fleet_from_dict
from fake_driver.rendering.nvidia_devices import mig_device_name
from harness.core.errors import HarnessError

NVIDIA_CAPS_MAJOR = 509  # dynamic on a real host, like nvidia-uvm's
CAPABILITIES = "proc/driver/nvidia/capabilities"
PROC_DEVICES = "proc/devices"
# The personality that renders what this plugin publishes: its MIG device names (the UUIDs'
# seed, fake_driver.facts.profiles mig_uuid) are the plugin's (mig.go ToCanonicalName).
PLUGIN_PERSONALITY = "nvidia-v0.4"

# NVML_GPU_INSTANCE_PROFILE_* (nvml.h of go-nvml v0.13.1-0) by compute slices.
_GI_PROFILE = {1: 0, 2: 1, 3: 2, 4: 3, 7: 4, 8: 5, 6: 6}
_GI_PROFILE_ME = {1: 7, 2: 8}  # _REV1: "+me"
_GI_PROFILE_1G_2SLICES = 9  # _REV2: one compute slice over two memory slices ("1g.20gb" on H100)


def parse_mig(profile: str, gpus: int, raw: Mapping[str, Any], where: str) -> MigConfig:
    """The pool's `mig`, checked and placed as the fake driver's fleet does; one line if not."""
    if not raw:
        return MigConfig()
    pool = {"name": "mig", "nodes": ["n"], "profile": profile, "gpus": gpus, "mig": dict(raw)}
    try:
        fleet = fleet_from_dict({"personality": PLUGIN_PERSONALITY, "pools": [pool]})
    except FleetError as err:
        raise HarnessError(f"{where}: {str(err).removeprefix('<fleet>: ')}") from None
    return fleet.pools[0].mig


def nvml_profile_index(m: MigProfile) -> int:
    g = int(m.name.split("g.", 1)[0])
    if "+me" in m.name:
        return _GI_PROFILE_ME[g]
    if g == 1 and m.placement_size == 2:
        return _GI_PROFILE_1G_2SLICES
    return _GI_PROFILE[g]


def _nvml_profile(m: MigProfile) -> dict[str, Any]:
    return {
        "name": m.name,
        "index": nvml_profile_index(m),
        "id": m.gi_profile_id,
        "slices": int(m.name.split("g.", 1)[0]),
        "placementStarts": list(m.placement_starts),
        "placementSize": m.placement_size,
        "memoryMiB": m.memory_mib,
        "multiprocessors": m.multiprocessors,
        "copyEngines": m.copy_engines,
        "decoders": m.decoders,
        "encoders": m.encoders,
        "jpegEngines": m.jpeg_engines,
        "ofaEngines": m.ofa_engines,
    }


def mig_device_uuid(node: str, minor: int, placement: MigPlacement) -> str:
    name = mig_device_name(get_personality(PLUGIN_PERSONALITY), minor, placement.profile, placement.start)
    return mig_uuid(node, minor, name)


def nvml_mig(node: str, profile: str, index: int, mig: MigConfig) -> dict[str, Any]:
    """The MIG fields of GPU `index` (its minor too) in the stand-in's config."""
    hw = get_profile(profile)
    if not hw.mig_capable:
        return {}
    out: dict[str, Any] = {"migProfiles": [_nvml_profile(m) for m in hw.mig_profiles]}
    if mig.mode == "dynamic" and mig.applies_to(index):
        out["migDynamic"] = True
        if hw.mig_toggle_needs_reset and mig.enabled:
            out["migEnabled"] = True
    if mig.mode == "static" and mig.applies_to(index):
        out["migEnabled"] = True
        out["migDevices"] = [
            {
                "uuid": mig_device_uuid(node, index, p),
                "profileId": p.profile.gi_profile_id,
                "start": p.start,
                "gi": gi,
                "ci": 0,
            }
            for gi, p in enumerate(mig.placements, start=1)
        ]
    return out


def caps_minors(minor: int, gi: int, ci: int) -> tuple[int, int]:
    """(GPU instance's, compute instance's) capability device minors."""
    gi_minor = 3 + minor * 15 * 9 + gi * 9
    return gi_minor, gi_minor + 1 + ci


def _access(path: Path, minor: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"DeviceFileMinor: {minor}\nDeviceFileMode: 292\nDeviceFileModify: 1\n")  # 0444


def write_mig_files(root: Path, config: Mapping[str, Any]) -> int:
    """The capability files and device nodes of every MIG device in `config`; how many. A
    DynamicMIG GPU gets its (empty) capability directory: the stand-in fills it."""
    made = 0
    for gpu in config["devices"]:
        if gpu.get("migDynamic"):
            (root / CAPABILITIES / f"gpu{gpu['minor']}/mig").mkdir(parents=True, exist_ok=True)
            (root / "dev/nvidia-caps").mkdir(parents=True, exist_ok=True)
        for m in gpu.get("migDevices", []):
            gi_minor, ci_minor = caps_minors(gpu["minor"], m["gi"], m["ci"])
            gi_dir = root / CAPABILITIES / f"gpu{gpu['minor']}/mig/gi{m['gi']}"
            _access(gi_dir / "access", gi_minor)
            _access(gi_dir / f"ci{m['ci']}" / "access", ci_minor)
            for n in (gi_minor, ci_minor):
                node = root / "dev/nvidia-caps" / f"nvidia-cap{n}"
                node.parent.mkdir(parents=True, exist_ok=True)
                os.mknod(node, 0o444 | stat.S_IFCHR, os.makedev(NVIDIA_CAPS_MAJOR, n))
            made += 1
    return made


def live_capabilities(root: Path) -> tuple[list[str], dict[str, tuple[int, int]]]:
    """The capability `access` files (relative to the capabilities directory) and the
    nvidia-caps nodes (name -> major, minor) under `root` now."""
    caps = root / CAPABILITIES
    access = sorted(p.relative_to(caps).as_posix() for p in caps.rglob("access")) if caps.is_dir() else []
    nodes_dir = root / "dev/nvidia-caps"
    nodes = {
        p.name: (os.major(p.lstat().st_rdev), os.minor(p.lstat().st_rdev))
        for p in (sorted(nodes_dir.iterdir()) if nodes_dir.is_dir() else [])
        if stat.S_ISCHR(p.lstat().st_mode)
    }
    return access, nodes


def write_proc_devices(root: Path, host: Path = Path("/proc/devices")) -> None:
    """The host's /proc/devices with nvidia-caps added to its character devices."""
    text = host.read_text() if host.exists() else "Character devices:\n\nBlock devices:\n"
    head, sep, tail = text.partition("\nBlock devices:")
    if not sep:
        raise HarnessError(f"{host}: no 'Block devices:' section")
    body = head.rstrip("\n") + f"\n{NVIDIA_CAPS_MAJOR} nvidia-caps\n"
    (root / PROC_DEVICES).write_text(body + "\nBlock devices:" + tail)
