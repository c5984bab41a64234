"""Rows of the bad-input catalogue (tests/test_bad_input.py) for the last of issue 41: report
paths pytest cannot write (its INTERNALERROR before) and a YAML timestamp where a fleet has a
version (a traceback in the kubelet plugin). The cases that need a running cluster or a held
teardown are tests of their own: tests/e2e/test_cluster_lifecycle.py (a frozen API server),
tests/e2e/test_signal_forwarding.py (a second Ctrl-C), tests/harness/kit/test_cel.py (slow CEL) and
tests/harness/clusters/test_cluster_ready_timeout.py (a start not ready in time)."""

from __future__ import annotations

from dataclasses import replace

from tests.support.badinput.common import Row, files
from tests.support.badinput.fakedriver import kp

NOT_A_DIR = r"/dev/null is not a directory"

REPORT_PATHS: list[Row] = [  # pytest's own report options: its usage error (4), or ours (2)
    Row(
        "pytest-junitxml-under-dev-null",
        ("--junitxml=/dev/null/x.xml",),
        4,
        rf"^ERROR: --junitxml /dev/null/x.xml: {NOT_A_DIR}$",
        "pytest",
    ),
    Row(
        "pytest-alluredir-under-dev-null",
        ("--alluredir", "/dev/null/a"),
        4,
        rf"^ERROR: --alluredir /dev/null/a: {NOT_A_DIR}$",
        "pytest",
    ),
    Row(
        "run-junitxml-under-dev-null",
        ("run", "--", "--junitxml=/dev/null/x.xml"),
        2,
        rf"^dra-harness: error: --junitxml /dev/null/x.xml: {NOT_A_DIR} \(see --help\)$",
    ),
    Row(
        "matrix-alluredir-under-dev-null",
        ("matrix", "--", "--alluredir", "/dev/null/a"),
        2,
        rf"^dra-harness: error: --alluredir /dev/null/a: {NOT_A_DIR} \(see --help\)$",
    ),
]

TIMESTAMP_FLEET = "pools: [{name: h100, count: 2, profile: h100-80gb-hbm3, gpus: 8, driver_version: %s}]\n"

FLEET_VALUES: list[Row] = [  # a YAML timestamp where a version goes: a traceback in the plugin
    replace(
        kp(
            "kp-fleet-driver-version-timestamp",
            (),
            r"^fake_driver.kubeletplugin: error: .*fleet.yaml: pool 'h100': driver_version must be a "
            r"version like 580.95.05, got the YAML timestamp 0001-01-01 00:00:00\+23:00 \(quote it\)$",
        ),
        setup=files({"fleet.yaml": TIMESTAMP_FLEET % "0001-01-01T00:00:00+23:00"}),
    )
]

BOUNDS: list[Row] = [*REPORT_PATHS, *FLEET_VALUES]
