"""Container images written by the harness itself, so a real node never pulls anything.

Each image is a docker-archive tarball (manifest.json + an image config + one layer.tar), the
format `ctr images import` reads (containerd: core/images/archive/importer.go). Files are
written with fixed owners and times, so the same inputs give the same bytes and digests.
"""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import tarfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from harness.core.errors import HarnessError

PATH_ENV = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def _add(
    tar: tarfile.TarFile, name: str, data: bytes | None = None, *, link: str = "", mode: int = 0o755
) -> None:
    info = tarfile.TarInfo(name)
    info.mode, info.mtime, info.uid, info.gid = mode, 0, 0, 0
    if link:
        info.type, info.linkname = tarfile.SYMTYPE, link
        tar.addfile(info)
    elif data is None:
        info.type = tarfile.DIRTYPE
        tar.addfile(info)
    else:
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))


def _layer(files: dict[str, bytes], links: dict[str, str], dirs: Iterable[str]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for d in dirs:
            _add(tar, d)
        for name, data in sorted(files.items()):
            _add(tar, name, data)
        for name, target in sorted(links.items()):
            _add(tar, name, link=target, mode=0o777)
    return buf.getvalue()


def write_image(
    out: Path, ref: str, layer: bytes, entrypoint: list[str], cmd: list[str], *, also: Sequence[str] = ()
) -> Path:
    """One-layer linux/amd64 image `ref` (and the tags `also`) as a docker-archive at `out`
    (replaced atomically)."""
    diff_id = "sha256:" + hashlib.sha256(layer).hexdigest()
    config = {
        "architecture": "amd64",
        "os": "linux",
        "created": "1970-01-01T00:00:00Z",
        "config": {"Entrypoint": entrypoint, "Cmd": cmd, "Env": [PATH_ENV], "WorkingDir": "/"},
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
        "history": [{"created": "1970-01-01T00:00:00Z", "created_by": "dra-harness"}],
    }
    config_bytes = json.dumps(config, sort_keys=True).encode()
    config_name = hashlib.sha256(config_bytes).hexdigest() + ".json"
    manifest = [{"Config": config_name, "RepoTags": [ref, *also], "Layers": ["layer.tar"]}]
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    with tarfile.open(tmp, mode="w", format=tarfile.PAX_FORMAT) as tar:
        _add(tar, config_name, config_bytes, mode=0o644)
        _add(tar, "layer.tar", layer, mode=0o644)
        _add(tar, "manifest.json", json.dumps(manifest).encode(), mode=0o644)
    tmp.replace(out)
    return out


def pause_image(out: Path, ref: str, pause_binary: Path) -> Path:
    layer = _layer({"pause": pause_binary.read_bytes()}, {}, ())
    return write_image(out, ref, layer, ["/pause"], [])


def busybox_applets(busybox: Path) -> list[str]:
    done = subprocess.run([str(busybox), "--list"], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise HarnessError(f"{busybox} --list failed: {done.stderr.strip()}")
    return sorted(a for a in done.stdout.split() if a and a != "busybox")


def busybox_image(out: Path, ref: str, busybox: Path) -> Path:
    """busybox-static with one symlink per applet in /bin: `sh`, `env`, `cat`, `sleep`..."""
    links = {f"bin/{applet}": "busybox" for applet in busybox_applets(busybox)}
    layer = _layer({"bin/busybox": busybox.read_bytes()}, links, ("bin", "tmp", "etc", "proc", "sys", "dev"))
    return write_image(out, ref, layer, [], ["sh"])
