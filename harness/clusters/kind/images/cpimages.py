"""The images kubeadm runs on a kind node, written as archives (harness.controlplane.images)
under exactly the tags `kubeadm config images list` prints, so nothing is ever pulled:
- kube-apiserver, kube-controller-manager, kube-scheduler, etcd: the project's k8slocal
  multi-call binary with busybox's sh and a one-line `exec k8slocal <name>` per command;
- kube-proxy: the node's Debian root filesystem (iptables, conntrack) plus the binary;
- coredns: `go install` at the version kubeadm names; pause: the one nodeparts compiles.
"""

from __future__ import annotations

import hashlib
import io
import subprocess
import tarfile
from pathlib import Path

from harness.controlplane import images
from harness.controlplane.build import Progress, _stderr, ensure_controlplane
from harness.controlplane.nodeparts import ensure_pause, images_dir
from harness.controlplane.tools import go_install_tool
from harness.core.errors import HarnessError
from harness.core.versions import Minor

COREDNS_MODULE = "github.com/coredns/coredns"
K8SLOCAL_COMMANDS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd")


def kubeadm_images(kubeadm: Path, minor: Minor) -> dict[str, str]:
    """Image name (last path element, no tag) -> the reference kubeadm expects."""
    argv = [str(kubeadm), "config", "images", "list", "--kubernetes-version", minor.kubernetes]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    if done.returncode != 0:
        raise HarnessError(f"kubeadm config images list failed: {done.stderr.strip()[-500:]}")
    return {ref.rsplit("/", 1)[1].split(":")[0]: ref for ref in done.stdout.split()}


def _sha(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _k8slocal_layer(k8slocal: Path, busybox: Path) -> bytes:
    files = {"bin/busybox": busybox.read_bytes(), "usr/local/bin/k8slocal": k8slocal.read_bytes()}
    for command in K8SLOCAL_COMMANDS:
        files[f"usr/local/bin/{command}"] = (
            f'#!/bin/sh\nexec /usr/local/bin/k8slocal {command} "$@"\n'.encode()
        )
    dirs = ("bin", "usr", "usr/local", "usr/local/bin", "tmp", "etc", "var", "var/lib")
    return images._layer(files, {"bin/sh": "busybox"}, dirs)


def _owned_by_root(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    info.mtime = 0
    return info


def rootfs_layer(rootfs: Path, extra: dict[str, Path], links: dict[str, str] | None = None) -> bytes:
    """The root filesystem tarball with `extra` (path in image -> file or directory, added
    recursively, owned by root) and symlinks `links` (path -> target) appended."""
    buf = io.BytesIO(rootfs.read_bytes())
    with tarfile.open(fileobj=buf, mode="a") as tar:
        present = {n.removeprefix("./").rstrip("/") for n in tar.getnames()}

        def new_only(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
            # A directory the root filesystem has already: a second entry is refused by docker.
            return None if info.isdir() and info.name in present else _owned_by_root(info)

        for name, path in extra.items():
            for item in [path, *sorted(path.rglob("*"))] if path.is_dir() else [path]:
                arcname = name if item == path else f"{name}/{item.relative_to(path)}"
                tar.add(str(item), arcname=arcname, recursive=False, filter=new_only)
        for name, target in (links or {}).items():
            info = _owned_by_root(tarfile.TarInfo(name))
            info.type, info.linkname, info.mode = tarfile.SYMTYPE, target, 0o777
            tar.addfile(info)
    return buf.getvalue()


def ensure_cp_images(
    minor: Minor, bins: Path, rootfs: Path, busybox: Path, out: Path, progress: Progress = _stderr
) -> list[Path]:
    """One archive per image kubeadm needs, under `out`; each rewritten only when its inputs
    (the binaries, the root filesystem, the tag) changed."""
    refs = kubeadm_images(bins / "kubeadm", minor)
    missing = {
        "kube-apiserver",
        "kube-controller-manager",
        "kube-scheduler",
        "kube-proxy",
        "etcd",
        "coredns",
        "pause",
    } - set(refs)
    if missing:
        raise HarnessError(f"kubeadm {minor.kubernetes} lists no image for {', '.join(sorted(missing))}")
    k8slocal = ensure_controlplane(minor, progress)
    coredns = go_install_tool(COREDNS_MODULE, refs["coredns"].rsplit(":", 1)[1], progress)
    _, _ = ensure_pause(minor, progress)
    pause = images_dir() / f"pause-{refs['pause'].rsplit(':', 1)[1]}"
    if not pause.exists():
        raise HarnessError(f"{pause} is missing: the pause binary nodeparts compiles (make nodeparts)")
    inputs: dict[str, list[Path]] = {"k8slocal": [k8slocal, busybox]}
    inputs |= {"kube-proxy": [rootfs, bins / "kube-proxy"], "coredns": [coredns], "pause": [pause]}
    out.mkdir(parents=True, exist_ok=True)
    archives = []
    for name, sources in sorted(inputs.items()):
        archive = out / f"{name}.tar"
        stamp = archive.with_suffix(".inputs")
        tags = [refs[c] for c in K8SLOCAL_COMMANDS] if name == "k8slocal" else [refs[name]]
        digest = hashlib.sha256("\0".join([*tags, *map(_sha, sources)]).encode()).hexdigest()
        archives.append(archive)
        if archive.exists() and stamp.exists() and stamp.read_text() == digest:
            continue
        progress(f"image {', '.join(tags)}")
        if name == "k8slocal":  # one image, four tags: each static pod names its command
            layer = _k8slocal_layer(k8slocal, busybox)
            images.write_image(archive, tags[0], layer, [], ["sh"], also=tags[1:])
        elif name == "kube-proxy":
            layer = rootfs_layer(rootfs, {"usr/local/bin/kube-proxy": bins / "kube-proxy"})
            images.write_image(archive, refs[name], layer, [], ["/usr/local/bin/kube-proxy"])
        else:
            binary = coredns if name == "coredns" else pause
            layer = images._layer({name: binary.read_bytes()}, {}, ())
            images.write_image(archive, refs[name], layer, [f"/{name}"], [])
        stamp.write_text(digest)
    return archives
