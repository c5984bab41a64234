"""Real DRA drivers' kubelet plugins, built by the project from the module proxy (versions.toml
[drivers]): `go build` in the downloaded module's own directory with its go.mod and go.sum as
released (-mod=readonly: the module cache is never written). Not `go install <pkg>@<version>`:
it asks the proxy for the module's version list, which answers 403 for these modules. Built
into the same cache as the kubelet, keyed by driver and version, rebuilt only when the recorded
inputs change, one build at a time per binary (a file lock), timed by `dra-harness parts`.
"""

from __future__ import annotations

import time
from pathlib import Path

from harness.controlplane.build import (
    Progress,
    _stderr,
    build_lock,
    cache_root,
    go_version,
    module_dir,
)
from harness.controlplane.buildlog import expectation
from harness.controlplane.nodeparts import _digest, _fresh, _stamp
from harness.controlplane.nvidiaparts import ensure_root_parts, go_build_to, root_parts_built
from harness.core.drivers import DriverSpec

BUILD_TIMEOUT = 1800  # seconds: a cold build with every module downloaded is ~4 minutes here


def part_name(spec: DriverSpec, version: str) -> str:
    """The name builds.jsonl and versions.toml [budget.cold_seconds] know the build by."""
    return f"{spec.name} driver {version}"


def driver_path(spec: DriverSpec, version: str) -> Path:
    return cache_root() / "bin" / "drivers" / f"{spec.name}-{version}" / spec.binary_name


def _inputs(spec: DriverSpec, version: str) -> str:
    # A build env only when set: the plugins built without one keep their cached builds.
    env = (repr(sorted(spec.build_env.items())),) if spec.build_env else ()
    return _digest(spec.module, spec.package, version, ".".join(map(str, go_version())), *env)


def driver_built(spec: DriverSpec, version: str) -> Path | None:
    """The plugin binary when built from the current inputs (and its driver root's parts, for
    a driver with one); None otherwise (no build here)."""
    binary = driver_path(spec, version)
    if not binary.exists() or (spec.root and root_parts_built(spec.root) is None):
        return None
    return binary if _fresh(binary, _inputs(spec, version)) else None


def not_built_line(spec: DriverSpec, version: str) -> str:
    return f"driver {spec.name}@{version} is not built: run `make drivers DRIVER={spec.name}@{version}`"


def ensure_driver(spec: DriverSpec, version: str, progress: Progress = _stderr) -> Path:
    spec.check_version(version)
    binary = driver_path(spec, version)
    what = part_name(spec, version)
    with build_lock(binary, what, progress):
        digest = _inputs(spec, version)
        if spec.root:
            ensure_root_parts(spec.root, progress)
        if _fresh(binary, digest):
            return binary
        ref = f"{spec.module}/{spec.package}@{version}"
        progress(f"building {ref} into {binary} ({expectation(what)})")
        source = module_dir(spec.module, version)
        start = time.monotonic()
        env = {**spec.build_env, "GOFLAGS": "-mod=readonly"}
        go_build_to([f"./{spec.package}"], source, env, binary, ref)
        _stamp(binary, digest)
        progress(f"{what}: done in {time.monotonic() - start:.0f}s")
    return binary
