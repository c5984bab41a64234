"""The harness image without a registry (harness.clusters.kind.images.pyimage): what
`dra-harness qualify` needs in its in-cluster Job and Sonobuoy plugin (deploy/qualify), never
pulled (`imagePullPolicy: Never`).

Debian's python3 with every dependency at pyproject.toml's pins, and the checkout's parts the
command reads laid out as in the checkout under /opt/dra-harness (the suites and their
fixtures, harness/, fake_driver/, the report templates, versions.toml, pyproject.toml's pytest
settings, conftest.py), so the checkout's root is the image's: `qualify` runs the suites from
there as it does in a checkout. The package is installed as pip would: a .pth naming that
root, a dist-info with its entry points (the pytest plugin the suites' fixtures come from) and
/usr/local/bin/dra-harness.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from harness.clusters.kind.images.pyimage import DIST_PACKAGES, PythonImage, ensure_python_image, project_pins
from harness.controlplane.build import Progress, _stderr
from harness.core.versions import REPO_ROOT

HARNESS_IMAGE = "dra-harness/harness:dev"  # the name deploy/qualify's Job and plugin use
ROOT = "opt/dra-harness"
# What `dra-harness qualify` reads of the checkout, relative to its root.
CHECKOUT_PARTS = (
    "harness",
    "fixtures",
    "fake_driver",
    "suites",
    "reports/templates",
    "versions.toml",
    "pyproject.toml",
    "conftest.py",
)
ENTRY_POINTS = """[console_scripts]
dra-harness = harness.cli.main:main

[pytest11]
dra_harness = fixtures.plugin
"""
LAUNCHER = """#!/usr/bin/python3
import sys

from harness.cli.main import main

sys.exit(main())
"""


def harness_image() -> PythonImage:
    version = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["version"]
    dist_info = f"{DIST_PACKAGES}/dra_harness-{version}.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: dra-harness\nVersion: {version}\n"
    return PythonImage(
        stem="harness",
        ref=HARNESS_IMAGE,
        pins=project_pins(),
        trees={f"{ROOT}/{part}": REPO_ROOT / part for part in CHECKOUT_PARTS},
        files={
            f"{DIST_PACKAGES}/dra-harness.pth": f"/{ROOT}\n".encode(),
            f"{dist_info}/METADATA": metadata.encode(),
            f"{dist_info}/entry_points.txt": ENTRY_POINTS.encode(),
            "usr/local/bin/dra-harness": LAUNCHER.encode(),
        },
        entrypoint=["dra-harness"],
        cmd=["--help"],
    )


def ensure_harness_archive(progress: Progress = _stderr) -> Path:
    """The harness image as a docker-archive, rebuilt when a pin, a file it copies or the root
    filesystem changes."""
    return ensure_python_image(harness_image(), progress)


def built_harness_archive() -> Path | None:
    """The archive of the current inputs when it is built, without building anything."""
    return harness_image().built()
