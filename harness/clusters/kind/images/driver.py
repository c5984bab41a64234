"""The fake driver's image without a registry (harness.clusters.kind.images.pyimage): Debian's
python3, the driver's dependencies at the project's pins and fake_driver/ itself, on Python's
default path. deploy/Dockerfile builds the same image where a registry exists."""

from __future__ import annotations

from pathlib import Path

from harness.clusters.kind.images.pyimage import DIST_PACKAGES, PythonImage, ensure_python_image, project_pins
from harness.controlplane.build import Progress, _stderr
from harness.core.versions import REPO_ROOT

DRIVER_IMAGE = "dra-harness/fake-driver:dev"  # the name deploy/manifests use
DEPENDENCIES = ("grpcio", "protobuf", "kubernetes", "pyyaml")  # what fake_driver imports


def driver_pins() -> list[str]:
    """`name==version` of DEPENDENCIES, as pyproject.toml pins them."""
    return project_pins(DEPENDENCIES)


def driver_image() -> PythonImage:
    return PythonImage(
        stem="fake-driver",
        ref=DRIVER_IMAGE,
        pins=driver_pins(),
        trees={f"{DIST_PACKAGES}/fake_driver": REPO_ROOT / "fake_driver"},
        entrypoint=["python", "-m", "fake_driver.kubeletplugin"],
    )


def ensure_driver_archive(progress: Progress = _stderr) -> Path:
    """The driver image as a docker-archive, rebuilt when the pins, fake_driver/ or the root
    filesystem change."""
    return ensure_python_image(driver_image(), progress)
