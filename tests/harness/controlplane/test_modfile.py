"""The wrapper modfiles are generated from k8s.io/kubernetes's own go.mod, never by hand."""

from __future__ import annotations

import re

import pytest

from harness.controlplane.build import modfile_path
from harness.controlplane.modfile import render_modfile, staging_modules
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
