"""A kubeconfig the client cannot use is one line naming the file and the defect, exit 1 (the
pytest plugin: a usage error), for the scan, the fake driver and the pytest plugin; it is
found before any request, and never as a traceback."""

from __future__ import annotations

import base64
import copy
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from fake_driver.api.kubeconfig import check_kubeconfig
from fake_driver.command.cli import main as fake_driver_main
from harness.cli.main import main as harness_main
from harness.core.versions import REPO_ROOT


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


PEM = _b64(b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
GOOD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Config",
    "current-context": "ctx",
    "clusters": [
        {"name": "c", "cluster": {"server": "https://127.0.0.1:1", "certificate-authority-data": PEM}}
    ],
    "users": [{"name": "u", "user": {"client-certificate-data": PEM, "client-key-data": PEM}}],
    "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
}


def _edit(change: Callable[[dict[str, Any]], object]) -> bytes:
    doc = copy.deepcopy(GOOD)
    change(doc)
    return yaml.safe_dump(doc).encode()


# (id, file content, what follows "kubeconfig <path>" in the message)
DEFECTS = [
    (
        "not-yaml",
        b"clusters: [unclosed",
        " is not YAML: expected ',' or ']', but got '<stream end>' at line 1, column 20",
    ),
    ("yaml-list", b"- a\n- b\n", " holds a YAML list, not a kubeconfig mapping"),
    ("yaml-scalar", b"just text\n", " holds a YAML string, not a kubeconfig mapping"),
    ("empty", b"", " is empty"),
    ("not-utf8", b"apiVersion: v1\nkind: \xff\xfe\n", " is not UTF-8 text (byte 0xff at offset 21)"),
    (
        "ca-not-base64",
        _edit(lambda d: d["clusters"][0]["cluster"].update({"certificate-authority-data": "not*base64"})),
        ": certificate-authority-data of cluster 'c' is not valid base64",
    ),
    (
        "client-cert-not-base64",
        _edit(lambda d: d["users"][0]["user"].update({"client-certificate-data": "LS0tL"})),
        ": client-certificate-data of user 'u' is not valid base64",
    ),
    (
        "client-key-not-base64",
        _edit(lambda d: d["users"][0]["user"].update({"client-key-data": "%%%"})),
        ": client-key-data of user 'u' is not valid base64",
    ),
    (
        "ca-not-pem",
        _edit(lambda d: d["clusters"][0]["cluster"].update({"certificate-authority-data": _b64(b"hello")})),
        ": certificate-authority-data of cluster 'c' holds no PEM block",
    ),
    ("no-current-context", _edit(lambda d: d.pop("current-context")), " has no current-context"),
    (
        "unknown-context",
        _edit(lambda d: d.update({"current-context": "nope"})),
        " has no context 'nope' (contexts: ctx)",
    ),
    (
        "unknown-cluster",
        _edit(lambda d: d["contexts"][0]["context"].update({"cluster": "gone"})),
        " has no cluster 'gone' (clusters: c)",
    ),
    (
        "unknown-user",
        _edit(lambda d: d["contexts"][0]["context"].update({"user": "gone"})),
        " has no user 'gone' (users: u)",
    ),
    ("no-server", _edit(lambda d: d["clusters"][0]["cluster"].pop("server")), ": cluster 'c' has no server"),
    (
        "clusters-not-a-list",
        _edit(lambda d: d.update({"clusters": {"c": 1}})),
        ": clusters is not a list of mappings",
    ),
]


def _kubeconfig(tmp_path: Path, content: bytes | None) -> Path:
    """The defect's file; None: a directory where the file should be."""
    path = tmp_path / "kubeconfig"
    if content is None:
        path.mkdir()
    else:
        path.write_bytes(content)
    return path


ALL = [pytest.param(c, m, id=i) for i, c, m in DEFECTS] + [
    pytest.param(None, " is a directory, not a file", id="directory")
]


def test_the_base_kubeconfig_passes_the_check(tmp_path: Path) -> None:
    checked = check_kubeconfig(_kubeconfig(tmp_path, yaml.safe_dump(GOOD).encode()))
    assert (checked.context, checked.server) == ("ctx", "https://127.0.0.1:1")


@pytest.mark.parametrize(("content", "defect"), ALL)
def test_the_scan_names_the_kubeconfigs_defect_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes | None, defect: str
) -> None:
    path = _kubeconfig(tmp_path, content)
    assert harness_main(["scan", f"--kubeconfig={path}"]) == 1
    assert capsys.readouterr() == ("", f"dra-harness: kubeconfig {path}{defect}\n")


@pytest.mark.parametrize(("content", "defect"), ALL)
def test_the_fake_driver_names_the_kubeconfigs_defect_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes | None, defect: str
) -> None:
    path = _kubeconfig(tmp_path, content)
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text("pools: [{name: x, profile: t4, gpus: 1}]\n")
    assert fake_driver_main(["publish", f"--fleet={fleet}", f"--kubeconfig={path}"]) == 1
    assert capsys.readouterr() == ("", f"fake_driver: error: kubeconfig {path}{defect}\n")


def test_the_fake_driver_names_an_unknown_context_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _kubeconfig(tmp_path, yaml.safe_dump(GOOD).encode())
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text("pools: [{name: x, profile: t4, gpus: 1}]\n")
    assert fake_driver_main(["remove", f"--fleet={fleet}", f"--kubeconfig={path}", "--context=other"]) == 1
    assert (
        capsys.readouterr().err
        == f"fake_driver: error: kubeconfig {path} has no context 'other' (contexts: ctx)\n"
    )


PYTEST = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--cluster-provider=existing"]


# The plugin's wiring, not the checks again: three defects of different kinds.
@pytest.mark.parametrize(
    ("content", "defect"), [p for p in ALL if p.id in ("not-yaml", "ca-not-base64", "directory")]
)
def test_the_pytest_plugin_stops_on_the_kubeconfigs_defect_before_collection(
    tmp_path: Path, content: bytes | None, defect: str
) -> None:
    path = _kubeconfig(tmp_path, content)
    done = subprocess.run(
        [*PYTEST, f"--kubeconfig={path}", "suites/smoke"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    # pytest's usage error: its one line, then a blank one.
    assert (done.returncode, done.stdout, done.stderr) == (4, "", f"ERROR: kubeconfig {path}{defect}\n\n")


def test_a_defect_only_the_client_finds_is_one_line_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "no-such-ca.crt"
    path = _kubeconfig(
        tmp_path,
        _edit(
            lambda d: d["clusters"][0].update(
                {"cluster": {"server": "https://x", "certificate-authority": str(missing)}}
            )
        ),
    )
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text("pools: [{name: x, profile: t4, gpus: 1}]\n")
    line = f"cannot use kubeconfig {path}: File does not exist: {missing}\n"
    assert harness_main(["scan", f"--kubeconfig={path}"]) == 1
    assert capsys.readouterr() == ("", f"dra-harness: {line}")
    assert fake_driver_main(["publish", f"--fleet={fleet}", f"--kubeconfig={path}"]) == 1
    assert capsys.readouterr() == ("", f"fake_driver: error: {line}")


def test_a_scan_of_a_context_the_kubeconfig_lacks_names_the_contexts_it_has(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    two = copy.deepcopy(GOOD)
    two["contexts"].append({"name": "gke_prod", "context": {"cluster": "c", "user": "u"}})
    path = _kubeconfig(tmp_path, yaml.safe_dump(two).encode())

    assert harness_main(["scan", f"--kubeconfig={path}", "--context", "eks-prod"]) == 1
    assert capsys.readouterr() == (
        "",
        f"dra-harness: kubeconfig {path} has no context 'eks-prod' (contexts: ctx, gke_prod)\n",
    )
