"""The fake driver's image without a registry: Debian's python3 on a debootstrap root
filesystem, the driver's dependencies at the project's pins (pyproject.toml, installed with
pip for Debian's Python into /usr/local/lib/python3.X/dist-packages, on its default path) and
fake_driver/ itself. deploy/Dockerfile builds the same image where a registry exists."""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

from harness.clusters.kind.images.cpimages import rootfs_layer
from harness.clusters.kind.images.rootfs import ensure_rootfs, kind_pins
from harness.controlplane import images
from harness.controlplane.build import Progress, _stderr, build_lock, cache_root
from harness.core.errors import HarnessError
from harness.core.versions import REPO_ROOT

DRIVER_IMAGE = "dra-harness/fake-driver:dev"  # the name deploy/manifests use
DEPENDENCIES = ("grpcio", "protobuf", "kubernetes", "pyyaml")  # what fake_driver imports
DEBIAN_PYTHON = "3.11"  # bookworm's python3


def driver_pins() -> list[str]:
    """`name==version` of DEPENDENCIES, as pyproject.toml pins them."""
    deps = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    pins = [d for d in deps if re.split(r"[=<>~! \[]", d, maxsplit=1)[0].lower() in DEPENDENCIES]
    if len(pins) != len(DEPENDENCIES):
        raise HarnessError(f"pyproject.toml does not pin all of {', '.join(DEPENDENCIES)}")
    return sorted(pins)


def _source_digest() -> str:
    h = hashlib.sha256(Path(__file__).read_bytes())
    for path in sorted((REPO_ROOT / "fake_driver").rglob("*.py")):
        h.update(str(path.relative_to(REPO_ROOT)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def ensure_driver_archive(progress: Progress = _stderr) -> Path:
    """The driver image as a docker-archive, rebuilt when the pins, fake_driver/ or the root
    filesystem change."""
    pins = driver_pins()
    rootfs = ensure_rootfs("driver", kind_pins().node_suite, ["python3"], progress)
    digest = hashlib.sha256("\0".join([*pins, rootfs.name, _source_digest()]).encode()).hexdigest()[:16]
    archive = cache_root() / "kind" / "images" / f"fake-driver-{digest}.tar"
    with build_lock(archive, "the fake driver image", progress):
        if archive.exists():
            return archive
        for stale in archive.parent.glob("fake-driver-*.tar"):
            stale.unlink()
        work = Path(tempfile.mkdtemp(prefix="driver-", dir=archive.parent))
        try:
            site = work / "site"
            progress(f"pip install {' '.join(pins)} for Debian's Python {DEBIAN_PYTHON}")
            argv = [sys.executable, "-m", "pip", "install", "--quiet", "--target", str(site)]
            argv += ["--only-binary=:all:", "--python-version", DEBIAN_PYTHON, "--no-compile", *pins]
            done = subprocess.run(argv, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise HarnessError(f"pip install for the driver image failed: {done.stderr.strip()[-800:]}")
            shutil.copytree(
                REPO_ROOT / "fake_driver", site / "fake_driver", ignore=shutil.ignore_patterns("__pycache__")
            )
            dist = f"usr/local/lib/python{DEBIAN_PYTHON}/dist-packages"
            layer = rootfs_layer(rootfs, {dist: site}, {"usr/local/bin/python": "/usr/bin/python3"})
            images.write_image(
                archive, DRIVER_IMAGE, layer, ["python", "-m", "fake_driver.kubeletplugin"], []
            )
            progress(f"{DRIVER_IMAGE}: {archive} ({archive.stat().st_size / 2**20:.0f} MiB)")
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return archive
