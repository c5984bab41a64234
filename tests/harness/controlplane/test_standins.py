"""Which sigs.k8s.io/iptables-wrappers the 1.38 kubelet is built with, asked of the module proxy
today: the real module first (`go mod download`), the project's stand-in
(controlplane/iptables-wrappers) only while its source is refused. The committed modfile must
agree with the proxy's answer; the day the proxy serves it, this test fails with the one command
that drops the stand-in. every_minor: `make test-minors` (it asks the network)."""

from __future__ import annotations

import pytest

from harness.controlplane.build import _go_env, modfile_path, module_dir
from harness.controlplane.modfile import proxy_probe, standins_needed, standins_used
from harness.core.versions import load_matrix

pytestmark = pytest.mark.every_minor


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
