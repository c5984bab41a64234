"""CLI: bad input gives one line on stderr and exit 2; render needs no cluster."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from fake_driver.command.cli import main
from fake_driver.facts.personalities import PERSONALITIES


def _write(tmp_path: Path, text: str) -> str:
    p = tmp_path / "fleet.yaml"
    p.write_text(text)
    return str(p)


@pytest.mark.parametrize(
    ("fleet", "expected"),
    [
        (
            "pools: [{name: x, profile: h999, gpus: 1}]",
            "pool 'x': unknown GPU profile 'h999'; valid choices: a100-40gb, a100-80gb-pcie, b200, "
            "h100-80gb-hbm3, h200-141gb-hbm3e, l4, t4",
        ),
        (
            "pools: [{name: x, profile: t4, gpus: 1, personality: nvidia-v9}]",
            # every personality, sorted (a new one needs no edit here)
            "pool 'x': unknown personality 'nvidia-v9'; valid choices: " + ", ".join(sorted(PERSONALITIES)),
        ),
        (
            "pools: [{name: x, profile: t4, gpus: 1, colour: red}]",
            "pool 'x': unknown pool field 'colour'; valid choices: name, nodes, count, profile, gpus, "
            "personality, mig, device_plugin, time_slicing_replicas, dra, consumable_capacity, partitions, "
            "device_status, driver_version, cuda_driver_version",
        ),
        ("pools: [{name: x, profile: t4, gpus: 1, mig: static}]", "profile t4 is not MIG-capable"),
        (  # issue 41: a traceback in every reader of the fleet
            "pools: [{name: x, profile: t4, gpus: 1, driver_version: 9999-12-31T23:59:59-23:00}]",
            "pool 'x': driver_version must be a version like 580.95.05, got the YAML timestamp "
            "9999-12-31 23:59:59-23:00 (quote it)",
        ),
        (
            "pools: [{name: x, profile: t4, gpus: 1, cuda_driver_version: x.y}]",
            "pool 'x': cuda_driver_version must be a version like 13.0, got 'x.y'",
        ),
    ],
)
def test_bad_fleet_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fleet: str, expected: str
) -> None:
    path = _write(tmp_path, fleet)
    assert main(["render", "--fleet", path, "--minor", "1.35"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1
    assert err.startswith("fake_driver: error: ")
    assert expected in err


def test_render_prints_slices(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(
        tmp_path,
        "pools: [{name: h, count: 2, profile: h100-80gb-hbm3, gpus: 1, mig: dynamic, "
        "personality: nvidia-v0.4}]",
    )
    assert main(["render", "--fleet", path, "--minor", "1.35", "--node", "h-1"]) == 0
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    assert [d["spec"]["nodeName"] for d in docs] == ["h-1", "h-1"]
    assert "sharedCounters" in docs[0]["spec"]


def test_bad_minor(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, "pools: [{name: x, profile: t4, gpus: 1}]")
    assert main(["render", "--fleet", path, "--minor", "1.33"]) == 2
    err = capsys.readouterr().err
    assert "does not serve resource.k8s.io/v1; supported: 1.34, 1.35, 1.36, 1.37, 1.38" in err


def test_ledger_command_flags_double_advertising(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, "pools: [{name: x, nodes: [a], profile: t4, gpus: 4, device_plugin: true}]")
    assert main(["ledger", "--fleet", path, "--minor", "1.35"]) == 1
    assert capsys.readouterr().out == "a\t4 GPUs advertised by both the device plugin and DRA\n"


def test_missing_fleet_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["render", "--fleet", "/nonexistent/f.yaml", "--minor", "1.35"]) == 2
    assert (
        capsys.readouterr().err
        == "fake_driver: error: cannot read fleet file /nonexistent/f.yaml: No such file or directory\n"
    )
