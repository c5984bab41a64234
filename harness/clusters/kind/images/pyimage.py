"""Images of the project's Python code without a registry, the one recipe the fake driver's
image (harness.clusters.kind.images.driver) and the harness image
(harness.clusters.kind.images.harnessimage) share: Debian's python3 on a debootstrap root
filesystem, dependencies at pyproject.toml's pins (installed with pip for Debian's Python into
/usr/local/lib/python3.X/dist-packages, on its default path), the project's own trees copied
in, written as a one-layer docker-archive (harness.controlplane.images) and cached by its
inputs: the pins, the root filesystem, every copied file and this recipe.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.clusters.kind.images.cpimages import rootfs_layer
from harness.clusters.kind.images.rootfs import ensure_rootfs, kind_pins, rootfs_path
from harness.controlplane import images
from harness.controlplane.build import Progress, _stderr, build_lock, cache_root
from harness.core.errors import HarnessError
from harness.core.versions import REPO_ROOT

DEBIAN_PYTHON = "3.11"  # bookworm's python3
DIST_PACKAGES = f"usr/local/lib/python{DEBIAN_PYTHON}/dist-packages"
# The root filesystem both images start from (named after the first image that used it).
ROOTFS_NAME, ROOTFS_PACKAGES = "driver", ("python3",)
PIP_TIMEOUT = 900  # a cold install of every pin, downloads included
IGNORED = ("__pycache__", "*.pyc")


def project_pins(names: Collection[str] | None = None) -> list[str]:
    """`name==version` of the dependencies `names` (every one when None), as pyproject.toml pins them."""
    deps = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    if names is None:
        return sorted(deps)
    pins = [d for d in deps if re.split(r"[=<>~! \[]", d, maxsplit=1)[0].lower() in names]
    if len(pins) != len(names):
        raise HarnessError(f"pyproject.toml does not pin all of {', '.join(sorted(names))}")
    return sorted(pins)


@dataclass(frozen=True, kw_only=True)
class PythonImage:
    """What one image holds beside Debian's python3."""

    stem: str  # the archive's name in the cache: <stem>-<digest>.tar
    ref: str  # the image's name and tag
    pins: Sequence[str]
    trees: Mapping[str, Path]  # path in the image -> a directory or file of the project, copied in
    files: Mapping[str, bytes] = field(default_factory=dict)  # path in the image -> content
    entrypoint: Sequence[str] = ()
    cmd: Sequence[str] = ()

    def _sources(self) -> list[tuple[str, Path]]:
        found = []
        for name, path in sorted(self.trees.items()):
            items = sorted(path.rglob("*")) if path.is_dir() else [path]
            for item in items:
                if item.is_file() and not any(item.match(p) or p in item.parts for p in IGNORED):
                    found.append((f"{name}/{item.relative_to(path)}" if path.is_dir() else name, item))
        return found

    def digest(self) -> str:
        """The inputs: the recipe (this module), pins, root filesystem, files and every copied file."""
        pins = kind_pins()
        rootfs = rootfs_path(ROOTFS_NAME, pins.node_suite, ROOTFS_PACKAGES)
        h = hashlib.sha256(Path(__file__).read_bytes())
        for item in [self.ref, rootfs.name, *self.pins, *self.entrypoint, "\0", *self.cmd]:
            h.update(item.encode() + b"\0")
        for name, content in sorted(self.files.items()):
            h.update(name.encode() + b"\0" + content + b"\0")
        for name, path in self._sources():
            h.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
        return h.hexdigest()[:16]

    def archive(self) -> Path:
        """Where the archive of these inputs is (or would be) in the cache."""
        return cache_root() / "kind" / "images" / f"{self.stem}-{self.digest()}.tar"

    def built(self) -> Path | None:
        archive = self.archive()
        return archive if archive.exists() else None


def _pip_install(pins: Sequence[str], site: Path, progress: Progress) -> None:
    progress(f"pip install {len(pins)} pins for Debian's Python {DEBIAN_PYTHON} ({', '.join(pins)})")
    argv = [sys.executable, "-m", "pip", "install", "--quiet", "--target", str(site)]
    argv += ["--only-binary=:all:", "--python-version", DEBIAN_PYTHON, "--no-compile", *pins]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=PIP_TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        raise HarnessError(f"pip install for an image took over {PIP_TIMEOUT}s") from None
    if done.returncode != 0:
        raise HarnessError(f"pip install for an image failed: {done.stderr.strip()[-800:]}")


def _stage(image: PythonImage, root: Path) -> None:
    """The image's files (a `#!` script executable) and the project's trees under `root`."""
    for name, content in image.files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(content)
        (root / name).chmod(0o755 if content.startswith(b"#!") else 0o644)
    for name, path in image.trees.items():
        if path.is_dir():
            shutil.copytree(path, root / name, ignore=shutil.ignore_patterns(*IGNORED))
        else:
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, root / name)


def ensure_python_image(image: PythonImage, progress: Progress = _stderr) -> Path:
    """The image as a docker-archive, rebuilt when any of its inputs changes (older archives of
    the same stem are removed)."""
    rootfs = ensure_rootfs(ROOTFS_NAME, kind_pins().node_suite, ROOTFS_PACKAGES, progress)
    archive = image.archive()
    with build_lock(archive, f"the image {image.ref}", progress):
        if archive.exists():
            return archive
        for stale in archive.parent.glob(f"{image.stem}-*.tar"):
            stale.unlink()
        start = time.monotonic()
        work = Path(tempfile.mkdtemp(prefix=f"{image.stem}-", dir=archive.parent))
        try:
            root = work / "root"  # what goes on top of the root filesystem, staged
            _pip_install(image.pins, root / DIST_PACKAGES, progress)
            _stage(image, root)
            progress(f"writing {image.ref}")
            extra = {top.name: top for top in root.iterdir()}  # directories it has already: skipped
            layer = rootfs_layer(rootfs, extra, {"usr/local/bin/python": "/usr/bin/python3"})
            images.write_image(archive, image.ref, layer, list(image.entrypoint), list(image.cmd))
            size = archive.stat().st_size / 2**20
            progress(f"{image.ref}: {archive} ({size:.0f} MiB) in {time.monotonic() - start:.0f}s")
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return archive
