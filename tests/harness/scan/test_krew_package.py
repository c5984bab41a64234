"""The scan's kubectl plugin as a krew package (harness.scan.krew): the committed manifest is what
the code renders (so its sha256 is the reproducible archive's), the archive holds the launcher
alone, and the launcher runs `dra-harness scan` or says in one line what to install."""

from __future__ import annotations

import gzip
import io
import os
import subprocess
import tarfile
from pathlib import Path

from harness.core.versions import REPO_ROOT
from harness.scan import krew
from tests.support.cli import run_cli

VERSION = krew.package_version()


def _launcher(tmp_path: Path) -> Path:
    """The archive's launcher, unpacked as krew unpacks it (mode from the tar header)."""
    with tarfile.open(fileobj=io.BytesIO(krew.archive(VERSION))) as tar:
        (member,) = tar.getmembers()
        data = tar.extractfile(member).read()  # type: ignore[union-attr]
    path = tmp_path / "plugin" / member.name
    path.parent.mkdir()
    path.write_bytes(data)
    path.chmod(member.mode)
    return path


def _run(launcher: Path, path: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [launcher, *args], env={"PATH": str(path)}, capture_output=True, timeout=30, check=False
    )


def test_the_committed_manifest_is_what_the_code_renders() -> None:
    committed = (REPO_ROOT / krew.MANIFEST).read_text()
    assert committed == krew.krew_package().manifest, (
        "plugins/dra-scan.yaml is stale: `dra-harness scan --krew-package DIR` and copy "
        "DIR/plugins/dra-scan.yaml over it"
    )
    assert f"sha256: {krew.krew_package().sha256}\n" in committed


def test_the_archive_is_the_launcher_alone_executable_and_reproducible() -> None:
    data = krew.archive(VERSION)
    assert data == krew.archive(VERSION)
    assert data[:8] == b"\x1f\x8b\x08\x00\0\0\0\0"  # gzip: deflate, no name, mtime 0
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        (member,) = tar.getmembers()
        content = tar.extractfile(member).read()  # type: ignore[union-attr]
    assert (member.name, member.type, member.mode) == (krew.BIN, tarfile.REGTYPE, 0o755)
    assert (member.uid, member.gid, member.uname, member.gname, member.mtime) == (0, 0, "", "", krew.MTIME)
    assert content == krew.launcher(VERSION).encode()
    assert gzip.decompress(data)[:100].rstrip(b"\0") == krew.BIN.encode()  # Python's gzip checks the CRC


def test_the_launcher_without_dra_harness_on_path_names_what_to_install(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    done = _run(_launcher(tmp_path), empty, "--json=x.json")
    assert done.returncode == 1
    assert done.stdout == b""
    assert done.stderr.decode() == (
        f"kubectl dra-scan: dra-harness is not on PATH; install it: {krew.install_hint(VERSION)}\n"
    )


def test_the_launcher_hands_dra_harness_scan_its_arguments_exactly(tmp_path: Path) -> None:
    fake = tmp_path / "bin" / "dra-harness"
    fake.parent.mkdir()
    fake.write_text('#!/bin/sh\nfor a in "$@"; do printf "%s\\0" "$a"; done\nexit 3\n')
    fake.chmod(0o755)
    args = ["--json=a b.json", "", "*", "$HOME", "two\nlines", "-", "--", "'\"`"]

    done = _run(_launcher(tmp_path), fake.parent, *args)

    assert done.returncode == 3, done.stderr  # the scan's exit code, unchanged
    assert done.stdout.split(b"\0")[:-1] == [b"scan", *(a.encode() for a in args)]
    assert done.stderr == b""


def test_krew_package_writes_the_archive_and_the_manifest_as_an_index(tmp_path: Path) -> None:
    done = run_cli("scan", f"--krew-package={tmp_path / 'dist'}")

    assert done.returncode == 0, done.stderr
    package = krew.krew_package()
    assert (tmp_path / "dist" / krew.ARCHIVE).read_bytes() == package.archive
    assert (tmp_path / "dist" / krew.MANIFEST).read_text() == package.manifest
    assert done.stdout.splitlines() == [str(tmp_path / "dist" / p) for p in (krew.ARCHIVE, krew.MANIFEST)]


def test_krew_package_into_a_file_is_one_line_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    (tmp_path / "index").mkdir()
    (tmp_path / "index" / "plugins").write_text("")

    for out, why in [
        (tmp_path / "file", f"{tmp_path / 'file'}: is not a directory"),
        (tmp_path / "index", f"{tmp_path / 'index' / krew.MANIFEST}: {tmp_path / 'index/plugins'} is not a"),
    ]:
        done = run_cli("scan", f"--krew-package={out}")
        assert (done.returncode, done.stdout) == (1, "")
        assert done.stderr.startswith(f"dra-harness: --krew-package {why}"), done.stderr
        assert done.stderr.count("\n") == 1
    assert sorted(os.listdir(tmp_path / "index")) == ["plugins"]
