"""CDI spec files for prepared claims (one transient spec per claim, like NVIDIA's driver).

A pod that got devices sees them through the spec's environment:
``NVIDIA_VISIBLE_DEVICES=<uuid>[,<uuid>...]`` for the whole claim, and one
``DRA_DEVICE_<DEVICE>=<uuid>`` per device (``gpu-0`` -> ``DRA_DEVICE_GPU_0``).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CDI_VERSION = "0.6.0"
CDI_CLASS = "claim"
VISIBLE_DEVICES_ENV = "NVIDIA_VISIBLE_DEVICES"
DEVICE_ENV_PREFIX = "DRA_DEVICE_"
CLAIM_ENV = "DRA_CLAIM"


@dataclass(frozen=True)
class CdiDevice:
    device: str  # published device name, e.g. gpu-0
    visible_id: str  # what the container sees: the GPU (or MIG) UUID


def vendor(driver: str) -> str:
    """CDI vendor of a driver: ``gpu.nvidia.com`` -> ``k8s.gpu.nvidia.com`` (NVIDIA's scheme)."""
    return f"k8s.{driver}"


def device_env_name(device: str) -> str:
    return DEVICE_ENV_PREFIX + re.sub(r"[^A-Z0-9]", "_", device.upper())


def cdi_device_name(claim_uid: str, device: str) -> str:
    return f"{claim_uid}-{device}"


def cdi_device_id(driver: str, claim_uid: str, device: str) -> str:
    """Fully qualified CDI device ID returned to the kubelet: ``<vendor>/<class>=<name>``."""
    return f"{vendor(driver)}/{CDI_CLASS}={cdi_device_name(claim_uid, device)}"


def spec_path(cdi_root: Path, driver: str, claim_uid: str) -> Path:
    # cdiapi.GenerateTransientSpecName: "<vendor>-<class>_<transient id>".
    return cdi_root / f"{vendor(driver)}-{CDI_CLASS}_{claim_uid}.json"


def claim_spec(driver: str, claim_uid: str, claim: str, devices: Sequence[CdiDevice]) -> dict[str, Any]:
    visible = ",".join(d.visible_id for d in devices)
    return {
        "cdiVersion": CDI_VERSION,
        "kind": f"{vendor(driver)}/{CDI_CLASS}",
        "devices": [
            {
                "name": cdi_device_name(claim_uid, d.device),
                "containerEdits": {"env": [f"{device_env_name(d.device)}={d.visible_id}"]},
            }
            for d in devices
        ],
        "containerEdits": {"env": [f"{VISIBLE_DEVICES_ENV}={visible}", f"{CLAIM_ENV}={claim}"]},
    }


def write_spec(cdi_root: Path, driver: str, claim_uid: str, spec: dict[str, Any]) -> Path:
    """Atomically (re)write the claim's spec: a runtime never reads half a file."""
    cdi_root.mkdir(parents=True, exist_ok=True)
    path = spec_path(cdi_root, driver, claim_uid)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(spec, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, path)
    return path


def remove_spec(cdi_root: Path, driver: str, claim_uid: str) -> None:
    spec_path(cdi_root, driver, claim_uid).unlink(missing_ok=True)
