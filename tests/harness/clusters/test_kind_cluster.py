"""The kind path for real, on the cell of --k8s-version (the default one without it):
KindProvider creates the cluster (on the machine's Docker, or the harness's own engine with the
node image `make kind-images` built), deploys the fake driver from deploy/manifests and waits for
both DaemonSets; then the node path is checked in the cluster: the kubelet plugin in a pod
registered by the node's kubelet, CDI applied by the node's containerd, the device plugin on the
legacy worker, the admission policy refusing another node's slice to the plugin's own identity;
and kube-proxy, in the mode the minor's build needs (nftables where it is built with the
iptables-wrappers stand-in, 1.38), serving a ClusterIP Service and the kubernetes Service to pods.

One line says what is missing when it cannot run here (root, dockerd, kind, the image).
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from fake_driver.facts.personalities import get_personality
from fake_driver.publishing.legacy import LEGACY_RESOURCE
from fixtures.options import run_options
from harness.clusters.kind import engine
from harness.clusters.kind.config import CELL_LABEL, DEFAULT_POOLS
from harness.clusters.kind.provider import KindProvider, docker_problem, find_binary
from harness.clusters.nodes import KwokPoolSpec, create_pool, delete_pool
from harness.core.errors import HarnessError
from harness.core.versions import load_matrix
from harness.kit import kinds
from harness.kit.checks.detectors import Severity, detect_double_stack
from harness.kit.kube import Kube
from harness.kit.waits import wait_for

KUBECTL = str(Path(sys.executable).parent / "kubectl")
NAMESPACE = "dra-fake-driver"
MATRIX = load_matrix()
DRIVER = get_personality(MATRIX.default_personality).driver
LEGACY_POOL = next(p.name for p in DEFAULT_POOLS if p.device_plugin)
DRA_POOL = next(p.name for p in DEFAULT_POOLS if not p.device_plugin)
# One kind cluster for the module on the harness's one engine: xdist keeps it on one worker.
pytestmark = pytest.mark.docker_engine


@pytest.fixture(scope="module")
def kind_cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KindProvider]:
    if docker_problem() is not None and (why := engine.cannot_start()) is not None:
        pytest.skip(why)
    try:
        find_binary("kind", None, "DRA_HARNESS_KIND", "make kind-engine")
    except HarnessError as err:
        pytest.skip(str(err))
    minor = run_options(request.config).minor  # --k8s-version 1.38: the local 1.38 node image
    p = KindProvider(minor, run_dir=tmp_path_factory.mktemp("kind"), name="dra-harness-test-kind")
    try:
        p.start()
    except HarnessError as err:
        if "is not built: make kind-images" in str(err):
            pytest.skip(str(err))
        raise
    yield p
    p.stop()


def kubectl(kc: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    argv = [KUBECTL, "--kubeconfig", str(kc), *args]
    return subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=120, check=False)


def ok(out: subprocess.CompletedProcess[str]) -> str:
    assert out.returncode == 0, f"{out.args[3:]}: {out.stderr}"
    return out.stdout


def _pods(kc: Path, app: str) -> dict[str, str]:
    """Node -> phase of the app's pods."""
    items = json.loads(
        ok(kubectl(kc, "-n", NAMESPACE, "get", "pods", "-l", f"app.kubernetes.io/name={app}", "-o", "json"))
    )
    return {p["spec"]["nodeName"]: p["status"]["phase"] for p in items["items"]}


def _node_of_pool(kc: Path, pool: str) -> str:
    return ok(
        kubectl(
            kc,
            "get",
            "nodes",
            "-l",
            f"dra-harness.io/pool={pool}",
            "-o",
            "jsonpath={.items[0].metadata.name}",
        )
    )


def test_plugins_run_in_pods_on_their_workers(kind_cluster: KindProvider) -> None:
    kc = kind_cluster.kubeconfig
    workers = {_node_of_pool(kc, p.name) for p in DEFAULT_POOLS}
    assert _pods(kc, "fake-driver-kubelet-plugin") == dict.fromkeys(workers, "Running")
    assert _pods(kc, "fake-driver-device-plugin") == {_node_of_pool(kc, LEGACY_POOL): "Running"}


def test_the_plugin_in_its_pod_publishes_its_nodes_slices(kind_cluster: KindProvider) -> None:
    kc = kind_cluster.kubeconfig
    node = _node_of_pool(kc, DRA_POOL)

    def devices() -> int:
        slices = json.loads(ok(kubectl(kc, "get", "resourceslices", "-o", "json")))["items"]
        mine = [s for s in slices if s["spec"].get("nodeName") == node and s["spec"]["driver"] == DRIVER]
        return sum(len(s["spec"].get("devices", [])) for s in mine)

    # The plugin publishes after its kubelet registered it, which the rollout does not wait for.
    published = wait_for(devices, lambda n: n > 0, timeout=60, describe=f"{DRIVER} slices of {node}")
    assert published == 2  # the fleet's gpus for the pool


def test_device_plugin_advertises_the_legacy_workers_gpus(kind_cluster: KindProvider) -> None:
    kc = kind_cluster.kubeconfig
    node = _node_of_pool(kc, LEGACY_POOL)

    def allocatable() -> str:
        return ok(kubectl(kc, "get", "node", node, "-o", "jsonpath={.status.allocatable.nvidia\\.com/gpu}"))

    assert wait_for(allocatable, lambda v: v == "2", timeout=60, describe=f"nvidia.com/gpu on {node}") == "2"


def test_a_pod_with_a_claim_sees_its_gpu_through_cdi(kind_cluster: KindProvider) -> None:
    kc = kind_cluster.kubeconfig
    name = f"cdi-{uuid.uuid4().hex[:6]}"
    node = _node_of_pool(kc, DRA_POOL)
    manifest = f"""
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {{name: {name}}}
spec: {{selectors: [{{cel: {{expression: 'device.driver == "{DRIVER}"'}}}}]}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {{name: {name}, namespace: default}}
spec: {{devices: {{requests: [{{name: gpu, exactly: {{deviceClassName: {name}}}}}]}}}}
---
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default}}
spec:
  nodeSelector: {{kubernetes.io/hostname: {node}}}
  restartPolicy: Never
  resourceClaims: [{{name: gpu, resourceClaimName: {name}}}]
  containers:
    - name: env
      image: dra-harness/fake-driver:dev
      command: ["sh", "-c", "env | grep -E '^(NVIDIA_VISIBLE_DEVICES|DRA_DEVICE_)' | sort"]
      resources: {{claims: [{{name: gpu}}]}}
"""
    ok(kubectl(kc, "apply", "-f", "-", stdin=manifest))
    try:
        phase = wait_for(
            lambda: ok(kubectl(kc, "get", "pod", name, "-o", "jsonpath={.status.phase}")),
            lambda p: p in ("Succeeded", "Failed"),
            timeout=120,
            describe=f"pod {name} finished",
        )
        log = ok(kubectl(kc, "logs", name))
        print(log)
        assert phase == "Succeeded"
        # One GPU: the CDI spec the plugin wrote, applied by the node's containerd.
        gpu = log.splitlines()[-1].removeprefix("NVIDIA_VISIBLE_DEVICES=")
        assert gpu.startswith("GPU-"), log
        assert log.splitlines() == [f"DRA_DEVICE_GPU_0={gpu}", f"NVIDIA_VISIBLE_DEVICES={gpu}"]
    finally:
        kubectl(kc, "delete", "-f", "-", "--wait=false", stdin=manifest)


def test_the_admission_policy_refuses_another_nodes_slice_to_the_plugin(kind_cluster: KindProvider) -> None:
    kc = kind_cluster.kubeconfig
    node, other = _node_of_pool(kc, DRA_POOL), _node_of_pool(kc, LEGACY_POOL)
    pods = json.loads(
        ok(
            kubectl(
                kc,
                "-n",
                NAMESPACE,
                "get",
                "pods",
                "-l",
                "app.kubernetes.io/name=fake-driver-kubelet-plugin",
                "--field-selector",
                f"spec.nodeName={node}",
                "-o",
                "json",
            )
        )
    )
    pod = pods["items"][0]["metadata"]["name"]
    slice_ = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "intruder"},
        "spec": {
            "driver": DRIVER,
            "nodeName": other,
            "pool": {"name": other, "generation": 1, "resourceSliceCount": 1},
        },
    }
    script = (
        "import json, sys; from kubernetes import client, config; config.load_incluster_config()\n"
        "api = client.CustomObjectsApi()\n"
        "try:\n"
        " body = json.loads(sys.argv[1])\n"
        " api.create_cluster_custom_object('resource.k8s.io', 'v1', 'resourceslices', body)\n"
        "except client.ApiException as e:\n"
        " print(e.status, e.body)\n"
    )
    out = ok(kubectl(kc, "-n", NAMESPACE, "exec", pod, "--", "python", "-c", script, json.dumps(slice_)))
    assert out.startswith("422 "), out  # a policy's denial without a reason is Invalid
    assert f"this user running on node '{node}' may not modify resourceslices on node '{other}'" in out


def test_the_suites_simulated_nodes_run_pods_beside_the_kind_workers(kind_cluster: KindProvider) -> None:
    """kwok on the host keeps a suite's own node Ready on kind (so `--cluster-provider kind` runs
    the suites), and the in-cluster driver's DaemonSets stay off it."""
    kc = kind_cluster.kubeconfig
    kube = Kube.from_kubeconfig(kc)
    pool = KwokPoolSpec(name=f"sim-{uuid.uuid4().hex[:6]}", count=1)
    node = pool.node_names()[0]
    name = f"on-{node}"
    pod = f"""
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default}}
spec:
  nodeSelector: {{kubernetes.io/hostname: {node}}}
  containers: [{{name: c, image: dra-harness/fake-driver:dev}}]
"""
    try:
        create_pool(kube, pool)  # waits for Ready: kwok's lease heartbeat
        ok(kubectl(kc, "apply", "-f", "-", stdin=pod))
        phase = wait_for(
            lambda: ok(kubectl(kc, "get", "pod", name, "-o", "jsonpath={.status.phase}")),
            lambda p: p == "Running",
            timeout=60,
            describe=f"pod {name} Running on the simulated node",
        )
        assert phase == "Running"
        assert node not in _pods(kc, "fake-driver-kubelet-plugin")
    finally:
        kubectl(kc, "delete", "pod", name, "--wait=false", "--ignore-not-found")
        delete_pool(kube, pool)
        kube.close()


def test_the_legacy_worker_is_double_stacked_and_the_detector_says_so(kind_cluster: KindProvider) -> None:
    """The legacy worker runs the device plugin and the kubelet plugin on the same GPUs (the
    double-stack mode, staged for real): the scan's detector finds exactly that node."""
    kc = kind_cluster.kubeconfig
    legacy = _node_of_pool(kc, LEGACY_POOL)
    kube = Kube.from_kubeconfig(kc)
    try:
        slices = wait_for(
            lambda: kube.list(*kinds.RESOURCE_SLICE),
            lambda found: any(s["spec"].get("nodeName") == legacy for s in found),
            timeout=60,
            describe=f"{DRIVER} slices of {legacy}",
        )
        findings = detect_double_stack(
            kube.list(*kinds.NODE),
            slices,
            kube.list(*kinds.DEVICE_CLASS),
            LEGACY_RESOURCE,
            gpu_drivers=[DRIVER],
        )
    finally:
        kube.close()
    assert [(f.check, f.severity, f.subject) for f in findings] == [
        ("double-stack", Severity.BLOCKING, f"node/{legacy}")
    ]


# kube-proxy's error lines that are upstream's and expected here, each once a node:
UPSTREAM_ERRORS = (
    # pkg/proxy/nftables/proxier.go @ v1.38.0-beta.0 syncProxyRules: listing the kube-proxy
    # table's sets answers ENOENT while it has none; logged, the sync goes on (nftables mode never
    # calls the stand-in).
    '"Failed to list existing sets" err="receiveAckAware: netlink receive: no such file or directory"',
    # cmd/kube-proxy/app/server.go @ v1.37.2 (line 306; v1.38.0-beta.0 line 311) checkBadConfig:
    # kind leaves nodePortAddresses unset, which iptables mode reports (nftables mode defaults it).
    '"Kube-proxy configuration may be incomplete or incorrect" err="nodePortAddresses is unset;',
)


def test_kube_proxy_runs_in_the_mode_its_build_needs(kind_cluster: KindProvider) -> None:
    """nftables where kube-proxy has the iptables-wrappers stand-in (kind_cluster.kube_proxy_mode),
    kind's default iptables elsewhere: the mode in kube-proxy's config and in its own log."""
    kc = kind_cluster.kubeconfig
    mode = kind_cluster.kube_proxy_mode or "iptables"
    conf = yaml.safe_load(
        ok(
            kubectl(
                kc,
                "-n",
                "kube-system",
                "get",
                "configmap",
                "kube-proxy",
                "-o",
                "jsonpath={.data.config\\.conf}",
            )
        )
    )
    assert conf["mode"] == mode
    # kind's own nodes (the cell label; the suites' kwok nodes get a kube-proxy pod of their own)
    nodes = ok(kubectl(kc, "get", "nodes", "-l", CELL_LABEL, "-o", "name")).replace("node/", "").split()
    assert len(nodes) == 1 + sum(p.workers for p in DEFAULT_POOLS)
    pods = json.loads(
        ok(kubectl(kc, "-n", "kube-system", "get", "pods", "-l", "k8s-app=kube-proxy", "-o", "json"))
    )
    on_kind = {
        p["spec"]["nodeName"]: p["metadata"]["name"] for p in pods["items"] if p["spec"]["nodeName"] in nodes
    }
    assert sorted(on_kind) == sorted(nodes)
    log = ok(kubectl(kc, "-n", "kube-system", "logs", on_kind[_node_of_pool(kc, DRA_POOL)]))
    print(log)  # the report's record of what kube-proxy says in this mode
    # cmd/kube-proxy/app/server_linux.go @ v1.38.0-beta.0 createProxier: "Using <mode> Proxier"
    assert f'"Using {mode} Proxier"' in log
    errors = [line for line in log.splitlines() if line.startswith("E")]
    assert [e for e in errors if not any(known in e for known in UPSTREAM_ERRORS)] == []  # none other


def _in_pod(kc: Path, name: str, script: str) -> str:
    """Run a Python script in a pod of the fake driver's image (the one image every node has)
    and return its output once it succeeded."""
    pod = f"""
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default}}
spec:
  restartPolicy: Never
  containers:
    - name: c
      image: dra-harness/fake-driver:dev
      imagePullPolicy: Never
      command: ["python", "-c", {json.dumps(script)}]
"""
    ok(kubectl(kc, "apply", "-f", "-", stdin=pod))
    try:
        phase = wait_for(
            lambda: ok(kubectl(kc, "get", "pod", name, "-o", "jsonpath={.status.phase}")),
            lambda p: p in ("Succeeded", "Failed"),
            timeout=120,
            describe=f"pod {name} finished",
        )
        log = ok(kubectl(kc, "logs", name))
        assert phase == "Succeeded", log
        return log
    finally:
        kubectl(kc, "delete", "pod", name, "--wait=false", "--ignore-not-found")


def test_a_cluster_ip_service_answers_from_a_pod(kind_cluster: KindProvider) -> None:
    """A Service's ClusterIP and its DNS name (CoreDNS behind its own ClusterIP) reach the
    server pod: kube-proxy's rules, whatever its mode, do the translation."""
    kc = kind_cluster.kubeconfig
    name = f"svc-{uuid.uuid4().hex[:6]}"
    server = f"""
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default, labels: {{app: {name}}}}}
spec:
  containers:
    - name: c
      image: dra-harness/fake-driver:dev
      imagePullPolicy: Never
      command: ["python", "-m", "http.server", "-d", "/etc", "8080"]  # /hostname: the pod's name
      readinessProbe: {{tcpSocket: {{port: 8080}}, periodSeconds: 1}}
---
apiVersion: v1
kind: Service
metadata: {{name: {name}, namespace: default}}
spec: {{selector: {{app: {name}}}, ports: [{{port: 80, targetPort: 8080}}]}}
"""
    ok(kubectl(kc, "apply", "-f", "-", stdin=server))
    try:
        wait_for(
            lambda: ok(
                kubectl(kc, "get", "pod", name, "-o", "jsonpath={.status.containerStatuses[0].ready}")
            ),
            lambda r: r == "true",
            timeout=120,
            describe=f"server pod {name} ready",
        )
        ip = ok(kubectl(kc, "get", "service", name, "-o", "jsonpath={.spec.clusterIP}"))
        script = (
            "import urllib.request\n"
            f"for url in ('http://{ip}/hostname', 'http://{name}.default.svc.cluster.local/hostname'):\n"
            "    print(url, urllib.request.urlopen(url, timeout=10).read().decode().strip())\n"
        )
        out = _in_pod(kc, f"{name}-client", script)
        assert out.splitlines() == [
            f"http://{ip}/hostname {name}",
            f"http://{name}.default.svc.cluster.local/hostname {name}",
        ]
    finally:
        kubectl(kc, "delete", "-f", "-", "--wait=false", stdin=server)


def test_in_cluster_clients_reach_the_api_server_through_the_kubernetes_service(
    kind_cluster: KindProvider,
) -> None:
    """What every in-cluster client (the driver's plugins, qualify's Job) goes by:
    KUBERNETES_SERVICE_HOST, the kubernetes Service's ClusterIP, translated by kube-proxy."""
    kc = kind_cluster.kubeconfig
    script = (
        "import json, os, ssl, urllib.request\n"
        "host = os.environ['KUBERNETES_SERVICE_HOST']\n"
        "ctx = ssl._create_unverified_context()\n"
        "v = json.load(urllib.request.urlopen(f'https://{host}/version', context=ctx, timeout=10))\n"
        "print(host, v['gitVersion'])\n"
    )
    out = _in_pod(kc, f"api-{uuid.uuid4().hex[:6]}", script)
    service_ip = ok(
        kubectl(kc, "-n", "default", "get", "service", "kubernetes", "-o", "jsonpath={.spec.clusterIP}")
    )
    assert out.split() == [service_ip, kind_cluster.cell().kubernetes]


def test_kube_proxy_with_the_standin_in_iptables_mode_stops_loudly(kind_cluster: KindProvider) -> None:
    """The same kube-proxy binary as the cluster's, asked for iptables mode on a node: it must
    refuse to start, naming the stand-in, never run without rules."""
    if kind_cluster.kube_proxy_mode != "nftables":
        pytest.skip(
            f"kube-proxy {kind_cluster.minor.kubernetes} has no stand-in: its iptables mode is upstream's"
        )
    from harness.clusters.kind.images.binaries import node_bin_dir

    binary = node_bin_dir(kind_cluster.minor) / "kube-proxy"
    node = ok(
        kubectl(
            kind_cluster.kubeconfig,
            "get",
            "nodes",
            "-l",
            "node-role.kubernetes.io/control-plane",
            "-o",
            "jsonpath={.items[0].metadata.name}",
        )
    )
    subprocess.run(["docker", "cp", str(binary), f"{node}:/root/kube-proxy"], check=True, timeout=120)
    argv = [
        "docker", "exec", node, "timeout", "60", "/root/kube-proxy", "--proxy-mode=iptables",
        "--kubeconfig=/etc/kubernetes/admin.conf", f"--hostname-override={node}",
        "--healthz-bind-address=127.0.0.1:39101", "--metrics-bind-address=127.0.0.1:39102",
        "--conntrack-max-per-core=0",
    ]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    print(done.stderr[-3000:])
    assert done.returncode == 1, f"exit {done.returncode}"  # 124: it ran on (timeout killed it)
    assert "iptables is not available on this host" in done.stderr
    assert "sigs.k8s.io/iptables-wrappers is the dra-harness stand-in" in done.stderr
