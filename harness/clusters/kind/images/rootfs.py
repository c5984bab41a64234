"""Debian root filesystems made with debootstrap, cached as tarballs keyed by their inputs.

The node image starts from one (kind's images/base/Dockerfile installs the same packages into
debian:*-slim); so does the fake driver's image. The mirror is the one apt on this machine
uses, so a machine without a registry but with a Debian mirror builds the same bytes.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import tempfile
import time
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.controlplane.build import Progress, _stderr, build_lock, cache_root
from harness.core.errors import HarnessError
from harness.core.versions import VERSIONS_FILE

DEFAULT_MIRROR = "http://deb.debian.org/debian"
SOURCES = (Path("/etc/apt/sources.list.d/debian.sources"), Path("/etc/apt/sources.list"))


@dataclass(frozen=True)
class KindPins:
    """versions.toml [kind]: the local images' inputs beside the release."""

    node_suite: str
    node_apt: tuple[str, ...]
    crictl_module: str
    crictl_version: str


def kind_pins() -> KindPins:
    kind = tomllib.loads(VERSIONS_FILE.read_text())["kind"]
    try:
        return KindPins(
            str(kind["node_suite"]),
            tuple(map(str, kind["node_apt"])),
            str(kind["crictl_module"]),
            str(kind["crictl_version"]),
        )
    except KeyError as err:
        raise HarnessError(f"versions.toml [kind] has no {err.args[0]}") from None


def apt_mirror() -> str:
    """The Debian mirror apt is configured with (deb822 or one-line format)."""
    for path in SOURCES:
        if not path.exists():
            continue
        text = path.read_text()
        m = re.search(r"^URIs:\s*(\S+/debian)\s*$", text, re.MULTILINE) or re.search(
            r"^deb\s+(?:\[[^]]*\]\s+)?(\S+/debian)\s", text, re.MULTILINE
        )
        if m:
            return m.group(1)
    return DEFAULT_MIRROR


def rootfs_digest(suite: str, packages: Sequence[str], mirror: str) -> str:
    return hashlib.sha256("\0".join([suite, mirror, *sorted(packages)]).encode()).hexdigest()


def rootfs_path(name: str, suite: str, packages: Sequence[str]) -> Path:
    """Where the tarball of these inputs is (or would be) in the cache."""
    digest = rootfs_digest(suite, packages, apt_mirror())
    return cache_root() / "kind" / "rootfs" / f"{name}-{suite}-{digest[:16]}.tar"


def ensure_rootfs(name: str, suite: str, packages: Sequence[str], progress: Progress = _stderr) -> Path:
    """The tarball of `debootstrap --variant=minbase --include=packages suite`, built once per
    inputs (a lock; a killed build leaves only a temporary directory, removed next time)."""
    if shutil.which("debootstrap") is None:
        raise HarnessError("debootstrap is not installed: make kind-engine")
    mirror = apt_mirror()
    tarball = rootfs_path(name, suite, packages)
    with build_lock(tarball, f"the {name} root filesystem", progress):
        if tarball.exists():
            return tarball
        for stale in tarball.parent.glob(f"{name}-*.tmp"):
            shutil.rmtree(stale, ignore_errors=True)
        work = Path(tempfile.mkdtemp(prefix=f"{name}-", suffix=".tmp", dir=tarball.parent))
        try:
            progress(f"debootstrap {suite} for the {name} image from {mirror} (cold: ~2 min)")
            start = time.monotonic()
            root = work / "root"
            argv = [
                "debootstrap",
                "--variant=minbase",
                f"--include={','.join(packages)}",
                suite,
                str(root),
                mirror,
            ]
            done = subprocess.run(argv, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise HarnessError(f"debootstrap failed: {done.stdout.strip()[-1500:]}")
            for cache in ("var/cache/apt/archives", "var/lib/apt/lists"):
                for f in (root / cache).glob("*"):
                    if f.is_file():
                        f.unlink()
            part = work / "rootfs.tar"
            subprocess.run(["tar", "-C", str(root), "--numeric-owner", "-cf", str(part), "."], check=True)
            part.rename(tarball)
            size = tarball.stat().st_size / 2**20
            progress(f"{name} root filesystem: {size:.0f} MiB in {time.monotonic() - start:.0f}s")
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return tarball
