"""The wrapper modfiles are generated from k8s.io/kubernetes's own go.mod, never by hand."""

from __future__ import annotations

import re

import pytest

from harness.controlplane.build import CONTROLPLANE_DIR, modfile_path
from harness.controlplane.modfile import (
    Standin,
    render_modfile,
    staging_modules,
    standins_needed,
    standins_used,
    without_standins,
)
from harness.core.versions import load_matrix

UPSTREAM = """module k8s.io/kubernetes

go 1.26.0

godebug default=go1.26

require (
	go.etcd.io/etcd/server/v3 v3.7.0 // indirect
	k8s.io/api v0.0.0
)

replace (
	k8s.io/api => ./staging/src/k8s.io/api
	k8s.io/streaming => ./staging/src/k8s.io/streaming
	example.com/other => example.com/other v1.0.0
)
"""


def test_staging_modules_are_exactly_the_local_replaces() -> None:
    assert staging_modules(UPSTREAM) == ["k8s.io/api", "k8s.io/streaming"]


def test_render_pins_each_staging_module_to_the_release() -> None:
    text = render_modfile(UPSTREAM, "v1.37.2", "v0.37.2")
    assert "\tk8s.io/kubernetes v1.37.2\n" in text
    assert "\tgo.etcd.io/etcd/server/v3 v3.7.0\n" in text
    assert (
        "\nreplace (\n\tk8s.io/api => k8s.io/api v0.37.2\n\tk8s.io/streaming => k8s.io/streaming v0.37.2\n)\n"
        in text
    )
    assert "\ngo 1.26.0\n" in text
    assert "\ngodebug default=go1.26\n" in text


def test_render_refuses_a_file_that_is_not_kubernetes_go_mod() -> None:
    with pytest.raises(ValueError, match=r"not a k8s\.io/kubernetes go\.mod"):
        render_modfile("module example.com/x\n\ngo 1.26.0\n", "v1.37.2", "v0.37.2")


@pytest.mark.parametrize("minor", list(load_matrix().minors))
def test_committed_modfile_matches_versions_toml(minor: str) -> None:
    m = load_matrix().minor(minor)
    text = modfile_path(m).read_text()
    assert f"k8s.io/kubernetes@{m.kubernetes} " in text.splitlines()[0]
    assert re.search(rf"^\tk8s.io/kubernetes {re.escape(m.kubernetes)}$", text, re.MULTILINE)
    replaces = re.findall(r"^\t(k8s\.io/[\w.-]+) => \1 (\S+)$", text, re.MULTILINE)
    # 31 staging modules through 1.35; k8s.io/cri-streaming and k8s.io/streaming arrive in 1.36,
    # k8s.io/apiextensions-api and k8s.io/ktesting in 1.38 (go.mod lines 222 and 242 @ v1.38.0-beta.0).
    assert len(replaces) == {(1, 34): 31, (1, 35): 31, (1, 36): 33, (1, 37): 33, (1, 38): 35}[m.number]
    assert {v for _, v in replaces} == {m.staging}
    assert modfile_path(m).with_suffix(".sum").exists()


# -- stand-ins: the real module first, the project's own only while the proxy refuses it --------

RELEASE = UPSTREAM.replace(
    "\tk8s.io/api v0.0.0\n", "\tk8s.io/api v0.0.0\n\tsigs.k8s.io/iptables-wrappers v1.0.0 // indirect\n"
)
REFUSAL = "refused on 2026-12-07: reading https://proxy.golang.org/...v1.0.0.zip: 403 Forbidden"


def test_a_module_the_proxy_refuses_is_replaced_by_its_stand_in_with_the_reason() -> None:
    asked: list[str] = []

    def refusing(module: str, version: str) -> str | None:
        asked.append(f"{module}@{version}")
        return REFUSAL

    standins = standins_needed(RELEASE, refusing)
    assert asked == ["sigs.k8s.io/iptables-wrappers@v1.0.0"]
    assert standins == [Standin("sigs.k8s.io/iptables-wrappers", "v1.0.0", "iptables-wrappers", REFUSAL)]
    text = render_modfile(RELEASE, "v1.38.0-beta.0", "v0.38.0-beta.0", standins)
    assert text.endswith(
        f"\n// stand-in: sigs.k8s.io/iptables-wrappers@v1.0.0: {REFUSAL}\n"
        "// stand-in: drop the day it is served: regenerate (python -m harness.controlplane.modfile)\n"
        "replace sigs.k8s.io/iptables-wrappers v1.0.0 => ./iptables-wrappers // stand-in\n"
    )
    assert standins_used(text) == standins
    # the control plane's inputs hash reads the modfile without them: k8slocal imports none
    assert without_standins(text) == render_modfile(RELEASE, "v1.38.0-beta.0", "v0.38.0-beta.0")


def test_the_bump_to_a_release_the_proxy_serves_drops_the_stand_in() -> None:
    # The day v1.38.0 is pinned and its modules are served, regenerating leaves no replace.
    text = render_modfile(RELEASE, "v1.38.0", "v0.38.0", standins_needed(RELEASE, lambda m, v: None))
    assert "stand-in" not in text
    assert "iptables-wrappers" not in text
    assert standins_used(text) == []


def test_a_minor_that_does_not_require_the_module_asks_nothing() -> None:
    assert standins_needed(UPSTREAM, lambda m, v: pytest.fail(f"{m}@{v} was asked")) == []


@pytest.mark.parametrize("minor", list(load_matrix().minors))
def test_every_stand_in_a_committed_modfile_names_is_in_the_repository(minor: str) -> None:
    used = standins_used(modfile_path(load_matrix().minor(minor)).read_text())
    # 1.38 (v1.38.0-beta.0): the kubelet's sigs.k8s.io/iptables-wrappers, refused by the proxy
    assert [s.module for s in used] == (["sigs.k8s.io/iptables-wrappers"] if minor == "1.38" else [])
    for s in used:
        assert s.reason.startswith("refused on 20"), s
        assert (CONTROLPLANE_DIR / s.directory / "go.mod").read_text().startswith("//")
        assert f"\nmodule {s.module}\n" in (CONTROLPLANE_DIR / s.directory / "go.mod").read_text()
