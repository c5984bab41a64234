"""Run in a child process by tests/nvmlstub/test_nvml_dynamic_mig.py: DynamicMIG's NVML calls, in the
order NVIDIA's kubelet plugin v0.4.1 makes them (cmd/gpu-kubelet-plugin/nvlib.go
createMigDevice, deleteMigDevice, maybeDisableMigMode), against the stand-in named by argv[1]
(its config and call log from the environment), with the answers NVML documents for misuse in
between. Prints one JSON object: each step's return code and what it read, and the capability
files and nodes the root holds after creating and after destroying. Its own process: the
stand-in's Go runtime and state stay out of the test's."""

from __future__ import annotations

import ctypes
import json
import os
import sys
from pathlib import Path
from typing import Any

from harness.clusters.realnodes.nvidiamig import live_capabilities

Handle = ctypes.c_void_p


class Placement(ctypes.Structure):
    _fields_ = [("start", ctypes.c_uint), ("size", ctypes.c_uint)]


class GpuInstanceInfo(ctypes.Structure):  # nvmlGpuInstanceInfo_t
    _fields_ = [
        ("device", Handle),
        ("id", ctypes.c_uint),
        ("profileId", ctypes.c_uint),
        ("placement", Placement),
    ]


class ComputeInstanceInfo(ctypes.Structure):  # nvmlComputeInstanceInfo_t
    _fields_ = [
        ("device", Handle),
        ("gpuInstance", Handle),
        ("id", ctypes.c_uint),
        ("profileId", ctypes.c_uint),
        ("placement", Placement),
    ]


def main(library: str, profile_id: int, start: int, size: int) -> dict[str, Any]:
    lib = ctypes.CDLL(library)
    out: dict[str, Any] = {"init": lib.nvmlInit_v2()}
    on, off = Handle(), Handle()
    lib.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(on))
    lib.nvmlDeviceGetHandleByIndex_v2(1, ctypes.byref(off))
    current, pending, status = ctypes.c_uint(), ctypes.c_uint(), ctypes.c_int()
    gi, ci, other = Handle(), Handle(), Handle()

    def create_gi(device: Handle, profile: int, where: Placement) -> int:
        return int(
            lib.nvmlDeviceCreateGpuInstanceWithPlacement(
                device, profile, ctypes.byref(where), ctypes.byref(other)
            )
        )

    out["create_gi"] = lib.nvmlDeviceCreateGpuInstanceWithPlacement(
        on, profile_id, ctypes.byref(Placement(start, size)), ctypes.byref(gi)
    )
    out["create_gi_again"] = create_gi(on, profile_id, Placement(start, size))
    out["create_gi_bad_size"] = create_gi(on, profile_id, Placement(start, size + 1))
    out["create_gi_bad_profile"] = create_gi(on, 99, Placement(start, size))
    out["create_gi_mig_off"] = create_gi(off, profile_id, Placement(start, size))
    gi_info = GpuInstanceInfo()
    out["gi_info"] = [lib.nvmlGpuInstanceGetInfo(gi, ctypes.byref(gi_info)), gi_info.id, gi_info.profileId]
    out["gi_placement"] = [gi_info.placement.start, gi_info.placement.size]
    out["create_ci"] = lib.nvmlGpuInstanceCreateComputeInstance(gi, 0, ctypes.byref(ci))
    out["create_ci_again"] = lib.nvmlGpuInstanceCreateComputeInstance(gi, 0, ctypes.byref(other))
    out["destroy_gi_with_ci"] = lib.nvmlGpuInstanceDestroy(gi)
    ci_info, uuid, by_index = ComputeInstanceInfo(), ctypes.create_string_buffer(96), Handle()
    out["ci_info"] = [lib.nvmlComputeInstanceGetInfo_v2(ci, ctypes.byref(ci_info)), ci_info.id]
    out["mig_uuid"] = [lib.nvmlDeviceGetUUID(Handle(ci_info.device), uuid, 96), uuid.value.decode()]
    out["by_index"] = [lib.nvmlDeviceGetMigDeviceHandleByIndex(on, 0, ctypes.byref(by_index))]
    out["by_index"].append(by_index.value == ci_info.device)
    root = Path(os.environ["DRA_HARNESS_NVML_CONFIG"]).parent
    out["created"] = live_capabilities(root)
    out["destroy_ci"] = lib.nvmlComputeInstanceDestroy(ci)
    out["destroy_ci_again"] = lib.nvmlComputeInstanceDestroy(ci)
    out["destroy_gi"] = lib.nvmlGpuInstanceDestroy(gi)
    out["by_index_after"] = lib.nvmlDeviceGetMigDeviceHandleByIndex(on, 0, ctypes.byref(by_index))
    out["destroyed"] = live_capabilities(root)
    # Ampere: enabling MIG is pending until a GPU reset (nvlib.go supportsMIGModeToggle).
    out["set_mig_mode"] = [lib.nvmlDeviceSetMigMode(off, 1, ctypes.byref(status)), status.value]
    out["mig_mode_after"] = [lib.nvmlDeviceGetMigMode(off, ctypes.byref(current), ctypes.byref(pending))]
    out["mig_mode_after"] += [current.value, pending.value]
    return out


if __name__ == "__main__":
    library, profile_id, start, size = sys.argv[1], *map(int, sys.argv[2:5])
    sys.stdout.write(json.dumps(main(library, profile_id, start, size)))
