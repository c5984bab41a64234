"""plugins/dra-scan.yaml through krew itself (versions.toml [tools.krew] and
[tools.validate-krew-manifest], v0.4.3, built on first use): krew-index's check accepts it, krew
installs it from the reproducible archive, and refuses an archive the sha256 does not name.
No cluster: `kubectl dra-scan` on one runs in suites/scan/test_readiness_scan.py."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest

from fixtures.scan import krew_install, run_krew
from harness.controlplane.tools import ensure_tool
from harness.core.versions import REPO_ROOT
from harness.scan import krew

MANIFEST = REPO_ROOT / krew.MANIFEST


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    path = tmp_path / krew.ARCHIVE
    path.write_bytes(krew.krew_package().archive)
    return path


def test_validate_krew_manifest_accepts_the_manifest() -> None:
    """Its structural checks and platform selectors (cmd/validate-krew-manifest/main.go). Its
    install leg (-skip-install here) downloads each platform's uri, a placeholder until the first
    release, and wants a LICENSE file in the archive (validateLicenseFileExists): the project has
    none yet. krew's install of the same manifest is the next test."""
    done = subprocess.run(
        [str(ensure_tool("validate-krew-manifest")), "-manifest", str(MANIFEST), "-skip-install"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "structural validation OK" in done.stderr
    assert "no overlapping spec.platform[].selector" in done.stderr


def test_krew_installs_the_manifest_from_the_archive(tmp_path: Path, archive: Path) -> None:
    root = tmp_path / "krew"

    done = krew_install(root, MANIFEST, archive)

    assert done.returncode == 0, done.stderr
    assert "Installed plugin: dra-scan" in done.stderr
    assert krew.install_hint(krew.package_version()) in done.stderr  # the caveat, shown on install
    linked = root / "bin" / krew.BIN
    assert linked.is_symlink()
    assert linked.resolve() == (root / "store" / krew.PLUGIN / f"v{krew.package_version()}" / krew.BIN)
    assert linked.read_text() == krew.launcher(krew.package_version())
    assert linked.stat().st_mode & 0o777 == 0o755


def test_krew_refuses_an_archive_the_manifest_sha256_does_not_name(tmp_path: Path, archive: Path) -> None:
    good = krew.krew_package().sha256
    wrong = hashlib.sha256(b"").hexdigest()  # an empty file's
    manifest = tmp_path / "plugins" / f"{krew.PLUGIN}.yaml"
    manifest.parent.mkdir()
    manifest.write_text(MANIFEST.read_text().replace(good, wrong))
    root = tmp_path / "krew"

    done = krew_install(root, manifest, archive)

    assert done.returncode == 1
    assert f"checksum does not match, want: {wrong}, got {good}" in done.stderr
    assert not (root / "bin" / krew.BIN).exists()


def test_the_repository_is_a_krew_index_naming_dra_scan(tmp_path: Path) -> None:
    """`kubectl krew index add dra-harness <repository>` (a git clone: here of a repository holding
    this checkout's plugins/), then `kubectl krew info dra-harness/dra-scan` reads the manifest
    from it. Installing from the index downloads the uri (docs/scan.md: set at release time)."""
    repo = tmp_path / "repo"
    shutil.copytree(REPO_ROOT / "plugins", repo / "plugins")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-C", str(repo)]
    for args in (["init", "-q"], ["add", "plugins"], ["commit", "-qm", "index"]):
        subprocess.run([*git, *args], capture_output=True, timeout=30, check=True)
    root = tmp_path / "krew"
    git_dir = Path(shutil.which("git") or "git").parent

    added = run_krew(root, "index", "add", "dra-harness", str(repo), path=[git_dir])
    info = run_krew(root, "info", "dra-harness/dra-scan", path=[git_dir])

    assert added.returncode == 0, added.stderr
    assert info.returncode == 0, info.stderr
    version = krew.package_version()
    assert f"INDEX: dra-harness\nURI: {krew.archive_uri(version)}\n" in info.stdout
    assert f"SHA256: {krew.krew_package().sha256}\nVERSION: v{version}\n" in info.stdout
