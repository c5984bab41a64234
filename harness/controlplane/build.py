"""Build the k8slocal multi-call binary (etcd, kube-apiserver, kube-scheduler,
kube-controller-manager) for one Kubernetes minor, and the kwok node simulator.

Binaries go to a cache outside the repo, keyed by version, and are rebuilt only when
an input changes (modfile, go.sum, Go sources, Go version, ldflags): a stamp file next
to the binary records the hash of those inputs. A lock file next to each binary lets one
process build it at a time; another waits, then uses that build.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from harness.controlplane.buildlog import cache_root as cache_root
from harness.controlplane.buildlog import expectation, expected_seconds
from harness.controlplane.modfile import standins_used, without_standins
from harness.core.errors import HarnessError
from harness.core.versions import REPO_ROOT, Matrix, Minor, minor_number

CONTROLPLANE_DIR = REPO_ROOT / "controlplane"
MAIN_PACKAGE = "./cmd/k8slocal"

Progress = Callable[[str], None]


def modfile_path(minor: Minor) -> Path:
    return CONTROLPLANE_DIR / "mod" / f"{minor.name}.mod"


def binary_path(minor: Minor) -> Path:
    return cache_root() / "bin" / minor.kubernetes / "k8slocal"


def kwok_path(matrix: Matrix) -> Path:
    return cache_root() / "bin" / f"kwok-{matrix.kwok_version}" / "kwok"


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def go_version(minor: Minor | None = None) -> tuple[int, int, int]:
    """The version of the Go that builds `minor` (its go_toolchain, fetched by the go command
    on first use), or of the local Go."""
    go = shutil.which("go")
    if go is None:
        raise HarnessError(
            "Go is not installed (no `go` on PATH); the local provider builds Kubernetes with it"
        )
    done = subprocess.run(
        [go, "env", "GOVERSION"],
        env=_go_env(minor),
        cwd=tempfile.gettempdir(),
        capture_output=True,
        text=True,
        check=False,
    )
    out = done.stdout
    if done.returncode != 0 and minor is not None and minor.go_toolchain:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        raise HarnessError(
            f"cannot fetch the Go toolchain GOTOOLCHAIN={minor.go_toolchain} that Kubernetes "
            f"{minor.kubernetes} needs from the module proxy (GOPROXY={_goproxy()}): "
            f"{lines[-1].strip() if lines else f'exit {done.returncode}'}"
        )
    m = re.match(r"go(\d+)\.(\d+)(?:\.(\d+))?", out.strip())
    if not m:
        raise HarnessError(f"cannot tell the Go version from `go env GOVERSION`: {out.strip()!r}")
    return int(m[1]), int(m[2]), int(m[3] or 0)


def _goproxy() -> str:
    """The proxy the go command fetches from (the environment's, else go's own setting)."""
    if os.environ.get("GOPROXY"):
        return os.environ["GOPROXY"]
    done = subprocess.run(
        ["go", "env", "GOPROXY"],
        env=dict(os.environ, GOTOOLCHAIN="local"),  # the local Go answers: no fetch
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )
    return done.stdout.strip() or "unset"


def go_identity(minor: Minor) -> str:
    """What names the Go that builds `minor`, for the inputs hashes: its go_toolchain (without
    running go, so a check never fetches a toolchain), else the local Go's version."""
    if minor.go_toolchain:
        return f"GOTOOLCHAIN={minor.go_toolchain}"
    return ".".join(map(str, go_version()))


def required_go(modfile: Path) -> tuple[int, int, int]:
    m = re.search(r"^go (\d+)\.(\d+)(?:\.(\d+))?", modfile.read_text(), re.MULTILINE)
    if not m:
        raise HarnessError(f"{modfile} has no go directive")
    return int(m[1]), int(m[2]), int(m[3] or 0)


def check_go(modfile: Path, what: str, minor: Minor | None = None) -> None:
    """The Go that builds `minor` (fetching its toolchain first) can build `modfile`."""
    have, need = go_version(minor), required_go(modfile)
    if have < need and minor is not None and minor.go_toolchain:
        raise HarnessError(
            f"versions.toml go_toolchain {minor.go_toolchain} of {minor.name} is older than the "
            f"Go {'.'.join(map(str, need))} {what} needs"
        )
    if have < need:
        raise HarnessError(
            f"Go {'.'.join(map(str, need))} or newer is needed to build {what}; "
            f"found go{'.'.join(map(str, have))}"
        )


def ldflags(minor: Minor) -> str:
    major_s, minor_s = map(str, minor_number(minor.name))
    stamp = {
        "gitVersion": minor.kubernetes,
        "gitMajor": major_s,
        "gitMinor": minor_s,
        "gitTreeState": "clean",
        "buildDate": "1970-01-01T00:00:00Z",  # fixed, so the build is reproducible
    }
    pairs = [
        f"-X {pkg}.{key}={value}"
        for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")
        for key, value in stamp.items()
    ]
    return " ".join(["-s", "-w", *pairs])


def _inputs_hash(minor: Minor) -> str:
    h = hashlib.sha256()
    mod = modfile_path(minor)
    h.update(mod.name.encode())
    h.update(without_standins(mod.read_text()).encode())  # k8slocal imports no stand-in
    for path in [mod.with_suffix(".sum"), *sorted((CONTROLPLANE_DIR / "cmd").rglob("*.go"))]:
        h.update(path.name.encode())
        h.update(path.read_bytes())
    h.update(go_identity(minor).encode())
    h.update(ldflags(minor).encode())
    return h.hexdigest()


def _go_env(minor: Minor | None = None) -> dict[str, str]:
    """The environment of every go command; for a minor with a go_toolchain (versions.toml),
    GOTOOLCHAIN names it, so the go command fetches and runs that release whatever Go is local."""
    env = dict(os.environ)
    env.setdefault("GOFLAGS", "-mod=mod")
    env["CGO_ENABLED"] = "0"  # static binary; no C toolchain quirks
    if minor is not None and minor.go_toolchain:
        env["GOTOOLCHAIN"] = minor.go_toolchain
    return env


def _run_with_progress(
    cmd: list[str],
    total: int,
    label: str,
    cwd: Path,
    progress: Progress,
    expected: float | None = None,
    env: dict[str, str] | None = None,
) -> None:
    """Run `go build -v`, turning its one-line-per-package output into a progress line, with
    the time left by the `expected` duration (measured here, or the budget) when there is one."""
    start = time.monotonic()
    built, next_report = 0, 0.0
    tail: list[str] = []
    proc = subprocess.Popen(
        cmd, cwd=cwd, env=env or _go_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        tail = [*tail[-19:], line.rstrip()]
        if not line.startswith(("#", " ", "go: ")):
            built += 1
        elapsed = time.monotonic() - start
        if elapsed >= next_report:
            left = f", ~{expected - elapsed:.0f}s left" if expected and expected > elapsed else ""
            progress(f"{label}: {min(built, total)}/{total} packages, {elapsed:.0f}s{left}")
            next_report = elapsed + 15
    if proc.wait() != 0:
        raise HarnessError(f"{label} failed (exit {proc.returncode}):\n" + "\n".join(tail))
    progress(f"{label}: done in {time.monotonic() - start:.0f}s")


@contextlib.contextmanager
def build_lock(output: Path, what: str, progress: Progress) -> Iterator[None]:
    """Hold `<output>.lock` while building `output`: two builders would write the same files.
    The kernel drops the lock when its holder exits, so a killed build leaves no stale lock."""
    output.parent.mkdir(parents=True, exist_ok=True)
    with output.with_name(output.name + ".lock").open("a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            progress(f"waiting for another build of {what} ({output})")
            fcntl.flock(lock, fcntl.LOCK_EX)
        yield  # closing the file releases the lock


def _temp_path(directory: Path, prefix: str) -> Path:
    """A file name no other build uses at the same time."""
    fd, name = tempfile.mkstemp(dir=directory, prefix=prefix, suffix=".tmp")
    os.close(fd)
    return Path(name)


def ensure_controlplane(minor: Minor, progress: Progress = _stderr) -> Path:
    """Return the k8slocal binary for `minor`, building it first if its inputs changed."""
    if minor.unavailable:
        raise HarnessError(
            f"Kubernetes {minor.name} is marked unavailable in versions.toml: {minor.unavailable}"
        )
    mod = modfile_path(minor)
    if not mod.exists():
        raise HarnessError(f"{mod} is missing; run `python -m harness.controlplane.modfile {minor.name}`")
    check_go(mod, f"Kubernetes {minor.kubernetes}", minor)
    binary = binary_path(minor)

    def build() -> None:
        _build_controlplane(minor, binary, progress)
        binary.with_name("featuregates.json").unlink(missing_ok=True)

    return ensure_built(binary, _inputs_hash(minor), f"k8slocal {minor.kubernetes}", build, progress)


def controlplane_built(minor: Minor) -> bool:
    """Whether `minor`'s binary is built from today's inputs (ensure_controlplane would not
    build): what a step that must not start a long build checks first."""
    binary, mod = binary_path(minor), modfile_path(minor)
    stamp = binary.with_name("inputs.sha256")
    if minor.unavailable or not mod.exists() or not binary.exists() or not stamp.exists():
        return False
    return stamp.read_text() == _inputs_hash(minor)


def ensure_built(binary: Path, digest: str, what: str, build: Callable[[], None], progress: Progress) -> Path:
    """`binary`, built by `build` first unless the stamp beside it (inputs.sha256) records
    `digest`; one builder at a time (build_lock)."""
    stamp = binary.with_name("inputs.sha256")

    def built() -> bool:
        return binary.exists() and stamp.exists() and stamp.read_text() == digest

    if built():
        return binary
    with build_lock(binary, what, progress):
        if not built():  # else another process built it while this one waited
            build()
            stamp.write_text(digest)
    return binary


def _build_controlplane(minor: Minor, binary: Path, progress: Progress) -> None:
    mod = modfile_path(minor)
    modflag = f"-modfile={mod.relative_to(CONTROLPLANE_DIR)}"
    progress(f"building k8slocal {minor.kubernetes} into {binary} ({expectation(f'k8slocal {minor.name}')})")
    label, part = f"k8slocal {minor.kubernetes}", f"k8slocal {minor.name}"
    go_build(minor, modflag, MAIN_PACKAGE, binary, label, progress, expected_seconds(part))


def standin_sources(modfile: Path) -> list[Path]:
    """The Go files of every stand-in `modfile` replaces a module with (its build's inputs);
    a stand-in directory that is missing is refused in one line, before anything is built."""
    files: list[Path] = []
    for s in standins_used(modfile.read_text()):
        directory = CONTROLPLANE_DIR / s.directory
        if not (directory / "go.mod").is_file():
            raise HarnessError(
                f"{modfile.name} replaces {s.module} with ./{s.directory}, which is missing "
                f"({directory / 'go.mod'}); regenerate it: python -m harness.controlplane.modfile"
            )
        files += sorted(p for p in directory.rglob("*") if p.suffix in (".go", ".mod"))
    return files


def go_build(
    minor: Minor,
    modflag: str,
    package: str,
    binary: Path,
    label: str,
    progress: Progress,
    expected: float | None = None,
) -> None:
    """`go build` one package of `minor`'s modules (stamped with its ldflags, by its Go) into
    `binary` (replaced atomically), with progress counted against the package's dependencies."""
    env = _go_env(minor)
    deps = subprocess.run(
        ["go", "list", modflag, "-deps", package],
        cwd=CONTROLPLANE_DIR,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if deps.returncode != 0:
        raise HarnessError(f"cannot resolve the modules of {label}:\n{deps.stderr.strip()[-2000:]}")
    tmp = _temp_path(binary.parent, binary.name + ".")
    cmd = ["go", "build", modflag, "-trimpath", "-v", "-ldflags", ldflags(minor), "-o", str(tmp), package]
    try:
        total = len(deps.stdout.split())
        _run_with_progress(cmd, total, label, CONTROLPLANE_DIR, progress, expected, env)
        tmp.replace(binary)
    finally:
        tmp.unlink(missing_ok=True)


def ensure_kwok(matrix: Matrix, progress: Progress = _stderr) -> Path:
    """Return the kwok binary, `go install`ed from the module proxy at the pinned version."""
    binary = kwok_path(matrix)
    if binary.exists():
        return binary
    go_version()
    with build_lock(binary, f"kwok {matrix.kwok_version}", progress):
        if binary.exists():  # another process built it while this one waited
            return binary
        ref = f"{matrix.kwok_module}/cmd/kwok@{matrix.kwok_version}"
        progress(f"building kwok {matrix.kwok_version} into {binary}")
        gobin = Path(tempfile.mkdtemp(dir=binary.parent, prefix="kwok.", suffix=".tmp"))
        env = _go_env() | {"GOBIN": str(gobin)}  # go install names its output: a directory of our own
        start = time.monotonic()
        try:
            done = subprocess.run(
                ["go", "install", ref], env=env, capture_output=True, text=True, check=False
            )
            if done.returncode != 0:
                raise HarnessError(f"building {ref} failed:\n{done.stderr.strip()[-2000:]}")
            (gobin / "kwok").replace(binary)
        finally:
            shutil.rmtree(gobin, ignore_errors=True)
        progress(f"kwok {matrix.kwok_version}: done in {time.monotonic() - start:.0f}s")
    return binary


def module_dir(module: str, version: str, minor: Minor | None = None) -> Path:
    """Download (if needed) one module from the proxy and return its source directory; a
    module of `minor` by that minor's Go (a go.mod needing a newer Go fails with an older one)."""
    out = subprocess.run(
        ["go", "mod", "download", "-json", f"{module}@{version}"],
        env=_go_env(minor),
        capture_output=True,
        text=True,
        check=False,
        cwd=tempfile.gettempdir(),
    )
    if out.returncode != 0:
        raise HarnessError(f"cannot download {module}@{version}: {out.stdout.strip() or out.stderr.strip()}")
    return Path(json.loads(out.stdout)["Dir"])
