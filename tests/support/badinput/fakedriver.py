"""The fake driver's rows of the bad-input catalogue (tests/test_bad_input.py): its CLI, the
kubelet plugin and the device plugin, each run as users run it."""

from __future__ import annotations

from tests.support.badinput.common import Row, files

F = "{tmp}/fleet.yaml"
LONG = "{tmp}/" + "d" * 100  # with the socket's own name, beyond a unix socket path's 107 bytes
NODE = "h100-0"
NOT_A_DIR = "afile is not a directory$"


def fd(id: str, argv: tuple[str, ...], line: str, fleet: str = "", program: str = "fake_driver") -> Row:
    """A fake driver row: exit 2, "<prog>: error: ...", with `fleet` (if given) as {tmp}/fleet.yaml."""
    return Row(id, argv, 2, line, program, files({"fleet.yaml": fleet}) if fleet else None)


def render(id: str, pool: str, line: str) -> Row:
    return fd(id, ("render", "--fleet", F, "--minor", "1.37"), line, f"pools: [{pool}]\n")


FAKE_DRIVER = [
    fd("fd-no-command", (), r"^fake_driver: error: the following arguments are required: command"),
    fd("fd-unknown-flag", ("profiles", "--all"), r"^fake_driver: error: unrecognized arguments: --all"),
    fd("fd-minor-unknown", ("render", "--fleet", F, "--minor", "9.99"), r"Kubernetes 9.99 is unknown to the"),
    fd("fd-minor-old", ("render", "--fleet", F, "--minor", "1.33"), r"does not serve resource.k8s.io/v1"),
    fd("fd-minor-word", ("ledger", "--fleet", F, "--minor", "abc"), r"invalid Kubernetes minor 'abc'"),
    fd(
        "fd-publish-minor", ("publish", "--fleet", F, "--minor", "2.0"), r"--minor: Kubernetes 2.0 is unknown"
    ),
    fd("fd-node-path", ("render", "--fleet", F, "--minor", "1.37", "--node", "n/../x"), r"'n/../x' is not a"),
    fd("fd-node-unknown", ("render", "--fleet", F, "--minor", "1.37", "--node", "x"), r"unknown node 'x'"),
    fd("fd-interval-negative", ("publish", "--fleet", F, "--watch", "--interval", "-5"), r"--interval: must"),
    fd("fd-interval-zero", ("publish", "--fleet", F, "--watch", "--interval", "0"), r"than 0, got '0'"),
    fd("fd-interval-nan", ("publish", "--fleet", F, "--watch", "--interval", "nan"), r"got 'nan'"),
    fd("fd-count-negative", ("legacy", "advertise", "--fleet", F, "--count", "-1"), r"--count: must be at"),
    fd("fd-fault-no-nodes", ("fault", "crash", "--fleet", F, "--nodes", ","), r"--nodes: empty item in ','"),
    fd("fd-fault-bad-node", ("fault", "crash", "--fleet", F, "--nodes", "a,B_1"), r"node name 'B_1' is not"),
    fd("fd-fleet-missing", ("render", "--fleet", "{tmp}/nope.yaml", "--minor", "1.37"), r"cannot read fleet"),
    fd("fd-fleet-not-yaml", ("render", "--fleet", F, "--minor", "1.37"), r"not valid YAML", "pools: [\n"),
    render(
        "fd-fleet-node-path",
        "{name: p, nodes: [n/../../etc], profile: t4, gpus: 1}",
        r"pool 'p': node name 'n/../../etc' is not a DNS subdomain \(RFC 1123\)",
    ),
    render(
        "fd-fleet-uppercase-pool",
        "{name: H100, count: 1, profile: t4, gpus: 1}",
        r"pool 'H100': node name 'H100-0' is not a DNS subdomain",
    ),
    render(
        "fd-fleet-100k-nodes",
        "{name: p, count: 100000, profile: t4, gpus: 1}",
        r"pool 'p': count must be an integer in \[1, 5000\], got 100000",
    ),
    render(
        "fd-fleet-6k-nodes",
        "{name: a, count: 3000, profile: t4, gpus: 1}, {name: b, count: 3000, profile: t4, gpus: 1}",
        r"fleet.yaml: 6000 nodes; a fleet has at most 5000$",
    ),
    render(
        "fd-fleet-64-gpus",
        "{name: p, count: 1, profile: t4, gpus: 64}",
        r"pool 'p': gpus must be an integer in \[1, 32\], got 64",
    ),
    render(
        "fd-fleet-million-replicas",
        "{name: p, count: 1, profile: t4, gpus: 1, device_plugin: true, time_slicing_replicas: 1000000}",
        r"pool 'p': time_slicing_replicas must be an integer in \[1, 64\], got 1000000",
    ),
]


def kp(id: str, extra: tuple[str, ...], line: str) -> Row:
    """The kubelet plugin, served from a claims file (no cluster), with writable directories."""
    dirs = ("--registry-dir", "{tmp}/reg", "--plugins-dir", "{tmp}/plugins", "--cdi-root", "{tmp}/cdi")
    argv = ("--node-name", NODE, "--fleet", F, "--claims-file", "{tmp}/claims.json", "--minor", "1.37", *dirs)
    return fd(id, (*argv, *extra), line, program="kubeletplugin")


def dp(id: str, extra: tuple[str, ...], line: str) -> Row:
    argv = ("--node-name", NODE, "--fleet", F, "--no-api", "--plugin-dir", "{tmp}/dp")
    return fd(id, (*argv, *extra), line, program="deviceplugin")


PLUGINS = [
    kp(
        "kp-node-name", ("--node-name", "n/../x"), r"^fake_driver.kubeletplugin: error: argument --node-name:"
    ),
    kp("kp-minor-unknown", ("--minor", "1.99"), r"--minor: Kubernetes 1.99 is unknown to the fake driver"),
    kp(
        "kp-plugins-dir-file", ("--plugins-dir", "{tmp}/afile/p"), r"--plugins-dir .*/afile/p: .*" + NOT_A_DIR
    ),
    kp("kp-registry-dir-proc", ("--registry-dir", "/proc/dra/reg"), r"--registry-dir /proc/dra/reg: cannot"),
    kp("kp-cdi-root-file", ("--cdi-root", "{tmp}/afile"), r"--cdi-root .*/afile: is not a directory$"),
    kp(
        "kp-socket-too-long",
        ("--plugins-dir", LONG),
        r"socket path .*/dra.sock is 1\d\d bytes; .* at most 107$",
    ),
    kp("kp-reg-socket-too-long", ("--registry-dir", LONG), r"socket path .*-reg.sock is 1\d\d bytes"),
    dp("dp-recheck-negative", ("--recheck", "-1"), r"^fake_driver.deviceplugin: error: argument --recheck:"),
    dp("dp-recheck-zero", ("--recheck", "0"), r"--recheck: must be greater than 0, got '0'"),
    dp("dp-plugin-dir-file", ("--plugin-dir", "{tmp}/afile"), r"--plugin-dir .*/afile: is not a directory$"),
    dp("dp-plugin-dir-proc", ("--plugin-dir", "/proc/dra"), r"--plugin-dir /proc/dra: cannot create files"),
    dp("dp-socket-too-long", ("--plugin-dir", LONG), r"socket path .*/kubelet.sock is 1\d\d bytes"),
    dp("dp-node-name", ("--node-name", "Node_1"), r"argument --node-name: node name 'Node_1' is not a DNS"),
]
