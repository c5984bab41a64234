"""Which sigs.k8s.io/iptables-wrappers the 1.38 kubelet is built with, asked of the module proxy
today: the real module first (`go mod download`), the project's stand-in
(controlplane/iptables-wrappers) only while its source is refused. The committed modfile must
agree with the proxy's answer; the day the proxy serves it, this test fails with the one command
that drops the stand-in. every_minor: `make test-minors` (it asks the network)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.controlplane.build import _go_env, modfile_path, module_dir
from harness.controlplane.modfile import proxy_probe, standins_needed, standins_used
from harness.core.versions import Minor, load_matrix

pytestmark = pytest.mark.every_minor


def modfile_copy(minor: Minor, directory: Path) -> Path:
    """The minor's modfile and go.sum copied: the go command (-mod=mod) may add lines to them,
    never to the committed ones (whose bytes are every build's inputs)."""
    mod = modfile_path(minor)
    copy = directory / mod.name
    shutil.copyfile(mod, copy)
    shutil.copyfile(mod.with_suffix(".sum"), copy.with_suffix(".sum"))
    return copy


@pytest.mark.parametrize("minor", ["1.38"])
def test_the_modfile_uses_the_real_module_whenever_the_proxy_serves_it(
    minor: str, capsys: pytest.CaptureFixture[str]
) -> None:
    m = load_matrix().minor(minor)
    upstream = (module_dir("k8s.io/kubernetes", m.kubernetes, m) / "go.mod").read_text()
    needed = standins_needed(upstream, proxy_probe(_go_env(m)))
    used = standins_used(modfile_path(m).read_text())
    with capsys.disabled():  # the answer, in make test-minors' output
        for s in needed:
            print(f"\n{minor}: {s.module}@{s.version}: the project's stand-in ./{s.directory} ({s.reason})")
        for s in used:
            if (s.module, s.version) not in {(n.module, n.version) for n in needed}:
                print(f"\n{minor}: {s.module}@{s.version}: the proxy serves it now")
    assert [(s.module, s.version) for s in used] == [(s.module, s.version) for s in needed], (
        f"the committed {modfile_path(m).name} does not match the proxy's answer today: "
        f"regenerate it: python -m harness.controlplane.modfile {minor}"
    )


# The builds that import the module at v1.38.0-beta.0 (`go list -deps`): the kubelet
# (pkg/kubelet/kubelet_network_linux.go) and the kind node image's kube-proxy
# (cmd/kube-proxy/app/server_linux.go, pkg/proxy/iptables, pkg/proxy/ipvs); kubeadm and kubectl none.
IMPORTERS = {
    "k8s.io/kubernetes/cmd/kubelet": ["k8s.io/kubernetes/pkg/kubelet"],
    "k8s.io/kubernetes/cmd/kube-proxy": [
        "k8s.io/kubernetes/cmd/kube-proxy/app",
        "k8s.io/kubernetes/pkg/proxy/iptables",
        "k8s.io/kubernetes/pkg/proxy/ipvs",
    ],
    "k8s.io/kubernetes/cmd/kubeadm": [],
    "k8s.io/kubernetes/cmd/kubectl": [],
}


@pytest.mark.parametrize("minor", ["1.38"])
def test_which_builds_import_the_module_and_what_kind_runs_for_it(
    minor: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import subprocess

    from harness.clusters.kind.config import kube_proxy_fact, kube_proxy_mode
    from harness.controlplane.build import CONTROLPLANE_DIR

    m = load_matrix().minor(minor)
    template = "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}"
    for command, importers in IMPORTERS.items():
        argv = ["go", "list", f"-modfile={modfile_copy(m, tmp_path)}", "-deps", "-f", template, command]
        done = subprocess.run(
            argv,
            cwd=CONTROLPLANE_DIR,
            env=_go_env(m),
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        found = sorted(
            line.split()[0]
            for line in done.stdout.splitlines()
            if " sigs.k8s.io/iptables-wrappers/" in line + " "
        )
        assert found == importers, command
    with capsys.disabled():
        print(f"\n{minor}: kube-proxy on kind: {kube_proxy_fact(m, kube_proxy_mode(m))}")


@pytest.mark.parametrize("minor", ["1.38"])
def test_the_standins_go_tests_pass(minor: str, tmp_path: Path) -> None:
    """The stand-in's own Go tests (its pure helpers, New's error), with the minor's modfile and Go."""
    import subprocess

    from harness.controlplane.build import CONTROLPLANE_DIR

    m = load_matrix().minor(minor)
    used = standins_used(modfile_path(m).read_text())
    if not used:
        pytest.skip(f"{modfile_path(m).name} uses no stand-in")
    for s in used:
        argv = ["go", "test", f"-modfile={modfile_copy(m, tmp_path)}", f"{s.module}/..."]
        done = subprocess.run(
            argv,
            cwd=CONTROLPLANE_DIR,
            env=_go_env(m),
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        assert done.stdout.startswith(f"ok  \t{s.module}/pkg/iptables"), done.stdout
