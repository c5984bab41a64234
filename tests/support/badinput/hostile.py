"""Rows of the bad-input catalogue (tests/test_bad_input.py) for hostile servers and inputs
that are not what their names say (issue 41): a /version that is empty, partial, HTML or
nested too deep; a server that answers one byte at a time; an exec credential plugin that
never returns; a kubeconfig or fleet that is a FIFO, /dev/zero or a directory; `a:b`."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import yaml

from fake_driver.api.apiclient import API_TIMEOUT, EXEC_TIMEOUT
from harness.kit.waits import TIMEOUTS
from tests.support.badinput.common import Row, files
from tests.support.badinput.fakedriver import kp
from tests.support.hostile_server import kubeconfig_text, served_by, shared_server

KC = "{tmp}/kubeconfig"
SCAN = ("scan", "--kubeconfig", KC)
QUALIFY = ("qualify", "--driver-name", "gpu.acme.example", "--device-class", "gpu.acme.example")
SERVER = r"the API server http://127\.0\.0\.1:\d+/"
NO_VERSION = SERVER + r"version-(?:empty|partial) answered /version without a Kubernetes version: "
DRIP = rf"{SERVER}drip did not answer within "
EXEC_HANG: dict[str, object] = {
    "exec": {
        "apiVersion": "client.authentication.k8s.io/v1beta1",
        "command": "sh",
        "args": ["-c", "sleep 600 & sleep 600"],  # and a child that holds the pipe
    }
}


def _fifo(name: str) -> Callable[[Path], None]:
    def setup(tmp: Path) -> None:
        (tmp / name).unlink(missing_ok=True)
        os.mkfifo(tmp / name)

    return setup


def _exec_hang(tmp: Path) -> None:
    (tmp / "kubeconfig").write_text(kubeconfig_text(shared_server().url("frozen"), EXEC_HANG))


def _split_kubeconfig(tmp: Path) -> None:
    """`a:b`: the cluster and context in a, the user in b (kubectl merges them)."""
    whole = yaml.safe_load(kubeconfig_text(shared_server().url("version-html")))
    users = whole.pop("users")
    (tmp / "a").write_text(yaml.safe_dump(whole))
    (tmp / "b").write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Config", "users": users}))


def _versions(program: str, argv: tuple[str, ...]) -> list[Row]:
    name = "scan" if argv[0] == "scan" else "qualify"
    return [
        Row(
            f"{name}-version-empty",
            argv,
            1,
            NO_VERSION + "major='', minor='', gitVersion=''$",
            program,
            served_by("version-empty"),
        ),
        Row(
            f"{name}-version-partial",
            argv,
            1,
            NO_VERSION + "major='1', minor=None, gitVersion=None$",
            program,
            served_by("version-partial"),
        ),
        Row(
            f"{name}-version-html",
            argv,
            1,
            SERVER
            + r"version-html answered /version with '<html><body>Please log in</body></html>', not JSON$",
            program,
            served_by("version-html"),
        ),
        Row(
            f"{name}-version-nested",
            argv,
            1,
            SERVER + r"version-nested answered /version with '\[\[\[+\.\.\.', not JSON$",
            program,
            served_by("version-nested"),
        ),
    ]


NESTED_SUMMARY = "[" * 100_000 + "]" * 100_000
REPUBLISH = (
    r"^fake_driver.kubeletplugin: error: argument --republish-interval: must be 0 \(never\) or 1-3600 s, got "
)

TRACEBACKS: list[Row] = [  # each printed a traceback before (issue 41, part 1)
    Row(
        "report-summary-nested",
        ("report", "{tmp}/run", "--out", "{tmp}/out"),
        1,
        r"^dra-harness: .*/run/summary.json is not a summary.json: it is nested too deeply to read$",
        setup=files({"run/summary.json": NESTED_SUMMARY}),
    ),
    Row(
        "kind-cleanup-age-overflow",
        ("kind", "cleanup", "--older-than", "99999999999d"),
        1,
        r"^dra-harness: age '99999999999d' is too large: at most 999999999d$",
    ),
    Row("bench-gpus-64", ("bench", "--gpus", "64"), 1, r"^dra-harness: --gpus must be at most 32, got 64$"),
    kp("kp-republish-tiny", ("--republish-interval", "0.0001"), REPUBLISH + r"'0.0001' \(see --help\)$"),
    kp("kp-republish-inf", ("--republish-interval", "inf"), REPUBLISH + r"'inf' \(see --help\)$"),
    kp("kp-republish-nan", ("--republish-interval", "nan"), REPUBLISH + r"'nan' \(see --help\)$"),
]

HOSTILE: list[Row] = [
    *TRACEBACKS,
    *_versions("dra-harness", SCAN),
    *_versions("dra-harness", (*QUALIFY, "--kubeconfig", KC)),
    # one byte every half second: every read in time, the answer never whole
    Row("scan-drip", SCAN, 1, rf"^dra-harness: {DRIP}{TIMEOUTS.api_request:g} s$", setup=served_by("drip")),
    Row(
        "fd-publish-drip",
        ("publish", "--fleet", "{tmp}/fleet.yaml", "--kubeconfig", KC),
        1,
        rf"^fake_driver: error: {DRIP}{API_TIMEOUT:g} s$",
        "fake_driver",
        served_by("drip"),
    ),
    Row(
        "scan-exec-plugin-hangs",
        SCAN,
        1,
        rf"^dra-harness: cannot use kubeconfig .*/kubeconfig: the exec credential plugin sh gave no "
        rf"credential within {EXEC_TIMEOUT:g} s$",
        setup=_exec_hang,
    ),
    Row(
        "scan-kubeconfig-fifo",
        SCAN,
        1,
        r"^dra-harness: kubeconfig .*/kubeconfig is a FIFO, not a file$",
        setup=_fifo("kubeconfig"),
    ),
    Row(
        "scan-kubeconfig-dev-zero",
        ("scan", "--kubeconfig", "/dev/zero"),
        1,
        r"^dra-harness: kubeconfig /dev/zero is a character device, not a file$",
    ),
    Row(
        "scan-kubeconfig-directory",
        ("scan", "--kubeconfig", "{tmp}/empty"),
        1,
        r"^dra-harness: kubeconfig .*/empty is a directory, not a file$",
    ),
    # ---- fleet export (issue 36): one line, nothing written
    Row(
        "fleet-export-drip",
        ("fleet", "export", "--kubeconfig", KC, "--out", "{tmp}/fleet.yaml"),
        1,
        rf"^dra-harness: {DRIP}{TIMEOUTS.api_request:g} s$",
        setup=served_by("drip"),
    ),
    Row(
        "fleet-export-kubeconfig-dev-zero",
        ("fleet", "export", "--kubeconfig", "/dev/zero"),
        1,
        r"^dra-harness: kubeconfig /dev/zero is a character device, not a file$",
    ),
    Row(
        "fleet-export-unknown-default-profile",
        ("fleet", "export", "--kubeconfig", KC, "--default-profile", "k80"),
        1,
        r"^dra-harness: --default-profile: unknown GPU profile 'k80'",
    ),
    Row(
        "fleet-export-out-under-a-file",
        ("fleet", "export", "--kubeconfig", KC, "--out", "{tmp}/kubeconfig/fleet.yaml"),
        1,
        r"^dra-harness: --out .*/kubeconfig/fleet.yaml: ",
    ),
    # ---- qualify's driver and container view (issue 34): one line before the cluster is asked
    Row(
        "qualify-no-driver",
        ("qualify", "--kubeconfig", "{tmp}/none"),
        1,
        r"^dra-harness: qualify needs --driver-name and --device-class, or --driver-spec NAME@VERSION$",
    ),
    Row(
        "qualify-driver-spec-unknown",
        ("qualify", "--driver-spec", "acme@v1.0.0"),
        1,
        r"^dra-harness: unknown driver 'acme'; known: example@v0\.4\.0, nvidia@v0\.4\.1$",
    ),
    Row(
        "qualify-container-command-alone",
        (*QUALIFY, "--container-command", "env", "--kubeconfig", "{tmp}/empty.kubeconfig"),
        1,
        r"^dra-harness: --container-command and --container-device-pattern go together$",
        setup=files({"empty.kubeconfig": "apiVersion: v1\nkind: Config\n"}),
    ),
    Row(
        "qualify-plugin-restart-names-another-field",
        (*QUALIFY, "--plugin-restart-command", "restart {host}", "--kubeconfig", "{tmp}/k"),
        1,
        r"^dra-harness: --plugin-restart-command: '\{host\}': only \{node\} may be named \('host'\)$",
        setup=files({"k": "apiVersion: v1\nkind: Config\n"}),
    ),
    Row(
        "qualify-inject-fault-without-device",
        (*QUALIFY, "--inject-fault-command", "sick {node}", "--kubeconfig", "{tmp}/k"),
        1,
        r"^dra-harness: --inject-fault-command: 'sick \{node\}' names no \{device\}: it must say which "
        r"device to make sick$",
        setup=files({"k": "apiVersion: v1\nkind: Config\n"}),
    ),
    Row(
        "qualify-plugin-restart-unbalanced-quote",
        (*QUALIFY, "--plugin-restart-command", "kubectl 'x", "--kubeconfig", "{tmp}/k"),
        1,
        r"^dra-harness: --plugin-restart-command: No closing quotation$",
        setup=files({"k": "apiVersion: v1\nkind: Config\n"}),
    ),
    Row(
        "qualify-container-pattern-without-group",
        (
            *QUALIFY,
            "--container-command",
            "env",
            "--container-device-pattern",
            "^GPU",
            "--kubeconfig",
            "{tmp}/k",
        ),
        1,
        r"^dra-harness: --container-device-pattern needs a \(\?P<device>\.\.\.\) group$",
        setup=files({"k": "apiVersion: v1\nkind: Config\n"}),
    ),
    Row(
        "qualify-container-pattern-invalid",
        (
            *QUALIFY,
            "--container-command",
            "env",
            "--container-device-pattern",
            "(?P<device>",
            "--kubeconfig",
            "{tmp}/k",
        ),
        1,
        r"^dra-harness: --container-command/--container-device-pattern: missing \), unterminated subpattern",
        setup=files({"k": "apiVersion: v1\nkind: Config\n"}),
    ),
    Row(
        "qualify-kubeconfig-fifo",
        (*QUALIFY, "--kubeconfig", KC),
        1,
        r"^dra-harness: kubeconfig .*/kubeconfig is a FIFO, not a file$",
        setup=_fifo("kubeconfig"),
    ),
    Row(
        "fd-publish-kubeconfig-fifo",
        ("publish", "--fleet", "{tmp}/fleet.yaml", "--kubeconfig", KC),
        1,
        r"^fake_driver: error: kubeconfig .*/kubeconfig is a FIFO, not a file$",
        "fake_driver",
        _fifo("kubeconfig"),
    ),
    Row(
        "scan-kubeconfig-a-colon-b",
        ("scan", "--kubeconfig", "{tmp}/a:{tmp}/b:{tmp}/nope"),
        1,
        SERVER + r"version-html answered /version with '<html>",  # merged, and asked
        setup=_split_kubeconfig,
    ),
    Row(
        "fd-fleet-fifo",
        ("render", "--fleet", "{tmp}/fleet.yaml", "--minor", "1.37"),
        2,
        r"^fake_driver: error: fleet file .*/fleet.yaml is a FIFO, not a file$",
        "fake_driver",
        _fifo("fleet.yaml"),
    ),
    Row(
        "fd-fleet-dev-zero",
        ("render", "--fleet", "/dev/zero", "--minor", "1.37"),
        2,
        r"^fake_driver: error: fleet file /dev/zero is a character device, not a file$",
        "fake_driver",
    ),
    Row(
        "cluster-up-fleet-fifo",
        ("cluster", "up", "--name", "fleetless", "--fleet", "{tmp}/fleet.yaml"),
        1,
        r"^dra-harness: fleet .*/fleet.yaml: fleet file .*/fleet.yaml is a FIFO, not a file$",
        setup=_fifo("fleet.yaml"),
    ),
    Row(
        "cluster-up-fleet-directory",
        ("cluster", "up", "--name", "fleetless", "--fleet", "{tmp}/empty"),
        1,
        r"^dra-harness: fleet .*/empty: fleet file .*/empty is a directory, not a file$",
    ),
]
