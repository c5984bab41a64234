"""What a fake NVIDIA driver root holds besides device nodes, built by the project: the NVML
stand-in `libnvidia-ml.so.1` (nvmlstub/ in this repository, `-buildmode=c-shared`, compiled
against nvml.h of the go-nvml version the plugin pins, passed with -I from the module cache:
no header is copied here) and `nvidia-cdi-hook` (built in the toolkit's module directory, CGO
on). Both are cached by their inputs beside the driver's plugin and built with it
(driverparts.ensure_driver); versions.toml [drivers.<name>.root] names the versions. The
library goes in a directory named by its inputs' digest: work trees with different nvmlstub/
sources share the cache without rebuilding over each other's library.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
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
from harness.controlplane.nodeparts import _digest, _fresh, _stamp
from harness.core.errors import HarnessError
from harness.core.versions import REPO_ROOT

NVML_SOURCE = REPO_ROOT / "nvmlstub"
NVML_SONAME = "libnvidia-ml.so.1"
BUILD_TIMEOUT = 900  # seconds: the hook builds in ~25 s here, the library in ~30 s cold
# go-nvml's cgo and the toolkit's: NVML's symbols stay unresolved until run time.
CGO_ENV = {"CGO_ENABLED": "1", "CGO_LDFLAGS_ALLOW": "-Wl,--unresolved-symbols=ignore-in-object-files"}


@dataclass(frozen=True)
class RootParts:
    library: Path
    cdi_hook: Path


def parts_dir(root: Mapping[str, str]) -> Path:
    return cache_root() / "bin" / "drivers" / f"nvidia-root-{root['cdi_hook_version']}"


def _paths(root: Mapping[str, str]) -> RootParts:
    d = parts_dir(root)
    return RootParts(d / f"nvml-{_library_inputs(root)[:16]}" / NVML_SONAME, d / "nvidia-cdi-hook")


def _go() -> str:
    return ".".join(map(str, go_version()))


def _library_inputs(root: Mapping[str, str]) -> str:
    sources = sorted(p for p in NVML_SOURCE.iterdir() if p.suffix in (".go", ".c", ".mod"))
    return _digest(
        root["nvml_header_module"], root["nvml_header_version"], _go(), *(p.name for p in sources),
        *(p.read_bytes() for p in sources),
    )  # fmt: skip


def _hook_inputs(root: Mapping[str, str]) -> str:
    return _digest(root["cdi_hook_module"], root["cdi_hook_package"], root["cdi_hook_version"], _go())


def root_parts_built(root: Mapping[str, str]) -> RootParts | None:
    parts = _paths(root)
    fresh = _fresh(parts.library, _library_inputs(root)) and _fresh(parts.cdi_hook, _hook_inputs(root))
    return parts if fresh else None


def go_build_to(argv: list[str], cwd: Path, env: Mapping[str, str], out: Path, what: str) -> None:
    """`go build -o out argv` in `cwd`, through a temporary file, so `out` is whole or absent;
    one line on failure (the real drivers' plugins and the NVIDIA root's parts)."""
    tmp = out.with_name(out.name + ".tmp")
    try:
        done = subprocess.run(
            ["go", "build", "-trimpath", "-o", str(tmp), *argv],
            cwd=cwd,
            env=_go_env() | dict(env),
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT,
            check=False,
        )
        if done.returncode != 0:
            raise HarnessError(f"building {what} failed:\n{done.stderr.strip()[-2000:]}")
        tmp.replace(out)
    except subprocess.TimeoutExpired:
        raise HarnessError(f"building {what} took over {BUILD_TIMEOUT}s") from None
    finally:
        tmp.unlink(missing_ok=True)


def ensure_root_parts(root: Mapping[str, str], progress: Progress = _stderr) -> RootParts:
    parts = _paths(root)
    parts.library.parent.mkdir(parents=True, exist_ok=True)
    with build_lock(parts.library, "NVML stand-in", progress):
        digest = _library_inputs(root)
        if not _fresh(parts.library, digest):
            header = module_dir(root["nvml_header_module"], root["nvml_header_version"]) / "pkg" / "nvml"
            progress(f"building the NVML stand-in into {parts.library}")
            go_build_to(
                ["-buildmode=c-shared", f"-ldflags=-extldflags=-Wl,-soname,{NVML_SONAME}", "."],
                NVML_SOURCE,
                {**CGO_ENV, "CGO_CFLAGS": f"-I{header}", "GOFLAGS": "-mod=readonly"},
                parts.library,
                "the NVML stand-in (nvmlstub/)",
            )
            for header_file in parts.library.parent.glob("*.h"):  # go's c-shared header
                header_file.unlink()
            _stamp(parts.library, digest)
    with build_lock(parts.cdi_hook, "nvidia-cdi-hook", progress):
        digest = _hook_inputs(root)
        if not _fresh(parts.cdi_hook, digest):
            ref = f"{root['cdi_hook_module']}/{root['cdi_hook_package']}@{root['cdi_hook_version']}"
            progress(f"building {ref} into {parts.cdi_hook}")
            source = module_dir(root["cdi_hook_module"], root["cdi_hook_version"])
            env = {**CGO_ENV, "GOFLAGS": "-mod=readonly"}
            go_build_to([f"./{root['cdi_hook_package']}"], source, env, parts.cdi_hook, ref)
            _stamp(parts.cdi_hook, digest)
    return parts
