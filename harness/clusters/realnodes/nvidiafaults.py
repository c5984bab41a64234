"""Faults of a real node's fake NVIDIA GPUs, made while the plugin runs: a line appended to the
control file of the node's driver root, which the NVML stand-in reads on each event wait
(nvmlstub/faults.go, events.go). What the plugin makes of them (sigs.k8s.io/dra-driver-nvidia-gpu
@v0.4.1 cmd/gpu-kubelet-plugin/device_health.go, gate NVMLDeviceHealthCheck):

    xid <code>    an Xid critical error event on the device -> taint gpu.nvidia.com/xid=<code>,
                  NoSchedule, or None for the Xids it skips (xidsToSkip: 13 31 43 45 68 109)
    gpu-lost      the next event wait answers GPU_IS_LOST -> gpu.nvidia.com/gpu-lost NoSchedule
                  on every device of the node (sendHealthEventForAllDevices)
    unmonitored   registering the GPU's events answers NOT_SUPPORTED -> gpu.nvidia.com/
                  unmonitored None on the GPU's devices; registration happens at the plugin's
                  start only, so this takes a plugin restart
    recovered     undoes unmonitored at the next registration; the plugin itself never removes
                  a taint while it runs (AddOrUpdateTaint only; taints live in its memory)

Devices are named as the plugin names them: gpu-<minor>, and gpu-<minor>-mig-<profile>-<GI
profile id>-<placement start> for static MIG devices (tests/support/nvidiareal.py MIG_PLACED).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from harness.clusters.realnodes.pools import RealNodes
from harness.core.errors import HarnessError

FAULTS_FILE = "nvml-faults.txt"  # nvmlstub/faults.go FaultsFile
STUB_LOG = "nvml-stub.log"  # nvmlstub/faults.go FaultsLog
FAULTS = ("xid", "gpu-lost", "unmonitored", "recovered")
# The pool setting that turns the plugin's health check on (versions.toml [drivers.nvidia.settings]).
HEALTH_SETTING = "device_health"
HEALTH_GATE = "NVMLDeviceHealthCheck"
# Xids the plugin counts as application errors, not the GPU's (device_health.go xidsToSkip):
# their taint's effect is None.
NON_FATAL_XIDS = frozenset({13, 31, 43, 45, 68, 109})
TAINT_KEYS = {
    "xid": "gpu.nvidia.com/xid",
    "gpu-lost": "gpu.nvidia.com/gpu-lost",
    "unmonitored": "gpu.nvidia.com/unmonitored",
}


def device_uuids(config: dict[str, Any]) -> dict[str, str]:
    """The plugin's device names -> UUIDs, from the stand-in's config (nvidiaroot.nvml_config):
    full GPUs not in MIG mode, and each static MIG device."""
    out: dict[str, str] = {}
    for gpu in config["devices"]:
        minor = gpu["minor"]
        if not gpu.get("migEnabled"):
            out[f"gpu-{minor}"] = gpu["uuid"]
        names = {p["id"]: p["name"].replace(".", "") for p in gpu.get("migProfiles", [])}
        for m in gpu.get("migDevices", []):
            out[f"gpu-{minor}-mig-{names[m['profileId']]}-{m['profileId']}-{m['start']}"] = m["uuid"]
    return out


def parent_uuid(config: dict[str, Any], uuid: str) -> str:
    """The GPU a device UUID is on (itself for a full GPU)."""
    for gpu in config["devices"]:
        if gpu["uuid"] == uuid or any(m["uuid"] == uuid for m in gpu.get("migDevices", [])):
            return str(gpu["uuid"])
    raise HarnessError(f"no GPU holds {uuid}")


def fault_line(node: str, config: dict[str, Any], fault: str, device: str, code: int | None = None) -> str:
    """The control line for `fault` on `device`, or one line why not."""
    if fault not in FAULTS:
        raise HarnessError(f"unknown fault {fault!r}: one of {', '.join(FAULTS)}")
    devices = device_uuids(config)
    if device not in devices:
        raise HarnessError(f"node {node} has no device {device} (its devices: {', '.join(sorted(devices))})")
    if (fault == "xid") != (code is not None):
        raise HarnessError(f"an Xid code goes with the xid fault only (fault {fault}, code {code})")
    if code is not None and not 0 <= code < 2**64:
        raise HarnessError(f"Xid code {code} is not an unsigned 64-bit number")
    uuid = devices[device]
    if fault in ("unmonitored", "recovered"):
        uuid = parent_uuid(config, uuid)  # NVML registers events per GPU
    return " ".join([fault, uuid, *([str(code)] if code is not None else [])]) + "\n"


def inject(root: Path, node: str, fault: str, device: str, code: int | None = None) -> str:
    """Append the fault to the node's control file; returns the line. One write to a file
    opened for appending: the stand-in never reads half a line (it reads only whole lines)."""
    config = json.loads((root / "nvml.json").read_text())
    line = fault_line(node, config, fault, device, code)
    fd = os.open(root / FAULTS_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)
    return line


def gate_off_line(node: str) -> str:
    return (
        f"node {node}: the plugin's {HEALTH_GATE} gate is off (pool setting {HEALTH_SETTING}): "
        "it registers no NVML events, so no fault becomes a taint"
    )


def stub_log(root: Path) -> list[str]:
    """What the stand-in reported about the control file (malformed lines), one line each."""
    path = root / STUB_LOG
    return path.read_text().splitlines() if path.exists() else []


def expected_taint(fault: str, code: int | None = None) -> dict[str, str]:
    """The taint the plugin publishes for `fault` (device_health.go healthEventToTaint)."""
    if fault == "xid":
        assert code is not None
        return {
            "key": TAINT_KEYS["xid"],
            "value": str(code),
            "effect": "None" if code in NON_FATAL_XIDS else "NoSchedule",
        }
    if fault == "gpu-lost":
        return {"key": TAINT_KEYS["gpu-lost"], "effect": "NoSchedule"}
    return {"key": TAINT_KEYS["unmonitored"], "effect": "None"}


def inject_on(real: RealNodes, node: str, fault: str, device: str, code: int | None = None) -> str:
    """`inject` on a running cluster's real node: one line when the node is not there, runs no
    fake NVIDIA root, or its plugin's health check gate is off (no taint would ever come)."""
    if node not in real.nodes:
        raise HarnessError(f"no real node {node} here (real nodes: {', '.join(sorted(real.nodes))})")
    n = real.node(node)
    root, external = n.driver_root, n.spec.external
    if root is None or external is None:
        raise HarnessError(f"node {node} has no fake NVIDIA driver root: it runs no NVIDIA plugin")
    if not external.settings.get(HEALTH_SETTING):
        raise HarnessError(gate_off_line(node))
    return inject(root, node, fault, device, code)
