"""What a real node of the local provider runs, built or checked by the project itself:
the kubelet of a minor (from that minor's modfile, stamped like k8slocal), containerd 2.x
(`go install` at the version pinned in versions.toml), the pause and workload images (written
as archives, never pulled), and the Debian parts `make nodeparts` installs (runc, CNI plugins,
busybox-static, iptables).

Everything lands in the same cache as the control plane, keyed by version, rebuilt only when a
recorded input hash changes, one build at a time per part (a file lock), with progress.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from harness.controlplane import images
from harness.controlplane.build import (
    Progress,
    _go_env,
    _stderr,
    build_lock,
    cache_root,
    check_go,
    go_build,
    go_identity,
    go_version,
    ldflags,
    modfile_path,
    module_dir,
    standin_sources,
)
from harness.controlplane.buildlog import expectation, expected_seconds
from harness.core.errors import HarnessError
from harness.core.versions import Matrix, Minor

KUBELET_PACKAGE = "k8s.io/kubernetes/cmd/kubelet"
CONTAINERD_COMMANDS = ("containerd", "containerd-shim-runc-v2", "ctr")
PAUSE_SOURCE = "build/pause/linux/pause.c"  # in the k8s.io/kubernetes module zip
IMAGE_REGISTRY = "dra-harness.local"


@dataclass(frozen=True)
class NodeBinaries:
    kubelet: Path
    containerd_dir: Path  # containerd, containerd-shim-runc-v2 (first on the node's PATH), ctr
    pause_archive: Path
    pause_ref: str
    busybox_archive: Path
    busybox_ref: str
    runc: Path
    cni_bin_dir: Path


def _digest(*parts: bytes | str) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode() if isinstance(part, str) else part)
        h.update(b"\0")
    return h.hexdigest()


def _fresh(binary: Path, digest: str) -> bool:
    stamp = binary.with_name(binary.name + ".inputs.sha256")
    return binary.exists() and stamp.exists() and stamp.read_text() == digest


def _stamp(binary: Path, digest: str) -> None:
    binary.with_name(binary.name + ".inputs.sha256").write_text(digest)


# -- kubelet ---------------------------------------------------------------------------


def kubelet_path(minor: Minor) -> Path:
    return cache_root() / "bin" / minor.kubernetes / "kubelet"


def _kubelet_digest(minor: Minor) -> str:
    mod = modfile_path(minor)
    return _digest(
        mod.read_bytes(),
        mod.with_suffix(".sum").read_bytes(),
        go_identity(minor),
        ldflags(minor),
        KUBELET_PACKAGE,
        *(p.read_bytes() for p in standin_sources(mod)),
    )


def kubelet_built(minor: Minor) -> Path | None:
    """The kubelet of `minor` if it is built from the current inputs (no build here; no `go`
    asked for its version when there is no binary to compare)."""
    binary = kubelet_path(minor)
    if not binary.exists():
        return None
    try:
        return binary if _fresh(binary, _kubelet_digest(minor)) else None
    except HarnessError:  # a stand-in the modfile names is missing: not built from these inputs
        return None


def _refuse_unavailable_kubelet(minor: Minor) -> None:
    if minor.kubelet_unavailable:
        raise HarnessError(f"the kubelet {minor.kubernetes} cannot be built: {minor.kubelet_unavailable}")


def ensure_kubelet(minor: Minor, progress: Progress = _stderr) -> Path:
    """Build (or reuse) the kubelet of `minor` from its modfile, stamped like k8slocal."""
    _refuse_unavailable_kubelet(minor)
    mod = modfile_path(minor)
    standin_sources(mod)  # a stand-in that is missing: one line, before any go command
    check_go(mod, f"the kubelet {minor.kubernetes}", minor)
    binary = kubelet_path(minor)
    with build_lock(binary, f"kubelet {minor.kubernetes}", progress):
        digest = _kubelet_digest(minor)
        if _fresh(binary, digest):
            return binary
        # A copy of the modfile: the kubelet needs go.sum lines k8slocal does not, and the
        # repo's .sum must stay as k8slocal's inputs hash (and other checkouts) know it.
        own = binary.with_name("kubelet.mod")
        shutil.copyfile(mod, own)
        shutil.copyfile(mod.with_suffix(".sum"), own.with_suffix(".sum"))
        progress(
            f"building kubelet {minor.kubernetes} into {binary} ({expectation(f'kubelet {minor.name}')})"
        )
        go_build(
            minor,
            f"-modfile={own}",
            KUBELET_PACKAGE,
            binary,
            f"kubelet {minor.kubernetes}",
            progress,
            expected_seconds(f"kubelet {minor.name}"),
        )
        _stamp(binary, digest)
    return binary


# -- containerd ------------------------------------------------------------------------


def containerd_dir(matrix: Matrix) -> Path:
    return cache_root() / "bin" / f"containerd-{matrix.nodes.containerd_version}"


def _containerd_digest(matrix: Matrix) -> str:
    n = matrix.nodes
    return _digest(
        n.containerd_module, n.containerd_version, n.containerd_tags, ".".join(map(str, go_version()))
    )


def containerd_built(matrix: Matrix) -> Path | None:
    binary = containerd_dir(matrix) / "containerd"
    return binary.parent if binary.exists() and _fresh(binary, _containerd_digest(matrix)) else None


def ensure_containerd(matrix: Matrix, progress: Progress = _stderr) -> Path:
    """`go install` containerd, its runc shim and ctr at the pinned version (CGO off)."""
    directory = containerd_dir(matrix)
    n = matrix.nodes
    with build_lock(directory / "containerd", f"containerd {n.containerd_version}", progress):
        digest = _containerd_digest(matrix)
        if _fresh(directory / "containerd", digest):
            return directory
        refs = [f"{n.containerd_module}/cmd/{c}@{n.containerd_version}" for c in CONTAINERD_COMMANDS]
        progress(f"building containerd {n.containerd_version} into {directory} ({expectation('containerd')})")
        env = _go_env() | {"GOBIN": str(directory)}
        start = time.monotonic()
        cmd = ["go", "install", "-trimpath", *(["-tags", n.containerd_tags] if n.containerd_tags else [])]
        done = subprocess.run([*cmd, *refs], env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise HarnessError(f"building containerd failed:\n{done.stderr.strip()[-2000:]}")
        progress(f"containerd {n.containerd_version}: done in {time.monotonic() - start:.0f}s")
        _stamp(directory / "containerd", digest)
    return directory


# -- images ----------------------------------------------------------------------------


def images_dir() -> Path:
    return cache_root() / "images"


def pause_tag(minor: Minor) -> str:
    """The pause release this Kubernetes ships (build/pause/Makefile `TAG ?=`)."""
    makefile = module_dir("k8s.io/kubernetes", minor.kubernetes, minor) / "build/pause/Makefile"
    for line in makefile.read_text().splitlines():
        if line.startswith("TAG ?="):
            return line.split("=", 1)[1].strip()
    raise HarnessError(f"no `TAG ?=` in {makefile}")


def ensure_pause(minor: Minor, progress: Progress = _stderr) -> tuple[Path, str]:
    """The pause image of `minor`'s Kubernetes, compiled from its pause.c (gcc -static)."""
    tag = pause_tag(minor)
    ref = f"{IMAGE_REGISTRY}/pause:{tag}"
    archive = images_dir() / f"pause-{tag}.tar"
    with build_lock(archive, f"the pause image {tag}", progress):
        if archive.exists():
            return archive, ref
        gcc = shutil.which("gcc")
        if gcc is None:
            raise HarnessError(
                "gcc is not installed: the pause image is compiled from pause.c (apt-get install gcc)"
            )
        source = module_dir("k8s.io/kubernetes", minor.kubernetes, minor) / PAUSE_SOURCE
        binary = images_dir() / f"pause-{tag}"
        binary.parent.mkdir(parents=True, exist_ok=True)
        # The flags of build/pause/Makefile (CFLAGS), with its VERSION define.
        cmd = [gcc, "-Os", "-Wall", "-Werror", "-static", f"-DVERSION=v{tag}-dra-harness", "-o", str(binary)]
        done = subprocess.run([*cmd, str(source)], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise HarnessError(f"compiling {source} failed:\n{done.stderr.strip()[-2000:]}")
        images.pause_image(archive, ref, binary)
        progress(f"pause image {ref}: {archive}")
    return archive, ref


def ensure_busybox(matrix: Matrix) -> tuple[Path, str]:
    busybox = Path(matrix.nodes.busybox)
    if not busybox.exists():
        raise HarnessError(f"{busybox} is missing: run `make nodeparts` (apt-get install busybox-static)")
    version = hashlib.sha256(busybox.read_bytes()).hexdigest()[:12]
    ref = f"{IMAGE_REGISTRY}/busybox:{version}"
    archive = images_dir() / f"busybox-{version}.tar"
    with build_lock(archive, "the busybox image", _stderr):
        if not archive.exists():
            images.busybox_image(archive, ref, busybox)
    return archive, ref


# -- everything ------------------------------------------------------------------------


def host_tools(matrix: Matrix) -> tuple[Path, Path]:
    """runc and the CNI plugin directory from apt; a one-line error naming the fix."""
    runc = shutil.which("runc")
    cni = Path(matrix.nodes.cni_bin_dir)
    missing = [what for what, ok in (("runc", runc), ("CNI plugins", (cni / "bridge").exists())) if not ok]
    missing += [
        tool for tool in ("iptables", "ip6tables", "unshare", "nsenter", "ip") if not shutil.which(tool)
    ]
    if missing:
        raise HarnessError(f"real nodes need {', '.join(missing)}: run `make nodeparts`")
    assert runc is not None
    return Path(runc), cni


def build_node_parts(minor: Minor, matrix: Matrix, progress: Progress = _stderr) -> NodeBinaries:
    """`dra-harness controlplane build --nodes`: build or reuse every part for `minor`."""
    runc, cni = host_tools(matrix)
    kubelet = ensure_kubelet(minor, progress)
    ctrd = ensure_containerd(matrix, progress)
    pause, pause_ref = ensure_pause(minor, progress)
    busybox, busybox_ref = ensure_busybox(matrix)
    return NodeBinaries(kubelet, ctrd, pause, pause_ref, busybox, busybox_ref, runc, cni)


def node_parts(minor: Minor, matrix: Matrix) -> NodeBinaries:
    """The parts for a real node of `minor`, without building the Go ones: a pool asking for
    a kubelet or containerd that is not built gets one line saying how to build it (first:
    what the host lacks depends on who runs it, what is built does not)."""
    how = (
        f"run `dra-harness controlplane build -k {minor.name} --nodes` (or `make nodeparts K8S={minor.name}`)"
    )
    _refuse_unavailable_kubelet(minor)
    kubelet = kubelet_built(minor)
    if kubelet is None:
        raise HarnessError(f"the kubelet {minor.kubernetes} is not built: {how}")
    ctrd = containerd_built(matrix)
    if ctrd is None:
        raise HarnessError(f"containerd {matrix.nodes.containerd_version} is not built: {how}")
    runc, cni = host_tools(matrix)
    pause, pause_ref = ensure_pause(minor)
    busybox, busybox_ref = ensure_busybox(matrix)
    return NodeBinaries(kubelet, ctrd, pause, pause_ref, busybox, busybox_ref, runc, cni)
