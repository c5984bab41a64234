"""Go commands the project runs, `go install`ed from the module proxy into the cache once per
version: versions.toml [tools] (helm, actionlint, krew, validate-krew-manifest) and the kind
path's coredns and crictl."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from harness.controlplane.build import Progress, _go_env, _stderr, build_lock, cache_root
from harness.core.errors import HarnessError
from harness.core.versions import load_matrix


def tool_path(package: str, version: str) -> Path:
    name = package.rsplit("/", 1)[1]
    return cache_root() / "bin" / f"{name}-{version}" / name


def go_install_tool(package: str, version: str, progress: Progress = _stderr) -> Path:
    """`go install package@version` into the cache (once per version)."""
    name = package.rsplit("/", 1)[1]
    binary = tool_path(package, version)
    with build_lock(binary, f"{name} {version}", progress):
        if binary.exists():
            return binary
        progress(f"building {name} {version} into {binary}")
        start = time.monotonic()
        gobin = Path(tempfile.mkdtemp(dir=binary.parent, prefix=f"{name}.", suffix=".tmp"))
        try:
            env = _go_env() | {"GOBIN": str(gobin)}
            ref = f"{package}@{version}"
            done = subprocess.run(
                ["go", "install", "-trimpath", ref], env=env, capture_output=True, text=True, check=False
            )
            if done.returncode != 0:
                raise HarnessError(f"building {ref} failed:\n{done.stderr.strip()[-2000:]}")
            (gobin / name).replace(binary)
        finally:
            shutil.rmtree(gobin, ignore_errors=True)
        progress(f"{name} {version}: done in {time.monotonic() - start:.0f}s")
    return binary


def named_tool_path(name: str) -> Path:
    """Where versions.toml's [tools.<name>] is (built or not)."""
    tool = load_matrix().tool(name)
    return tool_path(tool.module, tool.version)


def ensure_tool(name: str, progress: Progress = _stderr) -> Path:
    """versions.toml's [tools.<name>], built if missing."""
    tool = load_matrix().tool(name)
    return go_install_tool(tool.module, tool.version, progress)
