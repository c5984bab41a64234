"""The kind node image of a minor, assembled here with no registry: what kind's
images/base/Dockerfile does, on a debootstrap root filesystem, with kind's own base files
from the kind module, the project's builds (Kubernetes binaries, containerd, crictl) and the
control-plane images under kubeadm's tags in /kind/images, imported by containerd's unit.

Changes from kind's image, each for this kind of host (cgroup v1, no CAP_SYS_RESOURCE):
containerd's `restrict_oom_score_adj = true` and no `OOMScoreAdjust=-999` in its unit; the
sandbox image is the pause tag kubeadm names (it is in /kind/images).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from harness.clusters.kind.engine import Engine, docker
from harness.clusters.kind.images.binaries import ensure_node_binaries
from harness.clusters.kind.images.cpimages import ensure_cp_images, kubeadm_images
from harness.clusters.kind.images.driver import ensure_driver_archive
from harness.clusters.kind.images.harnessimage import ensure_harness_archive
from harness.clusters.kind.images.rootfs import ensure_rootfs, kind_pins
from harness.controlplane.build import Progress, _stderr, cache_root, module_dir
from harness.controlplane.nodeparts import ensure_containerd
from harness.controlplane.tools import go_install_tool
from harness.core.errors import HarnessError
from harness.core.versions import Matrix, Minor

LOCAL_REPO = "dra-harness.local/kind-node"
INPUTS_LABEL = "dra-harness.inputs"
# containerd's ExecStartPost: pause first (every pod sandbox needs it), then the rest. The
# kubelet waits for it (KUBELET_AFTER_CONTAINERD).
IMPORT_SCRIPT = """#!/bin/sh
set -e
# An import cut short (a restart) leaves an ingest that every later import trips over.
rm -rf /var/lib/containerd/io.containerd.content.v1.content/ingest/*
cd /kind/images
for f in pause.tar k8slocal.tar $(ls *.tar | grep -v -x -e pause.tar -e k8slocal.tar); do
  ctr -n k8s.io images import "$f"
done
"""
KUBELET_AFTER_CONTAINERD = "[Unit]\nAfter=containerd.service\nWants=containerd.service\n"


def local_node_image(minor: Minor) -> str:
    return f"{LOCAL_REPO}:{minor.kubernetes}"


@dataclass(frozen=True)
class Parts:
    """What a node image is made of, each built (or found) in the cache."""

    kind: Path
    bins: Path
    containerd: Path
    crictl: Path
    rootfs: Path
    archives: list[Path]
    pause_ref: str

    def inputs(self, minor: Minor) -> str:
        """The image's label: a change of any part (their stamps), of kind or of this module."""
        h = hashlib.sha256(Path(__file__).read_bytes())
        stamps = [*self.bins.glob("*.inputs.sha256"), *self.containerd.glob("*.inputs.sha256")]
        stamps += [a.with_suffix(".inputs") for a in self.archives]
        for item in [minor.kubernetes, str(self.kind), str(self.crictl), self.rootfs.name, self.pause_ref]:
            h.update(item.encode() + b"\0")
        for stamp in sorted(stamps):
            h.update(stamp.read_bytes() + b"\0")
        return h.hexdigest()[:16]


def node_parts(matrix: Matrix, minor: Minor, progress: Progress = _stderr) -> Parts:
    pins = kind_pins()
    bins = ensure_node_binaries(minor, progress)
    rootfs = ensure_rootfs("node", pins.node_suite, pins.node_apt, progress)
    images_out = cache_root() / "kind" / "images" / minor.kubernetes
    return Parts(
        kind=module_dir("sigs.k8s.io/kind", matrix.kind_version),
        bins=bins,
        containerd=ensure_containerd(matrix, progress),
        crictl=go_install_tool(pins.crictl_module, pins.crictl_version, progress),
        rootfs=rootfs,
        archives=ensure_cp_images(minor, bins, rootfs, Path(matrix.nodes.busybox), images_out, progress),
        pause_ref=kubeadm_images(bins / "kubeadm", minor)["pause"],
    )


def _copy_base_files(kind: Path, root: Path) -> None:
    """images/base/files as the Dockerfile's COPY lines place them (modes included)."""
    files = kind / "images" / "base" / "files"
    shutil.copytree(files / "etc", root / "etc", dirs_exist_ok=True)
    shutil.copytree(files / "kind", root / "kind", dirs_exist_ok=True)
    for script in (files / "usr" / "local" / "bin").iterdir():
        shutil.copyfile(script, root / "usr" / "local" / "bin" / script.name)
    for path in root.joinpath("kind").rglob("*"):
        path.chmod(0o755 if path.is_dir() or path.parent.name == "bin" else 0o644)
    for path in (root / "usr" / "local" / "bin").iterdir():
        path.chmod(0o755)
    root.joinpath("kind").chmod(0o755)


def _systemd_setup(root: Path) -> None:
    """The Dockerfile's systemd clean-up and `systemctl enable` steps, in a chroot."""
    lib = root / "lib" / "systemd" / "system"
    for pattern in (
        "sysinit.target.wants/systemd-tmpfiles-setup.service",
        "multi-user.target.wants/*",
        "local-fs.target.wants/*",
        "sockets.target.wants/*udev*",
        "sockets.target.wants/*initctl*",
        "basic.target.wants/*",
    ):
        for path in lib.glob(pattern):
            path.unlink()
    for path in (root / "etc" / "systemd" / "system").glob("*.wants/*"):
        path.unlink()
    with (root / "etc" / "systemd" / "journald.conf").open("a") as f:
        f.write("ReadKMsg=no\n")
    for unit in ("kubelet.service", "containerd.service", "undo-mount-hacks.service"):
        _chroot(root, "systemctl", "enable", unit)
    _chroot(root, "systemctl", "mask", "systemd-binfmt.service")
    (root / "etc" / "kubernetes" / "manifests").mkdir(parents=True, exist_ok=True)


def _chroot(root: Path, *argv: str) -> None:
    done = subprocess.run(["chroot", str(root), *argv], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise HarnessError(f"chroot {' '.join(argv)} failed: {done.stderr.strip()[-500:]}")


def _containerd_setup(root: Path, containerd: Path, pause_ref: str) -> None:
    bin_dir = root / "usr" / "local" / "bin"
    for name in ("containerd", "containerd-shim-runc-v2", "ctr"):
        shutil.copyfile(containerd / name, bin_dir / name)
        (bin_dir / name).chmod(0o755)
    spec = json.loads(
        subprocess.run([str(containerd / "ctr"), "oci", "spec"], capture_output=True, check=True).stdout
    )
    hooks = spec.setdefault("hooks", {}).setdefault("createContainer", [])
    hooks.append({"path": "/kind/bin/mount-product-files.sh"})
    spec["process"].pop("rlimits", None)
    (root / "etc" / "containerd" / "cri-base.json").write_text(json.dumps(spec, indent=2))
    config = root / "etc" / "containerd" / "config.toml"
    text = config.read_text().replace("restrict_oom_score_adj = false", "restrict_oom_score_adj = true")
    text = text.replace('sandbox_image = "registry.k8s.io/pause:3.10"', f'sandbox_image = "{pause_ref}"')
    config.write_text(text)
    unit = root / "etc" / "systemd" / "system" / "containerd.service"
    lines = [ln for ln in unit.read_text().splitlines() if not ln.startswith("OOMScoreAdjust=")]
    at = lines.index("ExecStart=/usr/local/bin/containerd") + 1
    # The import outlasts systemd's default 90 s start timeout on a busy host.
    post = ["ExecStartPost=/kind/bin/import-images.sh", "TimeoutStartSec=15min"]
    unit.write_text("\n".join([*lines[:at], *post, *lines[at:]]) + "\n")
    script = root / "kind" / "bin" / "import-images.sh"
    script.write_text(IMPORT_SCRIPT)
    script.chmod(0o755)
    dropin = root / "etc" / "systemd" / "system" / "kubelet.service.d" / "20-dra-harness.conf"
    dropin.write_text(KUBELET_AFTER_CONTAINERD)  # not before the images are in


def _assemble(root: Path, parts: Parts, minor: Minor, progress: Progress) -> None:
    progress(f"assembling the node image of {minor.kubernetes}")
    subprocess.run(["tar", "-C", str(root), "--numeric-owner", "-xf", str(parts.rootfs)], check=True)
    _copy_base_files(parts.kind, root)
    _systemd_setup(root)
    for name in ("kubelet", "kubeadm", "kubectl"):
        shutil.copyfile(parts.bins / name, root / "usr" / "bin" / name)
        (root / "usr" / "bin" / name).chmod(0o755)
    shutil.copyfile(parts.crictl, root / "usr" / "local" / "bin" / "crictl")
    (root / "usr" / "local" / "bin" / "crictl").chmod(0o755)
    (root / "opt" / "cni").mkdir(parents=True, exist_ok=True)
    (root / "opt" / "cni" / "bin").symlink_to("/usr/lib/cni")
    _containerd_setup(root, parts.containerd, parts.pause_ref)
    (root / "kind" / "images").mkdir(parents=True, exist_ok=True)
    for archive in parts.archives:
        shutil.copyfile(archive, root / "kind" / "images" / archive.name)
    (root / "kind" / "version").write_text(minor.kubernetes + "\n")


def built_inputs(engine: Engine, ref: str) -> str | None:
    out = docker(
        "image",
        "inspect",
        "--format",
        f'{{{{index .Config.Labels "{INPUTS_LABEL}"}}}}',
        ref,
        host=engine.host,
    )
    return out.stdout.strip() if out.returncode == 0 else None


def ensure_node_image(engine: Engine, parts: Parts, minor: Minor, progress: Progress = _stderr) -> str:
    """The local node image of `minor` in `engine`, built unless one of the same inputs is there."""
    ref = local_node_image(minor)
    inputs = parts.inputs(minor)
    if built_inputs(engine, ref) == inputs:
        progress(f"{ref}: up to date")
        return ref
    start = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="kind-node-", dir=cache_root() / "kind"))
    try:
        root = work / "root"
        root.mkdir()
        _assemble(root, parts, minor, progress)
        env = {**os.environ, **engine.env()}
        progress(f"importing {ref} into the engine")
        tar = subprocess.Popen(["tar", "-C", str(root), "--numeric-owner", "-c", "."], stdout=subprocess.PIPE)
        changes = ["ENV container=docker", 'ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]']
        argv = ["docker", "import", *[a for c in changes for a in ("--change", c)], "-", f"{ref}-base"]
        done = subprocess.run(argv, stdin=tar.stdout, capture_output=True, text=True, env=env, check=False)
        tar.wait()
        if done.returncode != 0:
            raise HarnessError(f"docker import failed: {done.stderr.strip()[-500:]}")
        # docker 20.10 refuses `import --change STOPSIGNAL`: a two-line build, offline.
        context = work / "context"
        context.mkdir()
        (context / "Dockerfile").write_text(
            f"FROM {ref}-base\nSTOPSIGNAL SIGRTMIN+3\nLABEL {INPUTS_LABEL}={inputs}\n"
        )
        build = ["docker", "build", "-q", "-t", ref, str(context)]
        done = subprocess.run(
            build, capture_output=True, text=True, env={**env, "DOCKER_BUILDKIT": "0"}, check=False
        )
        if done.returncode != 0:
            raise HarnessError(f"docker build of {ref} failed: {done.stderr.strip()[-500:]}")
        docker("rmi", f"{ref}-base", host=engine.host)
        docker("image", "prune", "--force", host=engine.host)  # the image this one replaced
    finally:
        shutil.rmtree(work, ignore_errors=True)
    progress(f"{ref}: built in {time.monotonic() - start:.0f}s")
    return ref


def build_images(matrix: Matrix, minor: Minor, progress: Progress = _stderr, *, harness: bool = False) -> str:
    """`dra-harness kind images [--harness]`: the node image of `minor` and the fake driver's
    image (and the harness image) into the engine kind will use (the machine's Docker, or the
    harness's own, started for the build and stopped after it)."""
    parts = node_parts(matrix, minor, progress)  # the long builds, before any engine runs
    archives = [ensure_driver_archive(progress)]
    archives += [ensure_harness_archive(progress)] if harness else []
    engine = Engine().start()
    try:
        ref = ensure_node_image(engine, parts, minor, progress)
        for archive in archives:
            load_archive(engine, archive, progress)
        return ref
    finally:
        engine.stop()


def load_archive(engine: Engine, archive: Path, progress: Progress = _stderr) -> None:
    """`docker load` a docker-archive unless the engine has its image (same image ID) already."""
    with tarfile.open(archive) as tar:
        member = tar.extractfile("manifest.json")
        assert member is not None
        manifest = json.load(member)[0]
    image_id = "sha256:" + manifest["Config"].removesuffix(".json")
    ref = manifest["RepoTags"][0]
    if docker("image", "inspect", "--format", "{{.Id}}", ref, host=engine.host).stdout.strip() == image_id:
        return
    progress(f"loading {ref} into the engine")
    done = docker("load", "-i", str(archive), host=engine.host, timeout=600)
    if done.returncode != 0:
        raise HarnessError(f"docker load {archive.name} failed: {done.stderr.strip()[-300:]}")
