"""Build upstream's scheduler_perf framework (k8s.io/kubernetes
test/integration/scheduler_perf) into a test binary for one Kubernetes minor, from the
module cache the control-plane build fills: controlplane/schedperf is a package of the
project's own that runs a performance-config named in the environment.

The control plane's modfile is copied next to the binary, because Go adds the framework's
test-only modules (go.uber.org/goleak, github.com/onsi/gomega) to it with -mod=mod; the
repository's modfile stays as generated. The binary is rebuilt only when an input changes,
as k8slocal is (build.py), under the same kind of lock.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import time
from pathlib import Path

from harness.controlplane.build import (
    CONTROLPLANE_DIR,
    Progress,
    _go_env,
    _stderr,
    _temp_path,
    cache_root,
    check_go,
    ensure_built,
    go_identity,
    modfile_path,
)
from harness.core.errors import HarnessError
from harness.core.versions import Minor

PACKAGE = "./schedperf"
BUILD_TIMEOUT = 1800  # a cold build of the framework and the API server it embeds, on 2 cores


def schedperf_dir(minor: Minor) -> Path:
    return cache_root() / "schedperf" / minor.kubernetes


def _inputs_hash(minor: Minor) -> str:
    h = hashlib.sha256(minor.kubernetes.encode())
    mod = modfile_path(minor)
    for path in [mod, mod.with_suffix(".sum"), *sorted((CONTROLPLANE_DIR / "schedperf").glob("*.go"))]:
        h.update(path.name.encode())
        h.update(path.read_bytes())
    h.update(go_identity(minor).encode())
    return h.hexdigest()


def ensure_schedperf(minor: Minor, progress: Progress = _stderr) -> Path:
    """Return scheduler_perf's test binary for `minor`, building it first if its inputs changed."""
    mod = modfile_path(minor)
    if not mod.exists():
        raise HarnessError(f"{mod} is missing; run `python -m harness.controlplane.modfile {minor.name}`")
    check_go(mod, f"scheduler_perf {minor.kubernetes}", minor)
    work = schedperf_dir(minor)
    binary = work / "schedperf.test"
    return ensure_built(
        binary,
        _inputs_hash(minor),
        f"scheduler_perf {minor.kubernetes}",
        lambda: _build(minor, work, binary, progress),
        progress,
    )


def _build(minor: Minor, work: Path, binary: Path, progress: Progress) -> None:
    mod = modfile_path(minor)
    copy = work / "schedperf.mod"
    shutil.copyfile(mod, copy)
    shutil.copyfile(mod.with_suffix(".sum"), copy.with_suffix(".sum"))
    tmp = _temp_path(work, binary.name + ".")
    progress(f"building scheduler_perf {minor.kubernetes} into {binary} (cold: minutes; warm: ~10 s)")
    start = time.monotonic()
    # -trimpath as the control plane, so the two share Go's build cache.
    cmd = ["go", "test", "-c", "-trimpath", f"-modfile={copy}", "-o", str(tmp), PACKAGE]
    try:
        done = subprocess.run(
            cmd,
            cwd=CONTROLPLANE_DIR,
            env=_go_env(minor),
            capture_output=True,
            text=True,
            check=False,
            timeout=BUILD_TIMEOUT,
        )
        if done.returncode != 0:
            raise HarnessError(
                f"building scheduler_perf {minor.kubernetes} failed:\n{done.stderr.strip()[-2000:]}"
            )
        tmp.replace(binary)
    except subprocess.TimeoutExpired as e:
        raise HarnessError(f"building scheduler_perf {minor.kubernetes}: not done in {BUILD_TIMEOUT}s") from e
    finally:
        tmp.unlink(missing_ok=True)
    progress(f"scheduler_perf {minor.kubernetes}: done in {time.monotonic() - start:.0f}s")


def etcd_wrapper(minor: Minor, k8slocal: Path) -> Path:
    """A directory with an `etcd` that runs k8slocal's: the framework starts `etcd` from PATH."""
    bindir = schedperf_dir(minor) / "path"
    bindir.mkdir(parents=True, exist_ok=True)
    script = bindir / "etcd"
    text = f'#!/bin/sh\nexec "{k8slocal}" etcd "$@"\n'
    if not script.exists() or script.read_text() != text:
        tmp = _temp_path(bindir, "etcd.")
        tmp.write_text(text)
        tmp.chmod(0o755)
        tmp.replace(script)
    return bindir
