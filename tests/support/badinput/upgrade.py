"""Bad input to `dra-harness upgrade`: one line, before any build or cluster starts (the row's
cache is empty and its `go` builds nothing)."""

from __future__ import annotations

from tests.support.badinput.common import Row
from tests.support.badinput.fakedriver import NOT_A_DIR

POLICY = r"\(https://kubernetes\.io/releases/version-skew-policy/\)"

UPGRADE = [
    Row(
        "upgrade-skips-a-minor",
        ("upgrade", "--from", "1.34", "--to", "1.37"),
        1,
        rf"^dra-harness: 1\.34 -> 1\.37 skips a minor: kube-apiserver moves one minor at a time {POLICY}; "
        r"step through each minor$",
    ),
    Row(
        "upgrade-same-minor",
        ("upgrade", "--from", "1.37", "--to", "1.37"),
        1,
        r"^dra-harness: the control plane already runs 1\.37$",
    ),
    Row(
        "upgrade-unknown-minor",
        ("upgrade", "--from", "1.36", "--to", "1.99"),
        1,
        r"^dra-harness: unknown Kubernetes version '1\.99'; valid: 1\.34, 1\.35, 1\.36, 1\.37, 1\.38$",
    ),
    Row(
        "upgrade-unknown-profile",
        ("upgrade", "--from", "1.36", "--to", "1.37", "--gates", "nope"),
        1,
        r"^dra-harness: unknown gate profile 'nope' for 1\.36; valid: defaults, dra-all$",
    ),
    Row("upgrade-no-from", ("upgrade", "--to", "1.37"), 2, r"the following arguments are required: --from"),
    Row(
        "upgrade-out-under-a-file",
        ("upgrade", "--from", "1.36", "--to", "1.37", "--out", "{tmp}/afile/u"),
        1,
        r"--out .*/" + NOT_A_DIR,
    ),
    Row(
        "scan-target-unknown-minor",
        ("scan", "--kubeconfig", "{tmp}/kubeconfig", "--target", "1.99"),
        1,
        r"^dra-harness: unknown Kubernetes version '1\.99'; valid: 1\.34, 1\.35, 1\.36, 1\.37, 1\.38$",
    ),
]

# The row's cache is empty: nothing built and nothing running. A step that cannot happen is
# refused for what it is before anything asks for a build (issue 32).
NOT_RUNNING = r"^dra-harness: cluster 'x' is not running: `dra-harness cluster up --name x` starts it$"

CLUSTER_UPGRADE = [
    Row(
        "cluster-upgrade-unknown-minor",
        ("cluster", "upgrade", "--name", "x", "--to", "1.99"),
        1,
        r"^dra-harness: unknown Kubernetes version '1\.99'; valid: 1\.34, 1\.35, 1\.36, 1\.37, 1\.38$",
    ),
    Row("cluster-upgrade-not-running", ("cluster", "upgrade", "--name", "x", "--to", "1.37"), 1, NOT_RUNNING),
    Row(
        "cluster-upgrade-bad-name",
        ("cluster", "upgrade", "--name", "Bad_", "--to", "1.37"),
        1,
        r"^dra-harness: cluster name 'Bad_' is not valid",
    ),
    Row("cluster-upgrade-no-to", ("cluster", "upgrade"), 2, r"the following arguments are required: --to"),
]
