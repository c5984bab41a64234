"""The README's "first five minutes", run as a new user would: the commands between its
quickstart markers, unchanged, in one bash, against a cluster of this test's own name
($DRA_HARNESS_CLUSTER), then what each step must have shown."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator

import pytest

from harness.clusters.named import records
from harness.core.versions import REPO_ROOT
from tests.e2e.lifecycle_probe import processes_of, remove_cluster

BEGIN, END = "<!-- quickstart:begin -->", "<!-- quickstart:end -->"
BOUND = 900.0  # `make cluster` on a warm cache takes ~30 s; the pods a few seconds


def quickstart_commands() -> str:
    readme = (REPO_ROOT / "README.md").read_text()
    block = readme[readme.index(BEGIN) + len(BEGIN) : readme.index(END)]
    fenced = re.fullmatch(r"\s*```sh\n(.*?)```\s*", block, re.S)
    assert fenced, f"the quickstart block is one ```sh fence: {block!r}"
    return fenced.group(1)


@pytest.fixture
def cluster_name() -> Iterator[str]:
    name = f"t{os.getpid()}-quickstart"
    yield name
    remove_cluster(name)  # also if the script stopped early


def test_quickstart_commands_are_the_readme_block() -> None:
    lines = [line.split("#")[0].strip() for line in quickstart_commands().splitlines()]
    assert lines[0] == "make cluster"
    assert lines[-1] == "make cluster-down"
    assert sum(line.startswith(".venv/bin/kubectl apply") for line in lines) == 2


def test_the_readme_quickstart_gives_a_gpu_fleet_whose_pods_get_their_devices(cluster_name: str) -> None:
    # As a user's shell: no KUBECONFIG yet, and not inside `make test` (a nested make would
    # print "make[1]: Entering directory" lines around the output).
    outer = ("KUBECONFIG", "MAKEFLAGS", "MAKELEVEL", "MFLAGS", "MAKEOVERRIDES")
    env = {k: v for k, v in os.environ.items() if k not in outer}
    env["DRA_HARNESS_CLUSTER"] = cluster_name
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", quickstart_commands()],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=BOUND,
        check=False,
    )
    out = done.stdout
    assert done.returncode == 0, (
        f"quickstart failed ({done.returncode}):\n{out[-3000:]}\n{done.stderr[-3000:]}"
    )
    tables = re.findall(r"^POOL .*\n((?:\S+ +\d+ +\d+ +\d+ +\d+ +\d+ +\d+\n)+)", out, re.M)
    assert len(tables) == 2, out
    before, after = (
        {row.split()[0]: [int(v) for v in row.split()[1:]] for row in t.splitlines()} for t in tables
    )
    # [nodes, ready, DRA devices, allocated, nvidia.com/gpu, requested]
    assert before == {
        "a100-mig": [1, 1, 16, 0, 0, 0],
        "h100": [2, 2, 16, 0, 0, 0],
        "legacy": [2, 2, 0, 0, 16, 0],
    }
    assert after == {
        "a100-mig": [1, 1, 16, 1, 0, 0],
        "h100": [2, 2, 16, 2, 0, 1],
        "legacy": [2, 2, 0, 0, 16, 0],
    }
    assert "pod/legacy-gpu condition met" in out
    assert re.search(r"^legacy-gpu-extended-resources-\S+ +allocated,reserved", out, re.M), out
    assert '"resourceName":"nvidia.com/gpu"' in out
    assert re.search(r'"resourceClaimName":"legacy-gpu-extended-resources-\S+"', out), out
    assert "pod/h100-claim condition met" in out
    assert "pod/mig-1g10gb condition met" in out
    assert out.rstrip().endswith(f"cluster {cluster_name!r} stopped")
    assert processes_of(records.state_dir(cluster_name)) == []
