"""The cluster lifecycle's rows of the bad-input catalogue (tests/test_bad_input.py):
`cluster up|down` names, fleets and real nodes, each run as users run it."""

from __future__ import annotations

from pathlib import Path

from tests.support.badinput.common import Row, files

# ---- cluster lifecycle: a name is a DNS label of at most 40 characters, so no path can leave
# ---- the cache; a directory there that is not ours (a planted symlink) is never touched.
BAD_NAME = r"^dra-harness: cluster name .* is not valid: 1-40 lowercase letters, digits or '-'"
PLANTED = files({"elsewhere/etcd/keep": "", "cache/dra-harness/clusters/.keep": ""})


def _bad_fleet(tmp: Path) -> None:
    (tmp / "fleet.yaml").write_text("pools: [{name: x, profile: t4, gpus: 99}]\n")


def _plant_symlink(tmp: Path) -> None:
    PLANTED(tmp)
    (tmp / "cache/dra-harness/clusters/planted").symlink_to(tmp / "elsewhere")


LIFECYCLE: list[Row] = [
    *(
        Row(f"cluster-{action}-name-{label}", ("cluster", action, "--name", name), 1, BAD_NAME)
        for action in ("up", "down", "status")
        for label, name in (
            ("dotdot", "../../x"),
            ("slash", "a/b"),
            ("upper", "Default"),
            ("dash-edge", "x-"),
            ("too-long", "x" * 41),
            ("space", "a b"),
        )
    ),
    Row("cluster-up-name-empty", ("cluster", "up", "--name", ""), 1, BAD_NAME),
    # ---- a real driver on the real nodes (versions.toml [drivers]): checked before any build
    Row(
        "cluster-up-driver-without-real-nodes",
        ("cluster", "up", "--driver", "example@v0.4.0"),
        1,
        r"^dra-harness: --driver runs on real nodes: give --real-nodes N too$",
    ),
    Row(
        "cluster-up-driver-unknown",
        ("cluster", "up", "--real-nodes", "1", "--driver", "nope@v1.0.0"),
        1,
        r"^dra-harness: unknown driver 'nope'; known: example@v0\.4\.0, nvidia@v0\.4\.1$",
    ),
    Row(
        "cluster-up-driver-unknown-version",
        ("cluster", "up", "--real-nodes", "1", "--driver", "example@v9.9.9"),
        1,
        r"^dra-harness: driver example has no version 'v9\.9\.9' in versions\.toml; known: v0\.2\.1, "
        r"v0\.3\.0, v0\.4\.0$",
    ),
    Row(
        "cluster-up-driver-version-dotdot",
        ("cluster", "up", "--real-nodes", "1", "--driver", "example@../../x"),
        1,
        r"^dra-harness: driver example has no version '\.\./\.\./x' in versions\.toml",
    ),
    # The row's cache is empty: the driver is not built, so the line names the make target.
    Row(
        "cluster-up-driver-not-built",
        ("cluster", "up", "--real-nodes", "1", "--driver", "example@v0.4.0"),
        1,
        r"^dra-harness: driver example@v0\.4\.0 is not built: run `make drivers DRIVER=example@v0\.4\.0`$",
    ),
    Row(
        "parts-build-driver-outside-drivers",
        ("parts", "build", "test", "--driver", "example@v0.4.0"),
        1,
        r"^dra-harness: --driver names drivers of the set `drivers` only$",
    ),
    Row(
        "cluster-up-unknown-k",
        ("cluster", "up", "-k", "1.99"),
        1,
        r"^dra-harness: unknown Kubernetes version",
    ),
    Row("cluster-up-unknown-g", ("cluster", "up", "-g", "all"), 1, r"^dra-harness: .*profile"),
    # The row's cache is empty: no kubelet is built, so the line says how to build it.
    Row(
        "cluster-up-real-nodes-kubelet-not-built",
        ("cluster", "up", "-k", "1.36", "--real-nodes", "1"),
        1,
        r"^dra-harness: the kubelet v1\.36\.\d+ is not built: run `dra-harness controlplane build -k 1\.36 "
        r"--nodes` \(or `make nodeparts K8S=1\.36`\)$",
    ),
    # --kubelet: checked before anything is built or started.
    Row(
        "cluster-up-kubelet-without-real-nodes",
        ("cluster", "up", "--kubelet", "1.36"),
        1,
        r"^dra-harness: --kubelet 1\.36: give --real-nodes N too$",
    ),
    *(
        Row(
            f"cluster-up-kubelet-{label}",
            ("cluster", "up", "-k", cluster, "--kubelet", kubelet, "--real-nodes", "1"),
            1,
            rf"^dra-harness: --kubelet {kubelet}: the version-skew policy lets a {cluster} control plane run "
            rf"kubelets of {cluster} and up to 3 minors older \(https://kubernetes\.io/releases/"
            r"version-skew-policy/\)$",
        )
        for label, cluster, kubelet in (("newer", "1.36", "1.37"), ("too-old", "1.38", "1.34"))
    ),
    Row(
        "cluster-up-kubelet-unknown",
        ("cluster", "up", "--kubelet", "1.99", "--real-nodes", "1"),
        1,
        r"^dra-harness: unknown Kubernetes version '1\.99'",
    ),
    *(
        Row(
            f"cluster-up-real-nodes-{label}",
            ("cluster", "up", f"--real-nodes={value}"),
            2,
            rf"^dra-harness cluster up: error: argument --real-nodes: expected a whole number from 1 to 8, "
            rf"got '{value}' \(see --help\)$",
        )
        for label, value in (
            ("zero", "0"),
            ("negative", "-2"),
            ("huge", "100000"),
            ("word", "two"),
            ("float", "1.5"),
        )
    ),
    Row(
        "cluster-down-planted-symlink",
        ("cluster", "down", "--name", "planted"),
        1,
        r"clusters/planted is not a directory of dra-harness's own; remove it by hand$",
        setup=_plant_symlink,
    ),
    Row(
        "cluster-up-fleet-missing",
        ("cluster", "up", "--name", "fleetless", "--fleet", "{tmp}/none.yaml"),
        1,
        r"^dra-harness: fleet .*/none.yaml: cannot read fleet file .*: No such file or directory$",
    ),
    Row(
        "cluster-up-fleet-invalid",
        ("cluster", "up", "--name", "fleetless", "--fleet", "{tmp}/fleet.yaml"),
        1,
        r"^dra-harness: fleet .*/fleet.yaml: .*pool 'x': gpus must be an integer in \[1, 32\], got 99$",
        setup=_bad_fleet,
    ),
    Row("cluster-up-fleet-empty", ("cluster", "up", "--fleet", ""), 2, r"--fleet: must not be empty"),
    Row(
        "cluster-up-fleet-and-no-fleet",
        ("cluster", "up", "--fleet", "f.yaml", "--no-fleet"),
        2,
        r"argument --no-fleet: not allowed with argument --fleet",
    ),
    Row(
        "cluster-up-planted-symlink",
        ("cluster", "up", "--name", "planted"),
        1,
        r"clusters/planted is not a directory of dra-harness's own; remove it by hand$",
        setup=_plant_symlink,
    ),
]
