"""Planted-bug drivers ("mutants"): a real driver's released module with one of the project's
own patches applied (mutants/<driver>-<version>/<mutant>.patch, a unified diff whose header
names the bug and its expected symptom), built like the driver itself (driverparts): the
module's source copied out of the read-only module cache, `patch -p1` in the copy, `go build`
with its go.mod and go.sum as released. One binary per mutant, cached by its inputs (module
version, Go, the patch's bytes); `qualify` of each must FAIL the capability its bug belongs to
(tests/e2e/test_qualify_mutants.py, docs/qualify.md).
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

from harness.controlplane.build import Progress, _stderr, build_lock, cache_root, go_version, module_dir
from harness.controlplane.buildlog import expectation
from harness.controlplane.nodeparts import _digest, _fresh, _stamp
from harness.controlplane.nvidiaparts import go_build_to
from harness.core.drivers import DriverSpec
from harness.core.errors import HarnessError
from harness.core.versions import REPO_ROOT

MUTANTS_DIR = REPO_ROOT / "mutants"
MAKE_TARGET = "make mutants"
PATCH_TIMEOUT = 60  # seconds: patch on a few files


def patch_dir(spec: DriverSpec, version: str) -> Path:
    return MUTANTS_DIR / f"{spec.name}-{version}"


def mutant_names(spec: DriverSpec, version: str) -> list[str]:
    """The mutants the repository keeps for this driver release, by name."""
    return sorted(p.stem for p in patch_dir(spec, version).glob("*.patch"))


def part_name(spec: DriverSpec, version: str, mutant: str) -> str:
    """The name builds.jsonl and versions.toml [budget.cold_seconds] know the build by."""
    return f"{spec.name} driver {version} mutant {mutant}"


def mutant_path(spec: DriverSpec, version: str, mutant: str) -> Path:
    return cache_root() / "bin" / "mutants" / f"{spec.name}-{version}" / mutant / spec.binary_name


def _patch(spec: DriverSpec, version: str, mutant: str) -> Path:
    path = patch_dir(spec, version) / f"{mutant}.patch"
    if not path.exists():
        known = ", ".join(mutant_names(spec, version)) or "none"
        raise HarnessError(f"no mutant {mutant!r} of {spec.name}@{version} in {path.parent}; known: {known}")
    return path


def _inputs(spec: DriverSpec, version: str, mutant: str) -> str:
    patch = _patch(spec, version, mutant).read_bytes()
    return _digest(spec.module, spec.package, version, ".".join(map(str, go_version())), patch)


def mutant_built(spec: DriverSpec, version: str, mutant: str) -> Path | None:
    """The mutant's binary when built from the current inputs; None otherwise (no build here)."""
    binary = mutant_path(spec, version, mutant)
    return binary if _fresh(binary, _inputs(spec, version, mutant)) else None


def not_built_line(spec: DriverSpec, version: str, mutant: str) -> str:
    return f"mutant {mutant} of {spec.name}@{version} is not built: run `{MAKE_TARGET}`"


def _apply(patch: Path, source: Path, what: str) -> None:
    """`patch -p1` in `source`; one line naming the part and the make target when it does not
    apply (--forward: a patch that looks applied already is refused, not reversed)."""
    argv = ["patch", "-p1", "--forward", "--batch", "--no-backup-if-mismatch", "-i", str(patch)]
    try:
        done = subprocess.run(
            argv, cwd=source, capture_output=True, text=True, timeout=PATCH_TIMEOUT, check=False
        )
    except subprocess.TimeoutExpired:
        raise HarnessError(f"{what}: patch took over {PATCH_TIMEOUT}s ({MAKE_TARGET})") from None
    if done.returncode != 0:
        why = " | ".join((done.stdout + done.stderr).strip().splitlines()[-3:])
        raise HarnessError(f"{what}: {patch.name} does not apply ({MAKE_TARGET}): {why}")


def ensure_mutant(spec: DriverSpec, version: str, mutant: str, progress: Progress = _stderr) -> Path:
    spec.check_version(version)
    binary = mutant_path(spec, version, mutant)
    what = part_name(spec, version, mutant)
    binary.parent.mkdir(parents=True, exist_ok=True)
    with build_lock(binary, what, progress):
        digest = _inputs(spec, version, mutant)
        if _fresh(binary, digest):
            return binary
        progress(f"building {what} into {binary} ({expectation(what)})")
        start = time.monotonic()
        source = binary.parent / "src"
        shutil.rmtree(source, ignore_errors=True)
        # The module cache is read-only: the copy is made writable before it is patched.
        shutil.copytree(module_dir(spec.module, version), source, copy_function=shutil.copyfile)
        source.chmod(0o755)
        for path in source.rglob("*"):
            path.chmod(0o755 if path.is_dir() else 0o644)
        try:
            _apply(_patch(spec, version, mutant), source, what)
            env = {**spec.build_env, "GOFLAGS": "-mod=readonly"}
            try:
                go_build_to([f"./{spec.package}"], source, env, binary, what)
            except HarnessError as err:  # one line: the compiler's last words
                last = str(err).strip().splitlines()[-1]
                raise HarnessError(f"{what}: the build failed ({MAKE_TARGET}): {last}") from None
        finally:
            shutil.rmtree(source, ignore_errors=True)
        _stamp(binary, digest)
        progress(f"{what}: done in {time.monotonic() - start:.0f}s")
    return binary
