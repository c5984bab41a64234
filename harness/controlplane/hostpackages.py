"""The Debian packages the parts need from the host (runc, the CNI plugins, iptables, the kind
engine, Chromium...: versions.toml [nodes] apt_packages, [kind] engine_apt, [test] apt),
installed by one apt-get with its index updated once, bounded in time."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable

from harness.controlplane.build import Progress
from harness.core.errors import HarnessError
from harness.core.versions import Matrix

APT_TIMEOUT = 1800  # seconds: apt-get on a slow mirror, bounded all the same


def apt_missing(packages: Iterable[str]) -> list[str]:
    missing = []
    for package in packages:
        done = subprocess.run(["dpkg", "-s", package], capture_output=True, check=False, timeout=60)
        if done.returncode != 0:
            missing.append(package)
    return missing


def host_packages(matrix: Matrix, set_name: str = "test") -> list[str]:
    """The Debian packages a set needs, installed by one apt-get (one index update)."""
    extra = matrix.test_apt if set_name == "test" else ()
    return sorted({*matrix.nodes.apt_packages, *matrix.kind_engine_apt, *extra})


def apt_install(packages: list[str], progress: Progress) -> None:
    missing = apt_missing(packages)
    if not missing:
        return
    sudo = [] if os.geteuid() == 0 else ["sudo", "-n"]
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    progress(f"apt-get install {' '.join(missing)}")
    for argv in (["apt-get", "update"], ["apt-get", "install", "-y", "--no-install-recommends", *missing]):
        try:
            done = subprocess.run(
                [*sudo, *argv], capture_output=True, text=True, env=env, timeout=APT_TIMEOUT, check=False
            )
        except subprocess.TimeoutExpired:
            raise HarnessError(f"{' '.join(argv[:2])} took over {APT_TIMEOUT}s") from None
        if done.returncode != 0:
            raise HarnessError(f"{' '.join(argv[:2])} failed: {done.stderr.strip()[-600:]}")
