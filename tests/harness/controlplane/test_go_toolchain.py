"""A minor whose go.mod needs a newer Go than the machine has (1.38: `go 1.27.0`, machines on
Go 1.26) builds with versions.toml's go_toolchain, set as GOTOOLCHAIN by the build code on every
go command of that minor; a machine that cannot fetch it is told so in one line."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.controlplane import build, nodeparts, schedperf
from harness.controlplane.build import _go_env, binary_path, go_identity, required_go
from harness.controlplane.nodeparts import kubelet_path
from harness.core.errors import HarnessError
from harness.core.versions import REPO_ROOT, load_matrix

MATRIX = load_matrix()
M138 = MATRIX.minor("1.38")
M137 = MATRIX.minor("1.37")


def test_the_1_38_toolchain_is_as_new_as_its_go_mod_asks() -> None:
    assert required_go(build.modfile_path(M138)) == (1, 27, 0)
    assert M138.go_toolchain == "go1.27.3"


def test_every_go_command_of_1_38_runs_with_its_toolchain_and_the_others_with_the_local_go() -> None:
    assert _go_env(M138)["GOTOOLCHAIN"] == "go1.27.3"
    assert _go_env(M137).get("GOTOOLCHAIN") == os.environ.get("GOTOOLCHAIN")
    assert _go_env().get("GOTOOLCHAIN") == os.environ.get("GOTOOLCHAIN")


def test_the_inputs_hashes_name_the_toolchain() -> None:
    other = dataclasses.replace(M138, go_toolchain="go1.27.4")
    assert go_identity(M138) == "GOTOOLCHAIN=go1.27.3"
    assert build._inputs_hash(other) != build._inputs_hash(M138)
    assert nodeparts._kubelet_digest(other) != nodeparts._kubelet_digest(M138)
    assert schedperf._inputs_hash(other) != schedperf._inputs_hash(M138)


def _built_by(binary: Path) -> str:
    done = subprocess.run(["go", "version", str(binary)], capture_output=True, text=True, check=True)
    return done.stdout.split(": ", 1)[1].strip()


@pytest.mark.every_minor
def test_the_1_38_binaries_are_built_by_its_toolchain() -> None:
    if not build.controlplane_built(M138):  # make test-minors builds it; plain pytest may not
        pytest.skip("k8slocal 1.38 is not built here: `make controlplane K8S=1.38`")
    assert _built_by(binary_path(M138)) == "go1.27.3"
    assert _built_by(binary_path(M137)) == "go" + ".".join(map(str, build.go_version()))
    if nodeparts.kubelet_built(M138):
        assert _built_by(kubelet_path(M138)) == "go1.27.3"


@pytest.mark.parametrize(
    "command",
    [["controlplane", "build", "-k", "1.38"], ["cluster", "up", "-k", "1.38", "--name", "no-go-1-27"]],
    ids=["controlplane-build", "cluster-up"],
)
def test_a_toolchain_that_cannot_be_fetched_is_one_line(tmp_path: Path, command: list[str]) -> None:
    env = dict(
        os.environ,
        XDG_CACHE_HOME=str(tmp_path / "cache"),
        GOMODCACHE=str(tmp_path / "gomodcache"),  # no toolchain downloaded yet
        GOPROXY="off",  # and none to be had
    )
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli.main", *command],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    platform = subprocess.run(
        ["go", "env", "GOOS", "GOARCH"], capture_output=True, text=True, check=True
    ).stdout.split()
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        "dra-harness: cannot fetch the Go toolchain GOTOOLCHAIN=go1.27.3 that Kubernetes "
        "v1.38.0-beta.0 needs from the module proxy (GOPROXY=off): "
        f"go: download go1.27.3 for {'/'.join(platform)}: toolchain not available\n"
    )
    assert not (tmp_path / "cache" / "dra-harness" / "bin" / "v1.38.0-beta.0" / "k8slocal").exists()


def test_a_modfile_whose_stand_in_is_missing_is_one_line_and_builds_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 1.38's modfile with its replace pointing at a directory that is not there; the kubelet
    # goes to an empty cache: the refusal comes before any go command, and leaves no binary.
    text = build.modfile_path(M138).read_text().replace("=> ./iptables-wrappers", "=> ./no-such-stand-in")
    mod = tmp_path / "1.38.mod"
    mod.write_text(text)
    monkeypatch.setattr(nodeparts, "modfile_path", lambda _: mod)
    monkeypatch.setattr(nodeparts, "kubelet_path", lambda _: tmp_path / "bin" / "kubelet")
    monkeypatch.setattr(nodeparts, "check_go", lambda *_: pytest.fail("go was asked"))
    with pytest.raises(HarnessError) as err:
        nodeparts.ensure_kubelet(M138)
    assert str(err.value) == (
        "1.38.mod replaces sigs.k8s.io/iptables-wrappers with ./no-such-stand-in, which is missing "
        f"({build.CONTROLPLANE_DIR / 'no-such-stand-in' / 'go.mod'}); regenerate it: "
        "python -m harness.controlplane.modfile"
    )
    assert "\n" not in str(err.value)
    assert not (tmp_path / "bin").exists()
    assert nodeparts.kubelet_built(M138) is None  # and the status says not built, no traceback
