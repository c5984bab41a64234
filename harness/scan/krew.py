"""The scan's kubectl plugin as a krew package: the archive (a POSIX sh launcher of
`dra-harness scan`) and the manifest (plugins/dra-scan.yaml, which makes this repository a krew
custom index). Pure: bytes and text, no file is written here (`dra-harness scan --krew-package`).

The package's compiled dependencies (grpcio, cryptography, psutil) cannot travel in one archive
for every platform, so the archive holds a launcher that runs `dra-harness scan "$@"` and, when
`dra-harness` is not on PATH, says in one line what to install.

The archive is byte-reproducible, so the sha256 in the committed manifest can be checked against
it anywhere: one tar entry with fixed owner, mode and mtime, gzipped with stored (uncompressed)
deflate blocks written here, since zlib builds (zlib, zlib-ng) compress the same input to
different bytes.

krew v0.4.3's reading of a manifest (sigs.k8s.io/krew@v0.4.3): internal/index/validation/
validate.go (name, apiVersion, kind, semver version, sha256 pattern, platform selector keys);
internal/installation/install.go (install: verify, unpack, move `files`, link KREW_ROOT/bin/
kubectl-<name with _ for ->); internal/download/downloader.go (a gzip tar is unpacked by its
magic bytes, regular files keep their header's mode).
"""

from __future__ import annotations

import hashlib
import io
import re
import struct
import tarfile
import zlib
from dataclasses import dataclass
from importlib.metadata import version as installed_version
from typing import Any

import yaml

from harness.core.errors import HarnessError

PLUGIN = "dra-scan"  # krew's name: `kubectl krew install dra-harness/dra-scan`, `kubectl dra-scan`
BIN = "kubectl-dra_scan"  # what kubectl runs for `kubectl dra-scan` (krew links it in KREW_ROOT/bin)
ARCHIVE = f"{BIN}.tar.gz"
MANIFEST = f"plugins/{PLUGIN}.yaml"  # where krew looks in an index (and where it is committed)

# The one place the project's address is: no release is published yet, so it is a placeholder
# (.invalid, RFC 2606) that must be set to the repository's URL before the first release
# (docs/scan.md, "kubectl plugin through krew"). The archive goes to its GitHub-style release
# download URL for the version.
REPOSITORY_URL = "https://dra-harness.invalid/dra-harness"

# Every platform runs the same sh launcher (krew's platforms: cmd/validate-krew-manifest/main.go
# allPlatforms; windows has no sh).
PLATFORMS = (("linux", "amd64"), ("linux", "arm64"), ("darwin", "amd64"), ("darwin", "arm64"))

# Fixed archive metadata: 2000-01-01T00:00:00Z, root-owned, rwxr-xr-x.
MTIME = 946684800
MODE = 0o755

_SEMVER = re.compile(r"\d+\.\d+\.\d+")
_GZIP_HEADER = bytes([0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 0xFF])  # deflate, no name, mtime 0, OS unknown
_STORED_MAX = 0xFFFF  # bytes in one stored deflate block (RFC 1951 3.2.4)


@dataclass(frozen=True)
class KrewPackage:
    archive: bytes
    manifest: str

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.archive).hexdigest()


def package_version() -> str:
    """The installed dra-harness's version (pyproject.toml's, after `make venv`), X.Y.Z: krew's
    spec.version is its semver with a v."""
    found = installed_version("dra-harness")
    if not _SEMVER.fullmatch(found):
        raise HarnessError(f"dra-harness {found} is not X.Y.Z: a krew plugin's version must be semver")
    return found


def install_hint(version: str) -> str:
    """The release's wheel (`pip wheel --no-deps .`): PyPI has no package of this name."""
    return (
        f"pipx install {REPOSITORY_URL}/releases/download/v{version}/dra_harness-{version}-py3-none-any.whl"
    )


def launcher(version: str) -> str:
    """The archive's one file: POSIX sh, run by kubectl as `kubectl-dra_scan ARGS...`."""
    return (
        "#!/bin/sh\n"
        f"# kubectl dra-scan (krew plugin {PLUGIN} v{version}): `dra-harness scan` with the same\n"
        "# arguments. dra-harness is a Python package; this launcher does not contain it.\n"
        "if command -v dra-harness >/dev/null 2>&1; then\n"
        '  exec dra-harness scan "$@"\n'
        "fi\n"
        f'echo "kubectl dra-scan: dra-harness is not on PATH; install it: {install_hint(version)}" >&2\n'
        "exit 1\n"
    )


def _tar(name: str, data: bytes) -> bytes:
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = len(data), MTIME, MODE
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.type = tarfile.REGTYPE
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def _gzip_stored(data: bytes) -> bytes:
    """gzip (RFC 1952) of stored deflate blocks: the same bytes from every zlib build."""
    blocks = [data[i : i + _STORED_MAX] for i in range(0, len(data), _STORED_MAX)] or [b""]
    body = b"".join(
        struct.pack("<BHH", int(i == len(blocks) - 1), len(b), len(b) ^ 0xFFFF) + b
        for i, b in enumerate(blocks)
    )
    trailer = struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF)
    return _GZIP_HEADER + body + trailer


def archive(version: str) -> bytes:
    """kubectl-dra_scan.tar.gz: the launcher alone, byte for byte the same on every build."""
    return _gzip_stored(_tar(BIN, launcher(version).encode()))


def archive_uri(version: str) -> str:
    return f"{REPOSITORY_URL}/releases/download/v{version}/{ARCHIVE}"


def caveats(version: str) -> str:
    return (
        "This plugin runs `dra-harness scan` from the Python package dra-harness, which it does\n"
        "not contain (its compiled dependencies differ per platform). Install it first:\n"
        f"  {install_hint(version)}\n"
        "Without it on PATH, `kubectl dra-scan` says so in one line and exits 1.\n"
        "The scan is read-only; the ClusterRole it needs: kubectl dra-scan --print-clusterrole\n"
    )


def manifest_dict(version: str, sha256: str) -> dict[str, Any]:
    def platform(os_: str, arch: str) -> dict[str, Any]:
        return {
            "selector": {"matchLabels": {"os": os_, "arch": arch}},
            "uri": archive_uri(version),
            "sha256": sha256,
            "bin": BIN,
            "files": [{"from": BIN, "to": "."}],
        }

    return {
        "apiVersion": "krew.googlecontainertools.github.com/v1alpha2",
        "kind": "Plugin",
        "metadata": {"name": PLUGIN},
        "spec": {
            "version": f"v{version}",
            "homepage": REPOSITORY_URL,
            "shortDescription": "Read-only DRA readiness scan of a cluster's GPU pools",
            "description": (
                "Scans the current context, read-only, for what Dynamic Resource Allocation needs\n"
                "before GPU pools move to it: device-plugin and DRA stacks on the same nodes,\n"
                "legacy resource names no DeviceClass maps, DeviceClass selectors that match no\n"
                "device, and more. Exit 0 ready, 2 warnings, 3 blocking; --json, --junit and\n"
                "--markdown write the findings. It runs `dra-harness scan`.\n"
            ),
            "caveats": caveats(version),
            "platforms": [platform(os_, arch) for os_, arch in PLATFORMS],
        },
    }


class _Dumper(yaml.SafeDumper):
    """Multi-line strings (description, caveats) as literal blocks, as krew-index writes them."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def render_manifest(version: str, sha256: str) -> str:
    header = (
        f"# The krew manifest of `kubectl {PLUGIN}`. Generated: `dra-harness scan --krew-package DIR`\n"
        f"# writes it (DIR/{MANIFEST}) with its archive (DIR/{ARCHIVE}); do not edit.\n"
    )
    body = yaml.dump(manifest_dict(version, sha256), Dumper=_Dumper, sort_keys=False, width=1000)
    return header + body


def krew_package(version: str | None = None) -> KrewPackage:
    """The archive and the manifest naming its sha256, for `version` (default: the package's)."""
    version = version or package_version()
    data = archive(version)
    return KrewPackage(data, render_manifest(version, hashlib.sha256(data).hexdigest()))
