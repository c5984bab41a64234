"""The plugin's checkpoint: which claims are prepared, with the devices returned for them.

Written atomically after every change; read at start, so a restarted plugin answers a
repeated NodePrepareResources with the same devices and can unprepare claims it prepared
before the restart. A file this version cannot read stops the plugin with one line naming the
file (NVIDIA's driver crash-looped on a checkpoint with an unknown field, issues #1066/#1080;
this one refuses loudly instead of guessing).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fake_driver.core.errors import FakeDriverError

CHECKPOINT_VERSION = 1
CHECKPOINT_FILE = "checkpoint.json"


class CheckpointError(FakeDriverError):
    pass


@dataclass(frozen=True)
class PreparedDevice:
    requests: tuple[str, ...]
    pool: str
    device: str
    cdi_device_ids: tuple[str, ...]
    share_id: str = ""  # consumable capacity: the allocation result's shareID


@dataclass(frozen=True)
class PreparedClaim:
    namespace: str
    name: str
    devices: tuple[PreparedDevice, ...]


def _device(raw: Any, where: str) -> PreparedDevice:
    try:
        return PreparedDevice(
            requests=tuple(str(r) for r in raw["requests"]),
            pool=str(raw["pool"]),
            device=str(raw["device"]),
            cdi_device_ids=tuple(str(c) for c in raw["cdiDeviceIDs"]),
            share_id=str(raw.get("shareID", "")),
        )
    except (KeyError, TypeError) as err:
        raise CheckpointError(f"{where}: malformed device entry ({type(err).__name__}: {err})") from None


def load(path: Path) -> dict[str, PreparedClaim]:
    if not path.exists():
        return {}
    try:
        raw = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise CheckpointError(f"cannot read checkpoint {path}: {err}") from None
    if not isinstance(raw, dict) or raw.get("version") != CHECKPOINT_VERSION:
        version = raw.get("version") if isinstance(raw, dict) else None
        raise CheckpointError(
            f"checkpoint {path} has version {version!r}; this plugin reads version {CHECKPOINT_VERSION}"
        )
    claims: dict[str, PreparedClaim] = {}
    for uid, c in (raw.get("claims") or {}).items():
        where = f"checkpoint {path}: claim {uid}"
        if not isinstance(c, dict):
            raise CheckpointError(f"{where}: not an object")
        claims[uid] = PreparedClaim(
            namespace=str(c.get("namespace", "")),
            name=str(c.get("name", "")),
            devices=tuple(_device(d, where) for d in c.get("devices") or ()),
        )
    return claims


def save(path: Path, claims: dict[str, PreparedClaim]) -> None:
    body = {
        "version": CHECKPOINT_VERSION,
        "claims": {
            uid: {
                "namespace": c.namespace,
                "name": c.name,
                "devices": [
                    {
                        "requests": list(d.requests),
                        "pool": d.pool,
                        "device": d.device,
                        "cdiDeviceIDs": list(d.cdi_device_ids),
                        **({"shareID": d.share_id} if d.share_id else {}),
                    }
                    for d in c.devices
                ],
            }
            for uid, c in sorted(claims.items())
        },
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(body, indent=2) + "\n")
    os.replace(tmp, path)
