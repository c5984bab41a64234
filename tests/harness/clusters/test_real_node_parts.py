"""The real nodes' parts: images written as docker archives (what `ctr images import`
reads), and a pool asking for a kubelet that is not built gets one line saying how to build it."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import tarfile
from pathlib import Path

import pytest

from harness.clusters.host import state as hoststate
from harness.clusters.local.cluster import LocalCluster
from harness.clusters.realnodes.pools import RealPoolSpec
from harness.controlplane import images, nodeparts
from harness.core.errors import HarnessError
from harness.core.versions import load_matrix


def test_an_image_archive_names_its_layer_by_digest_and_its_tag(tmp_path: Path) -> None:
    binary = tmp_path / "pause"
    binary.write_bytes(b"\x7fELF fake")
    out = images.pause_image(tmp_path / "pause.tar", "dra-harness.local/pause:3.10.2", binary)

    with tarfile.open(out) as tar:
        names = sorted(tar.getnames())
        [manifest] = json.loads(tar.extractfile("manifest.json").read())  # type: ignore[union-attr]
        config_bytes = tar.extractfile(manifest["Config"]).read()  # type: ignore[union-attr]
        layer = tar.extractfile("layer.tar").read()  # type: ignore[union-attr]
    config = json.loads(config_bytes)
    assert names == sorted([manifest["Config"], "layer.tar", "manifest.json"])
    assert manifest["RepoTags"] == ["dra-harness.local/pause:3.10.2"]
    assert manifest["Config"] == hashlib.sha256(config_bytes).hexdigest() + ".json"
    assert config["rootfs"] == {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(layer).hexdigest()]}
    assert config["config"]["Entrypoint"] == ["/pause"]
    with tarfile.open(fileobj=io.BytesIO(layer)) as inner:
        [member] = inner.getmembers()
    assert (member.name, member.mode, member.mtime, member.uid) == ("pause", 0o755, 0, 0)


def test_the_same_inputs_give_the_same_archive(tmp_path: Path) -> None:
    binary = tmp_path / "pause"
    binary.write_bytes(b"same")
    first = images.pause_image(tmp_path / "a.tar", "x/pause:1", binary).read_bytes()
    assert images.pause_image(tmp_path / "b.tar", "x/pause:1", binary).read_bytes() == first


def test_a_pool_of_a_minor_whose_kubelet_is_not_built_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    why = hoststate.missing_requirement()
    if why:
        pytest.skip(why)
    matrix = load_matrix()
    minor = next(m for m in matrix.minors.values() if not m.kubelet_unavailable)
    # Whatever this machine has built: the kubelet looked for is one that is not there.
    monkeypatch.setattr(nodeparts, "kubelet_path", lambda _: tmp_path / "kubelet")
    assert nodeparts.kubelet_built(minor) is None
    cluster = LocalCluster(real_pools=[RealPoolSpec(minor=minor.name)])
    with pytest.raises(HarnessError) as err:
        cluster.start()
    assert str(err.value) == (
        f"the kubelet {minor.kubernetes} is not built: run "
        f"`dra-harness controlplane build -k {minor.name} --nodes` (or `make nodeparts K8S={minor.name}`)"
    )
    assert cluster.components == {}
    assert not cluster.run_dir.exists()  # the temporary run dir it made is gone with the refusal


def test_a_kubelet_versions_toml_calls_unavailable_is_refused_with_its_reason_before_any_go_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A synthetic minor: whether a real one's kubelet can be built changes with the module proxy.
    matrix = load_matrix()
    minor = dataclasses.replace(matrix.minor(matrix.default_minor), kubelet_unavailable="a module is missing")
    monkeypatch.setattr(nodeparts, "check_go", lambda *_: pytest.fail("go was asked"))
    expected = f"the kubelet {minor.kubernetes} cannot be built: a module is missing"
    for refused in (lambda: nodeparts.ensure_kubelet(minor), lambda: nodeparts.node_parts(minor, matrix)):
        with pytest.raises(HarnessError) as err:
            refused()
        assert str(err.value) == expected


@pytest.mark.parametrize(
    ("name", "prefix", "owned"),
    [
        ("drah1x", "drah1", True),
        ("drah1n2", "drah1", True),
        ("drah1k", "drah1", True),
        ("drah10x", "drah1", False),
        ("drah1n10", "drah1n1", False),
        ("drah1n1", "drah1n1", True),
        ("drah10x", "drah", True),
        ("eth0", "drah", False),
    ],
)
def test_a_slot_owns_only_its_own_links(name: str, prefix: str, owned: bool) -> None:
    # Releasing slot 1 must not delete slot 10's links (nor node 1's bridge node 10's).
    assert hoststate._under(name, prefix) is owned
