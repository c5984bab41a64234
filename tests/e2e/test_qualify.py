"""`dra-harness qualify` against a driver it has never heard of: a local cluster of its own,
the fake driver installed out of band as `gpu.acme.example` (harness/qualify/standin.py) on a
fleet of 3 nodes with 8, 4 and 2 GPUs (the 2-GPU node with dynamic MIG). The run must have 0
failures, the expected verdicts and NOT SUPPORTED lines, a Sonobuoy-style tarball and `done`
file, and an HTML report Chromium renders without a console message. Bad input on the live
cluster (no slices, no class, no permission) is one line, exit 1, nothing created.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from harness.core.versions import REPO_ROOT
from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.kube import Kube
from harness.qualify.rbac import NEEDED_ACCESS
from harness.qualify.standin import StandinPoolSpec
from tests.e2e.standin_cluster import standin_cluster
from tests.e2e.test_report_renders import render_to_artifacts

DRIVER = "gpu.acme.example"
FLEET = (
    StandinPoolSpec("big", 1, 8),
    StandinPoolSpec("small", 1, 4),
    StandinPoolSpec("mig", 1, 2, "dynamic"),
)
# A few minutes on 2 cores: the suites that exercise the driver, not the whole tree.
SUITES = ("suites/bridging", "suites/driver", "suites/failure_modes", "suites/shared_devices", "suites/gang")


@pytest.fixture(scope="module")
def standin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The kubeconfig of a cluster of our own with the stand-in driver installed."""
    with standin_cluster(tmp_path_factory.mktemp("qualify-cluster"), FLEET, DRIVER) as kubeconfig:
        yield kubeconfig


def _qualify(kubeconfig: Path, out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [
        sys.executable,
        "-m",
        "harness.cli.main",
        "qualify",
        f"--kubeconfig={kubeconfig}",
        f"--out={out}",
        *args,
    ]
    return subprocess.run(argv, cwd=REPO_ROOT, capture_output=True, text=True, timeout=900, check=False)


def test_qualify_on_a_mixed_fleet_passes_and_names_what_is_not_supported(
    standin: Path, tmp_path: Path
) -> None:
    out = tmp_path / "results"
    suites = [f"--suite={s}" for s in SUITES]
    done = _qualify(standin, out, f"--driver-name={DRIVER}", f"--device-class={DRIVER}", *suites)

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    report = json.loads((out / "qualify.json").read_text())
    assert report["totals"]["failed"] == report["totals"]["errors"] == 0
    assert report["tested"] == (
        f"the driver {DRIVER} (the harness's stand-in: its fake driver published under this name), "
        "on the nodes of the cluster the kubeconfig names"
    )
    verdicts = {c["id"]: c["verdict"] for c in report["capabilities"]}
    assert verdicts == {
        "bridging": "PASS",
        "mixed-pools": "PASS",
        "partitions": "PASS",
        "prioritized-list": "PASS",
        "cel-selectors": "PASS",
        "consumable-capacity": "NOT SUPPORTED",
        "gang": "PASS",  # gangs of the stand-in's own devices on one of its nodes
        "failure-modes": "PASS",
        "node-side": "NOT TESTED",
        "device-health": "NOT TESTED",  # its suite not run here (qualify's default suites run it last)
    }
    summary = "acme-big-0 (8), acme-mig-0 (2), acme-small-0 (4)"
    assert (
        "NOT SUPPORTED consumable-capacity: test_a_shared_device_serves_two_claims: needs consumable "
        f"capacity (devices with allowMultipleAllocations) of class {DRIVER}; the fleet has 3 node(s) "
        f"with devices of the class: {summary}"
    ) in done.stdout.splitlines()
    [gpu] = [k for k in report["inventory"] if k["kind"] == "gpu"]
    assert (gpu["devices"], gpu["missing"], gpu["extra"]) == (14, [], [])
    tarball = out / "results.tar.gz"
    assert (out / "done").read_text() == str(tarball.resolve())
    with tarfile.open(tarball) as tar:
        assert {"qualify.json", "qualify.html", "junit.xml", "summary.json"} <= set(tar.getnames())
    assert report["command"].startswith(f"dra-harness qualify --kubeconfig={standin} --driver-name={DRIVER}")

    messages, png = render_to_artifacts(out / "qualify.html", "qualify", tmp_path)
    assert messages == []
    assert png.stat().st_size > 50_000, f"{png} is {png.stat().st_size} bytes: is the page blank?"


def _no_access_kubeconfig(kubeconfig: Path, tmp_path: Path) -> Path:
    """A ServiceAccount token bound to nothing."""
    kube = Kube.from_kubeconfig(kubeconfig)
    try:
        kube.create(
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": "nobody", "namespace": "default"},
            }
        )
        tokens = kube.resource(*kinds.SERVICE_ACCOUNT).subresources["token"]
        request = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": 600},
        }
        token = tokens.create(body=request, name="nobody", namespace="default").to_dict()["status"]["token"]  # type: ignore[no-untyped-call]
    finally:
        kube.close()
    server = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]
    path = tmp_path / "nobody.kubeconfig"
    path.write_text(yaml.safe_dump(b.token_kubeconfig(server, token, "nobody")))
    return path


def _named(verb: str, group: str, resource: str) -> str:
    return f"{verb} {resource}{'.' + group if group else ''}"


def _cluster_objects(kubeconfig: Path) -> dict[str, list[str]]:
    kube = Kube.from_kubeconfig(kubeconfig)
    try:
        return {
            kind: sorted(o["metadata"]["name"] for o in kube.list(api, kind))
            for api, kind in (
                ("v1", "Namespace"),
                (kinds.RESOURCE_V1, "DeviceClass"),
                (kinds.RESOURCE_V1, "ResourceSlice"),
            )
        }
    finally:
        kube.close()


@pytest.mark.parametrize(
    ("case", "args", "line"),
    [
        (
            "no-slices",
            ("--driver-name=gpu.none.example", f"--device-class={DRIVER}"),
            "driver gpu.none.example publishes no ResourceSlices",
        ),
        (
            "no-class",
            (f"--driver-name={DRIVER}", "--device-class=gpu.typo.example"),
            "DeviceClass gpu.typo.example does not exist "
            "(classes: gpu.acme.example, mig.gpu.acme.example, vfio.gpu.acme.example)",
        ),
        (
            "no-permission",
            (f"--driver-name={DRIVER}", f"--device-class={DRIVER}"),
            f"the kubeconfig's user may not {', '.join(_named(*access) for access in NEEDED_ACCESS)} "
            "(the suites need to)",
        ),
    ],
)
def test_bad_input_on_a_live_cluster_is_one_line_and_creates_nothing(
    standin: Path, tmp_path: Path, case: str, args: tuple[str, ...], line: str
) -> None:
    kubeconfig = _no_access_kubeconfig(standin, tmp_path) if case == "no-permission" else standin
    before = _cluster_objects(standin)

    done = _qualify(kubeconfig, tmp_path / "results", *args)

    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == f"dra-harness: {line}\n"
    assert not (tmp_path / "results").exists()
    after = _cluster_objects(standin)
    assert {kind: sorted(set(after[kind]) - set(names)) for kind, names in before.items()} == {
        kind: [] for kind in before
    }


VENDOR_TEST = """
from harness.kit import builders as b
from harness.kit.drastate import claims_of
from harness.kit.pods import wait_phase


def test_vendor_pod_gets_one_of_our_devices(kube, namespace, driver, gpu_pool):
    pool = gpu_pool(nodes=1, gpus=1)
    request = b.exact_request("gpu", driver.device_class)
    kube.create(b.claim_template("one", namespace, [request]))
    kube.create(b.template_pod("vendor", namespace, "one", node_selector=pool.node_selector))
    wait_phase(kube, namespace, "vendor", "Running")
    [claim] = claims_of(kube, namespace, "vendor")
    [result] = claim["status"]["allocation"]["devices"]["results"]
    assert (result["driver"], result["pool"]) == (driver.driver, pool.nodes[0])
"""


def _pip_can_fetch(venv: Path, tmp: Path) -> str:
    """'' when pip reaches an index (or its cache): the wheel's build needs setuptools."""
    done = subprocess.run(
        [str(venv / "bin" / "pip"), "download", "--no-deps", "-q", "-d", str(tmp / "probe"), "build"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return "" if done.returncode == 0 else (done.stderr.strip().splitlines() or ["pip failed"])[-1]


def test_a_vendor_test_tree_runs_on_the_built_wheel(standin: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    why = _pip_can_fetch(venv, tmp_path)
    if why:
        pytest.skip(f"no package index or pip cache reachable: {why}")
    pip, python = str(venv / "bin" / "pip"), str(venv / "bin" / "python")
    subprocess.run([pip, "install", "-q", "build"], check=True, timeout=300)
    source = tmp_path / "source"  # `python -m build` writes build/ and *.egg-info into its source
    tracked = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO_ROOT, capture_output=True, check=True, timeout=60
    ).stdout.decode()
    for name in filter(None, tracked.split("\0")):
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO_ROOT / name, source / name)
    built = subprocess.run(
        [python, "-m", "build", "--wheel", "--outdir", str(tmp_path / "dist"), str(source)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    [wheel] = (tmp_path / "dist").glob("dra_harness-*.whl")
    subprocess.run([pip, "install", "-q", str(wheel)], check=True, timeout=600)
    tree = tmp_path / "vendor_tests"
    tree.mkdir()
    (tree / "test_vendor.py").write_text(VENDOR_TEST)

    done = subprocess.run(
        [
            python,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-q",
            str(tree),
            "--cluster-provider=existing",
            f"--kubeconfig={standin}",
            "--driver=external",
            f"--driver-name={DRIVER}",
            f"--device-class={DRIVER}",
        ],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert done.stdout.splitlines()[-1].startswith("1 passed")
    help_text = subprocess.run(
        [python, "-m", "pytest", "--help"], cwd=tree, capture_output=True, text=True, timeout=120, check=True
    ).stdout
    assert "dra-harness:" in help_text
    assert "--node-selector" in help_text
