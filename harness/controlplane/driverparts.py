"""Real DRA drivers' kubelet plugins, built by the project from the module proxy (versions.toml
[drivers]): `go build` in the downloaded module's own directory with its go.mod and go.sum as
released (-mod=readonly: the module cache is never written). Not `go install <pkg>@<version>`:
it asks the proxy for the module's version list, which answers 403 for these modules. Built
into the same cache as the kubelet, keyed by driver and version, rebuilt only when the recorded
inputs change, one build at a time per binary (a file lock), timed by `dra-harness parts`.

A release whose go.mod pins a module the proxy does not serve (versions.toml [drivers.*.unserved])
is built in a workspace: a go.work beside the binary `use`s the released module directory and
`replace`s each such module by what stands in for it (a directory of this repository, or the
module's own zip, unpacked in the module cache, when only its .info and .mod answer 403).
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from harness.controlplane.build import (
    Progress,
    _go_env,
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
from harness.core.errors import HarnessError
from harness.core.versions import REPO_ROOT

BUILD_TIMEOUT = 1800  # seconds: a cold build with every module downloaded is ~4 minutes here


def part_name(spec: DriverSpec, version: str) -> str:
    """The name builds.jsonl and versions.toml [budget.cold_seconds] know the build by."""
    return f"{spec.name} driver {version}"


def driver_path(spec: DriverSpec, version: str) -> Path:
    return cache_root() / "bin" / "drivers" / f"{spec.name}-{version}" / spec.binary_name


def _stand_in_files(unserved: dict[str, str]) -> list[bytes]:
    files = sorted(p for d in unserved.values() if d for p in (REPO_ROOT / d).rglob("*") if p.is_file())
    return [f"{p.relative_to(REPO_ROOT)}".encode() + p.read_bytes() for p in files]


def _inputs(spec: DriverSpec, version: str) -> str:
    # A build env only when set: the plugins built without one keep their cached builds.
    env = (repr(sorted(spec.build_env.items())),) if spec.build_env else ()
    unserved = dict(spec.unserved.get(version, {}))
    extra: list[str | bytes] = [repr(sorted(unserved.items())), *_stand_in_files(unserved)]
    extra = extra if unserved else []
    return _digest(spec.module, spec.package, version, ".".join(map(str, go_version())), *env, *extra)


def _unpacked(ref: str, source: Path, package: str) -> Path:
    """The module cache directory of `ref`'s zip. `go mod download` asks for its .info first
    (403 for these); a package listing of the plugin fetches the zips its imports need and
    checks them against the released go.sum, then stops at the missing .mod (expected)."""
    module, _, version = ref.partition("@")
    argv = ["go", "env", "GOMODCACHE"]
    asked = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True)
    gomodcache = Path(asked.stdout.strip())
    escaped = "".join(f"!{c.lower()}" if c.isupper() else c for c in module)
    unpacked = gomodcache / f"{escaped}@{version}"
    if not unpacked.is_dir():
        subprocess.run(
            ["go", "list", "-e", "-deps", f"./{package}"],
            cwd=source,
            env=_go_env() | {"GOFLAGS": "-mod=readonly"},
            capture_output=True,
            timeout=BUILD_TIMEOUT,
            check=False,
        )
    if not unpacked.is_dir():
        raise HarnessError(f"{ref}: the module proxy serves neither its .mod nor its .zip here")
    return unpacked


def _workspace(spec: DriverSpec, version: str, source: Path, binary: Path) -> dict[str, str]:
    """GOWORK for a release with unserved modules ({} for the others)."""
    unserved = spec.unserved.get(version, {})
    if not unserved:
        return {}
    lines = [f"go {'.'.join(map(str, go_version()))}", "", f"use {source}", ""]
    for ref, stand_in in sorted(unserved.items()):
        target = REPO_ROOT / stand_in if stand_in else _unpacked(ref, source, spec.package)
        lines.append(f"replace {ref.replace('@', ' ')} => {target}")
    work = binary.with_name("go.work")
    work.write_text("\n".join(lines) + "\n")
    return {"GOWORK": str(work)}


def driver_built(spec: DriverSpec, version: str) -> Path | None:
    """The plugin binary when built from the current inputs (and its driver root's parts, for
    a driver with one); None otherwise (no build here)."""
    binary = driver_path(spec, version)
    if not binary.exists() or (spec.root and root_parts_built(spec.root_for(version)) is None):
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
            ensure_root_parts(spec.root_for(version), progress)
        if _fresh(binary, digest):
            return binary
        ref = f"{spec.module}/{spec.package}@{version}"
        progress(f"building {ref} into {binary} ({expectation(what)})")
        source = module_dir(spec.module, version)
        start = time.monotonic()
        binary.parent.mkdir(parents=True, exist_ok=True)
        env = {**spec.build_env, "GOFLAGS": "-mod=readonly", **_workspace(spec, version, source, binary)}
        go_build_to([f"./{spec.package}"], source, env, binary, ref)
        _stamp(binary, digest)
        progress(f"{what}: done in {time.monotonic() - start:.0f}s")
    return binary
