"""The Python images built without a registry (harness.clusters.kind.images.pyimage), without
building one: what the harness image holds matches the checkout and pyproject.toml, the cache
key follows the files copied in, staging lays them out as the image will. The images
themselves run in tests/e2e/test_kind_cluster.py (the driver) and test_qualify_kind_job.py
(the harness, `make test-kind-qualify`)."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import yaml

from harness.clusters.kind.images import harnessimage
from harness.clusters.kind.images.driver import driver_image
from harness.clusters.kind.images.pyimage import DIST_PACKAGES, PythonImage, _stage
from harness.core.versions import REPO_ROOT
from harness.qualify.job import job_objects

PYPROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]


def test_the_harness_image_holds_every_pin_and_the_checkout_parts_qualify_reads() -> None:
    image = harnessimage.harness_image()
    assert sorted(image.pins) == sorted(PYPROJECT["dependencies"])
    assert all(path.exists() for path in image.trees.values())
    assert set(image.trees) == {f"opt/dra-harness/{part}" for part in harnessimage.CHECKOUT_PARTS}
    assert image.files[f"{DIST_PACKAGES}/dra-harness.pth"] == b"/opt/dra-harness\n"
    [container] = job_objects()[1]["spec"]["template"]["spec"]["containers"]
    assert (container["image"], container["command"]) == (image.ref, ["dra-harness"])


def test_the_harness_image_s_entry_points_are_pyproject_s() -> None:
    [dist_info] = {
        name.rsplit("/", 1)[0] for name in harnessimage.harness_image().files if "dist-info" in name
    }
    assert dist_info.endswith(f"/dra_harness-{PYPROJECT['version']}.dist-info")
    expected = (
        f"[console_scripts]\ndra-harness = {PYPROJECT['scripts']['dra-harness']}\n\n"
        f"[pytest11]\ndra_harness = {PYPROJECT['entry-points']['pytest11']['dra_harness']}\n"
    )
    assert expected == harnessimage.ENTRY_POINTS


def test_the_cache_key_follows_the_copied_files_not_their_bytecode(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text("x = 1\n")
    image = PythonImage(stem="t", ref="t:dev", pins=["pyyaml==6.0.4"], trees={"opt/pkg": tmp_path / "pkg"})
    before = image.digest()
    (tmp_path / "pkg" / "__pycache__").mkdir()
    (tmp_path / "pkg" / "__pycache__" / "mod.cpython-311.pyc").write_bytes(b"\0")
    assert image.digest() == before
    (tmp_path / "pkg" / "mod.py").write_text("x = 2\n")
    assert image.digest() != before
    assert driver_image().digest() != harnessimage.harness_image().digest()


def test_staging_copies_the_trees_and_makes_scripts_executable(tmp_path: Path) -> None:
    (tmp_path / "src" / "__pycache__").mkdir(parents=True)
    (tmp_path / "src" / "a.py").write_text("")
    (tmp_path / "src" / "__pycache__" / "a.pyc").write_bytes(b"")
    (tmp_path / "one.toml").write_text("")
    files = {"usr/local/bin/tool": b"#!/usr/bin/python3\n", "etc/tool.conf": b"x\n"}
    image = PythonImage(
        stem="t",
        ref="t:dev",
        pins=[],
        trees={"opt/p/src": tmp_path / "src", "opt/p/one.toml": tmp_path / "one.toml"},
        files=files,
    )
    root = tmp_path / "root"
    _stage(image, root)
    staged = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
    assert staged == ["etc/tool.conf", "opt/p/one.toml", "opt/p/src/a.py", "usr/local/bin/tool"]
    assert os.access(root / "usr/local/bin/tool", os.X_OK)
    assert not os.access(root / "etc/tool.conf", os.X_OK)


def test_the_driver_image_s_entrypoint_is_the_kubelet_plugin_its_daemonset_gives_args_to() -> None:
    ds = yaml.safe_load((REPO_ROOT / "deploy" / "manifests" / "40-kubelet-plugin.yaml").read_text())
    [container] = ds["spec"]["template"]["spec"]["containers"]
    assert "command" not in container
    assert container["args"][0].startswith("--")
    image = driver_image()
    assert (list(image.entrypoint), list(image.cmd)) == (["python", "-m", "fake_driver.kubeletplugin"], [])
