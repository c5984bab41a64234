"""What a pod on a real node shows: its container's environment (printed to its log), the
kubelet's DRA gRPC call and operation counts (its /metrics through the API server's node
proxy), and the CDI spec files the driver wrote for a claim (read by a pod on the node)."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from harness.core.errors import HarnessError
from harness.core.redaction import redact
from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.kube import Kube, Obj
from harness.kit.waits import TIMEOUTS, wait_for

# The busybox image the harness builds and imports on every real node (never pulled).
ENV_COMMAND = ["sh", "-c", "env | sort; echo ---; exec sleep 3600"]
END_MARKER = "--- end of the device view ---"
_CALL = re.compile(
    r"^dra_grpc_operations_duration_seconds_count\{(?P<labels>[^}]*)\} (?P<value>[0-9.e+]+)$", re.MULTILINE
)
_OPERATION = re.compile(
    r"^dra_operations_duration_seconds_count\{(?P<labels>[^}]*)\} (?P<value>[0-9.e+]+)$", re.MULTILINE
)
# Where CDI specs live (tags.cncf.io/container-device-interface pkg/cdi/spec-dirs.go @ v1.1.0,
# DefaultDynamicDir): the claims' specs are generated, so a driver writes them here.
CDI_DYNAMIC_DIR = "/var/run/cdi"


# Not 0: the API server removes a pod whose grace is 0 from storage at the delete request
# (k8s.io/apiserver pkg/registry/generic/registry/store.go updateForGracefulDeletionAndFinalizers
# @ v0.37.2: only lastGraceful > 0 waits), before the kubelet has stopped its containers and
# unprepared its claims, so the next pod could get the device while the old one still runs.
# 1 s, because a container whose PID 1 is `sleep` ignores SIGTERM and is killed at the end.
REAL_KUBELET_GRACE_SECONDS = 1


def env_pod(
    name: str,
    namespace: str,
    image: str,
    node: str,
    *,
    limits: Mapping[str, str] | None = None,
    claim_templates: Mapping[str, str] | None = None,
    claims: Mapping[str, str] | None = None,
) -> Obj:
    """A pod on `node` whose container prints its environment, then idles; `claims` names
    existing ResourceClaims (pod claim name -> claim)."""
    container = b.container(limits=limits, claims=[*(claim_templates or {}), *(claims or {})])
    container |= {"image": image, "imagePullPolicy": "Never", "command": ENV_COMMAND}
    pod = b.pod(
        name,
        namespace,
        containers=[container],
        claim_templates=claim_templates,
        claims=claims,
        grace_seconds=REAL_KUBELET_GRACE_SECONDS,
    )
    pod["spec"]["nodeSelector"] = {"kubernetes.io/hostname": node}  # the scheduler still allocates
    pod["spec"]["automountServiceAccountToken"] = False
    return pod


def view_container(name: str, image: str, command: Sequence[str], claims: Sequence[str] = ()) -> Obj:
    """A container that runs `command` (how a driver shows a container its devices: env, ls
    /dev, ...), prints the end marker, then idles; with `claims` (pod claim names)."""
    script = f"{shlex.join(command)}; echo {END_MARKER}; exec sleep 3600"
    container = b.container(name, claims=claims)
    return container | {"image": image, "imagePullPolicy": "IfNotPresent", "command": ["sh", "-c", script]}


def log_until(kube: Kube, namespace: str, pod: str, marker: str, describe: str, container: str = "") -> str:
    """The pod's log (read through the kubelet, by the API server) once it contains `marker`.
    Waits: a container Running may not have printed yet, and a kubelet just restarted answers
    404 until it knows the pod's containers again."""
    path = f"/api/v1/namespaces/{namespace}/pods/{pod}/log" + (f"?container={container}" if container else "")
    _, body = wait_for(
        lambda: kube.raw_get(path),
        lambda answer: answer[0] == 200 and marker in answer[1],
        timeout=TIMEOUTS.api_object,
        describe=describe,
    )
    return body


def container_output(kube: Kube, namespace: str, pod: str, container: str) -> str:
    """What the container printed before the end marker."""
    describe = f"the output of container {container} of {namespace}/{pod}"
    return log_until(kube, namespace, pod, END_MARKER, describe, container).split(END_MARKER, 1)[0]


def container_env(kube: Kube, namespace: str, pod: str) -> dict[str, str]:
    """The environment the container printed."""
    body = log_until(kube, namespace, pod, "---", f"the environment in the log of {namespace}/{pod}")
    lines = body.split("---", 1)[0].splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line)


def device_env(env: Mapping[str, str]) -> dict[str, str]:
    """Only what a GPU driver hands a container: NVIDIA_VISIBLE_DEVICES and DRA_*."""
    return {k: v for k, v in env.items() if k == "NVIDIA_VISIBLE_DEVICES" or k.startswith("DRA_")}


def dra_calls(kube: Kube, node: str, driver: str = "") -> dict[tuple[str, str], int]:
    """(method, gRPC status) -> count, from the kubelet's dra_grpc_operations_duration_seconds
    (pkg/kubelet/metrics/metrics.go: labels driver_name, method_name, grpc_status_code), e.g.
    ("NodePrepareResources", "OK") -> 1; with `driver`, that driver's calls only."""
    status, body = kube.raw_get(f"/api/v1/nodes/{node}/proxy/metrics")
    if status != 200:
        raise HarnessError(f"metrics of the kubelet on {node}: HTTP {status}: {body[:300]}")
    calls: dict[tuple[str, str], int] = {}
    for m in _CALL.finditer(body):
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m["labels"]))
        if driver and labels.get("driver_name") != driver:
            continue
        key = (labels.get("method_name", "").rsplit("/", 1)[-1], labels.get("grpc_status_code", ""))
        calls[key] = calls.get(key, 0) + int(float(m["value"]))
    return calls


def dra_operations(kube: Kube, node: str) -> dict[tuple[str, str], int]:
    """(operation, is_error) -> count of the kubelet's PrepareResources and UnprepareResources
    for a pod's claims, from dra_operations_duration_seconds (k8s.io/kubernetes@v1.37.2
    pkg/kubelet/metrics/metrics.go; observed in pkg/kubelet/cm/dra/manager.go): a plugin that
    answers a gRPC call OK with an error for a claim counts here as ("UnprepareResources", "true").
    The node's, of every driver."""
    status, body = kube.raw_get(f"/api/v1/nodes/{node}/proxy/metrics")
    if status != 200:
        raise HarnessError(f"metrics of the kubelet on {node}: HTTP {status}: {body[:300]}")
    ops: dict[tuple[str, str], int] = {}
    for m in _OPERATION.finditer(body):
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m["labels"]))
        key = (labels.get("operation_name", ""), labels.get("is_error", ""))
        ops[key] = ops.get(key, 0) + int(float(m["value"]))
    return ops


def cdi_specs_naming(kube: Kube, namespace: str, node: str, image: str, text: str, name: str) -> list[str]:
    """The CDI spec files in the node's CDI_DYNAMIC_DIR whose content names `text` (a claim's
    UID), as pod `name` on the node sees them through a read-only hostPath mount of the
    directory; the pod is deleted after. The directory must exist (a driver writing specs made it)."""
    mount = "/host-cdi"
    grep = ["sh", "-c", f"grep -lrF {shlex.quote(text)} {mount} || true"]
    container = view_container("cdi", image, grep)
    container["volumeMounts"] = [{"name": "cdi", "mountPath": mount, "readOnly": True}]
    pod = b.pod(name, namespace, containers=[container], grace_seconds=REAL_KUBELET_GRACE_SECONDS)
    pod["spec"] |= {
        "nodeName": node,  # no claim, nothing to schedule: straight to the node's kubelet
        "automountServiceAccountToken": False,
        "volumes": [{"name": "cdi", "hostPath": {"path": CDI_DYNAMIC_DIR, "type": "Directory"}}],
    }
    kube.create(pod)
    try:
        out = container_output(kube, namespace, name, "cdi")
    finally:
        kube.delete(*kinds.POD, name, namespace)
    return sorted(CDI_DYNAMIC_DIR + line.strip()[len(mount) :] for line in out.splitlines() if line.strip())


PLUGIN_RESTART_TIMEOUT = 300.0  # seconds: a DaemonSet's pod replaced and registered, with margin


# seconds: the fault made and the command returned; what the driver then does is waited for apart
INJECT_FAULT_TIMEOUT = 120.0


def restart_plugin(
    argv: Sequence[str], node: str, kubeconfig: Path | None = None, timeout: float = PLUGIN_RESTART_TIMEOUT
) -> None:
    """Run --plugin-restart-command for `node` ({node} filled); see run_node_command."""
    run_node_command(argv, {"node": node}, kubeconfig, timeout)


def inject_fault(
    argv: Sequence[str],
    node: str,
    device: str,
    kubeconfig: Path | None = None,
    timeout: float = INJECT_FAULT_TIMEOUT,
) -> None:
    """Run --inject-fault-command for `device` of `node`; see run_node_command."""
    run_node_command(argv, {"node": node, "device": device}, kubeconfig, timeout)


def run_node_command(
    argv: Sequence[str], fields: Mapping[str, str], kubeconfig: Path | None, timeout: float
) -> None:
    """Run a user's command template with `fields` filled, without a shell, with KUBECONFIG set
    to the run's kubeconfig (a `kubectl` in it talks to the cluster under test, not the
    runner's default context), bounded: on timeout its whole process group is killed.
    HarnessError with its exit and last output lines (redacted: they go into reports) when it
    fails."""
    command = [word.format(**fields) for word in argv]
    env = {**os.environ, "KUBECONFIG": str(kubeconfig)} if kubeconfig is not None else None
    shown = redact(shlex.join(command))
    try:
        proc = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=env,
        )
    except OSError as err:  # no shell: `a; b` is one program's name
        raise HarnessError(f"{shown}: {err.strerror}") from None
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output = _after_kill(proc)
        raise HarnessError(f"{shown}: no exit in {timeout:.0f} s: {_tail(output)}") from None
    if proc.returncode != 0:
        raise HarnessError(f"{shown}: exit {proc.returncode}: {_tail(output)}")


def _after_kill(proc: subprocess.Popen[bytes], grace: float = 10.0) -> bytes:
    """What the killed group printed; bounded, since a child that left the group (setsid)
    may still hold the pipe open."""
    try:
        output, _ = proc.communicate(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        return b"(its output pipe stayed open: a child outside its process group holds it)"
    return output


def _tail(output: bytes, lines: int = 10) -> str:
    return redact(" | ".join(output.decode(errors="replace").splitlines()[-lines:])) or "no output"
