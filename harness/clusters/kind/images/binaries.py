"""The Kubernetes binaries of a kind node image, built from the minor's modfile with the same
flags as the control plane and the kubelet (`CGO_ENABLED=0 -trimpath`, stamped alike), so the
Go build cache those builds filled serves these too."""

from __future__ import annotations

import shutil
from pathlib import Path

from harness.controlplane.build import (
    Progress,
    _stderr,
    build_lock,
    cache_root,
    check_go,
    go_build,
    go_identity,
    ldflags,
    modfile_path,
    standin_sources,
)
from harness.controlplane.nodeparts import _digest, _fresh, _stamp, ensure_kubelet
from harness.core.versions import Minor

# What kind's node image holds in /usr/bin (kubelet, kubeadm, kubectl) and the kube-proxy image
# runs: k8s.io/kubernetes/cmd/<name>. etcd and the control plane come from k8slocal, the
# project's multi-call build of them.
COMMANDS = ("kubeadm", "kubectl", "kube-proxy")


def node_bin_dir(minor: Minor) -> Path:
    return cache_root() / "bin" / minor.kubernetes / "kind"


def _digest_of(minor: Minor, command: str) -> str:
    mod = modfile_path(minor)
    sources = (mod.read_bytes(), mod.with_suffix(".sum").read_bytes())
    # kube-proxy 1.38 imports the iptables-wrappers stand-in: a change of it is a new binary
    inputs: list[bytes | str] = [
        *sources,
        ldflags(minor),
        command,
        *(p.read_bytes() for p in standin_sources(mod)),
    ]
    if minor.go_toolchain:  # the minors built by the local Go keep the digests their builds have
        inputs.append(go_identity(minor))
    return _digest(*inputs)


def ensure_node_binaries(minor: Minor, progress: Progress = _stderr) -> Path:
    """kubelet and COMMANDS of `minor` in one directory; each rebuilt only when its inputs change."""
    mod = modfile_path(minor)
    check_go(mod, f"the kind node binaries of {minor.kubernetes}", minor)
    directory = node_bin_dir(minor)
    directory.mkdir(parents=True, exist_ok=True)
    kubelet = ensure_kubelet(minor, progress)
    if not _fresh(directory / "kubelet", _digest_of(minor, "kubelet")):
        shutil.copyfile(kubelet, directory / "kubelet")
        (directory / "kubelet").chmod(0o755)
        _stamp(directory / "kubelet", _digest_of(minor, "kubelet"))
    for command in COMMANDS:
        binary = directory / command
        with build_lock(binary, f"{command} {minor.kubernetes}", progress):
            digest = _digest_of(minor, command)
            if _fresh(binary, digest):
                continue
            own = directory / "kind.mod"  # go.sum gains lines the control plane's does not have
            shutil.copyfile(mod, own)
            shutil.copyfile(mod.with_suffix(".sum"), own.with_suffix(".sum"))
            progress(f"building {command} {minor.kubernetes} into {binary}")
            label = f"{command} {minor.kubernetes}"
            go_build(minor, f"-modfile={own}", f"k8s.io/kubernetes/cmd/{command}", binary, label, progress)
            _stamp(binary, digest)
    return directory
