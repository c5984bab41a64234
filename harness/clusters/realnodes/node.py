"""One real node: a mount namespace of its own (held by a `sleep` under `unshare`), its own
containerd and kubelet entered into it with `nsenter`, and the fake driver's kubelet plugin
(and device plugin), or a real driver's kubelet plugin, entered into it too. Every process starts
in the node's tracking cgroup, so
teardown finds the containerd shims too (they leave containerd's process group by design:
containerd core/runtime/v2/shim.go starts them in a session of their own).

The namespace exists for the paths the kubelet, CDI and real drivers hard-code (/var/lib/kubelet,
/var/run/cdi, /var/log/containers: NodeLayout.binds), so every node has them as its own, and for
the mounts the kubelet and containerd make: they vanish with the namespace instead of outliving
the node on the host.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from fake_driver.kubeletplugin import checkpoint
from fake_driver.kubeletplugin.server import socket_paths
from harness.clusters.host import health
from harness.clusters.host.kubeconfig import write_kubeconfig
from harness.clusters.host.pki import CertPair, node_client
from harness.clusters.host.processes import ManagedProcess, log_tail
from harness.clusters.host.state import CDI_DIR, CGROUP_ROOT, KUBELET_ROOT, make_cgroup
from harness.clusters.realnodes.config import NodeLayout, cni_config, containerd_config, kubelet_config
from harness.clusters.realnodes.external import ExternalPlugin
from harness.clusters.realnodes.nvidiaroot import (
    describe_root,
    make_root,
    remove_driver_root,
    sysfs_binds,
)
from harness.controlplane.nodeparts import NodeBinaries
from harness.core.errors import ComponentFailed
from harness.kit.builders import PAUSE_IMAGE
from harness.kit.waits import TIMEOUTS, wait_for

SYSTEM_PATH = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
COMPONENTS = ("namespace", "containerd", "kubelet", "kubelet-plugin", "device-plugin")


@dataclass(frozen=True)
class NodeSpec:
    layout: NodeLayout
    labels: Mapping[str, str]
    fleet_file: Path
    device_plugin: bool
    gates: Mapping[str, bool]
    driver: str  # the kubelet plugin's driver name
    gpus: int = 0
    external: ExternalPlugin | None = None  # a real driver's plugin instead of the fake one
    profile: str = ""  # fake_driver GPU profile: a real driver with a fake driver root serves it
    mig: Mapping[str, Any] = field(default_factory=dict)  # and the pool's MIG layout (nvidiamig.py)


class NodeFailed(ComponentFailed):
    """A node that did not come up: names the node, the component and its last log lines."""


class RealNode:
    def __init__(
        self, spec: NodeSpec, parts: NodeBinaries, server: str, ca: CertPair, admin_kubeconfig: Path
    ):
        self.spec = spec
        self.layout = spec.layout
        self.parts = parts
        self.server = server
        self.ca = ca
        self.admin_kubeconfig = admin_kubeconfig
        self.components: dict[str, ManagedProcess] = {}

    @property
    def name(self) -> str:
        return self.layout.name

    @property
    def faults_file(self) -> Path:
        """The kubelet plugin re-reads it on every call (fake_driver PluginFaults): tests write
        {"prepareErrors": {"*": "why"}} and the like into it."""
        return self.layout.root / "plugin-faults.json"

    @property
    def tracking_cgroup(self) -> str:
        return f"{self.layout.cgroup}-sys"

    def log_path(self, component: str) -> Path:
        return self.layout.log_dir / f"{component}.log"

    @property
    def driver_root(self) -> Path | None:
        """The fake driver root of a real driver that needs one (versions.toml
        [drivers.*.root]), in the node's run directory; None for other plugins."""
        external = self.spec.external
        return self.layout.root / "driver-root" if external and external.spec.root else None

    # -- start ------------------------------------------------------------------------

    def prepare(self) -> None:
        """Directories, cgroups, certificates and configuration files; nothing runs yet."""
        n = self.layout
        for d in (
            n.root,
            n.state,
            n.cdi_dir,
            n.log_dir,
            n.kubelet_root,
            n.root / "cni-conf",
            *n.binds().values(),
        ):
            d.mkdir(parents=True, exist_ok=True)
        make_cgroup(n.cgroup)
        make_cgroup(self.tracking_cgroup)
        client = node_client(n.root / "pki", self.ca, n.name)
        write_kubeconfig(
            n.root / "kubelet.kubeconfig", self.server, self.ca.cert, f"system:node:{n.name}", client
        )
        config = containerd_config(n, self.parts.runc, self.parts.cni_bin_dir, self.parts.pause_ref)
        (n.root / "containerd.toml").write_text(config)
        (n.root / "cni-conf" / "10-dra-harness.conflist").write_text(cni_config(n))
        (n.root / "kubelet.yaml").write_text(kubelet_config(n, self.ca.cert, self.spec.gates))
        if self.driver_root is not None and self.spec.external is not None:
            make_root(
                self.spec.external.spec.root_for(self.spec.external.version),
                self.driver_root,
                n.name,
                self.spec.profile,
                self.spec.gpus,
                self.spec.mig,
            )

    def start_namespace(self) -> None:
        extra = sysfs_binds(self.driver_root) if self.driver_root is not None else {}
        binds = " && ".join(
            f"mount --bind {shlex.quote(str(src))} {dst}"
            for dst, src in {**self.layout.binds(), **extra}.items()
        )
        inner = f"{binds} && exec sleep infinity"
        self._launch("namespace", ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", inner])
        marker = next(iter(self.layout.binds()))
        proc = self.components["namespace"]

        def mounted() -> bool:
            proc.check_running()
            return f" {marker} " in Path(f"/proc/{proc.pid}/mountinfo").read_text()

        self._wait("namespace", mounted, "its bind mounts in place")

    def start_containerd(self) -> None:
        config = self.layout.root / "containerd.toml"
        self._launch(
            "containerd",
            [*self._nsenter(), str(self.parts.containerd_dir / "containerd"), "--config", str(config)],
        )
        self._wait("containerd", lambda: self._ctr("version") is not None, "answering on its socket")
        for archive in (self.parts.pause_archive, self.parts.busybox_archive):
            if self._ctr("-n", "k8s.io", "images", "import", str(archive)) is None:
                raise self._failed("containerd", f"cannot import {archive.name}")
        # Pods made for kwok nodes name this pause image: they run unchanged on a real node.
        if self._ctr("-n", "k8s.io", "images", "tag", "--force", self.parts.pause_ref, PAUSE_IMAGE) is None:
            raise self._failed("containerd", f"cannot tag {self.parts.pause_ref} as {PAUSE_IMAGE}")

    def start_kubelet(self) -> None:
        n = self.layout
        labels = ",".join(f"{k}={v}" for k, v in self.spec.labels.items())
        argv = [
            *self._nsenter(),
            str(self.parts.kubelet),
            f"--config={n.root / 'kubelet.yaml'}",
            f"--kubeconfig={n.root / 'kubelet.kubeconfig'}",
            f"--root-dir={KUBELET_ROOT}",  # the node's own (NodeLayout.binds)
            f"--cert-dir={n.root / 'kubelet-pki'}",  # default: /var/lib/kubelet/pki, on the host
            f"--hostname-override={n.name}",
            f"--node-ip={n.ip}",
            f"--node-labels={labels}",
            "--v=2",
        ]
        self._launch("kubelet", argv)

    def start_plugins(self) -> None:
        """The fake driver's kubelet plugin (publishes the node's slices, serves Prepare) and,
        for device-plugin pools, its device plugin: host processes beside the kubelet. Returns
        once the kubelet has registered each (its log, its node's allocatable)."""
        self.start_component("kubelet-plugin")
        if self.spec.device_plugin:
            self.start_component("device-plugin")

    def start_component(self, component: str) -> None:
        """Start one component (after stop_component): a restart as upstream e2e_node does it."""
        n, py = self.layout, sys.executable
        since = self._log_size("kubelet")
        if component == "kubelet-plugin":
            self.start_plugin_instance()
        elif component == "device-plugin":
            argv = [*self._nsenter(), py, "-m", "fake_driver.deviceplugin", f"--node-name={n.name}"]
            argv += [
                f"--fleet={self.spec.fleet_file}",
                "--no-api",
                f"--plugin-dir={KUBELET_ROOT}/device-plugins",
            ]
            self._launch(component, [*argv, "--recheck=0.5"])
            # pkg/kubelet/cm/devicemanager/plugin/v1beta1/client.go, once ListAndWatch answered.
            line = '"State pushed for device plugin" resource="nvidia.com/gpu"'
            self._wait(component, lambda: self._logged("kubelet", since, line, ""), "registered")
        elif component == "kubelet":
            self.start_kubelet()
            healthz = f"http://{n.ip}:10248/healthz"  # healthzPort's default, on the node's address
            self._wait(component, lambda: health.get(healthz)[0] == 200, "healthy")
        else:
            self.start_containerd()

    def start_plugin_instance(self, uid: str = "") -> str:
        """The node's kubelet plugin (the fake driver's, or the real driver of its pool) in
        the node's mount namespace; with `uid`, one instance of a fake rolling update (sockets
        named per instance, beside any other instance). Returns once the kubelet has
        connected to it; the component's name (`kubelet-plugin` or `kubelet-plugin@<uid>`)."""
        n, since = self.layout, self._log_size("kubelet")
        component = f"kubelet-plugin@{uid}" if uid else "kubelet-plugin"
        external = self.spec.external
        if external is not None:
            argv = external.argv(n.name, self.admin_kubeconfig, self.spec.gpus, self.driver_root)
            self._launch(
                component,
                [*self._nsenter(), *argv],
                external.env(n.name, self.admin_kubeconfig, self.spec.gpus, self.driver_root),
            )
            also = "connected=true"  # the endpoint is the driver's own choice
        else:
            self._launch(
                component,
                [
                    *self._nsenter(),
                    *[sys.executable, "-m", "fake_driver.kubeletplugin", f"--node-name={n.name}"],
                    *[f"--fleet={self.spec.fleet_file}", f"--kubeconfig={self.admin_kubeconfig}"],
                    f"--registry-dir={KUBELET_ROOT}/plugins_registry",
                    f"--plugins-dir={KUBELET_ROOT}/plugins",
                    f"--cdi-root={CDI_DIR}",
                    f"--faults-file={self.faults_file}",
                    *([f"--rolling-update-uid={uid}"] if uid else []),
                ],
            )
            also = f'endpoint="{self.plugin_endpoint(uid)}" connected=true'
        # pkg/kubelet/cm/dra/plugin/dra_plugin_manager.go logs this once it can call the plugin.
        line = f'"Connection changed" logger="DRA registration handler" driverName="{self.spec.driver}"'
        self._wait(component, lambda: self._logged("kubelet", since, line, also), "registered")
        return component

    def plugin_endpoint(self, uid: str = "") -> Path:
        """The DRA socket of the fake plugin (instance) as the kubelet dials it, in the namespace."""
        root = Path(KUBELET_ROOT)
        return socket_paths(root / "plugins_registry", root / "plugins", self.spec.driver, uid)[0]

    def plugin_socket(self, uid: str = "") -> Path:
        """The same socket seen from the host (below the node's own kubelet root)."""
        root = self.layout.kubelet_root
        return socket_paths(root / "plugins_registry", root / "plugins", self.spec.driver, uid)[0]

    def prepared_claims(self) -> set[str]:
        """UIDs of the claims the fake plugin holds prepared (its checkpoint, shared by instances)."""
        return set(checkpoint.load(self.plugin_socket().parent / checkpoint.CHECKPOINT_FILE))

    def wait_unprepared(self) -> None:
        """Until the plugin holds no prepared claim: the kubelet unprepares a deleted pod's
        claims once its containers stopped (pkg/kubelet/kubelet.go SyncTerminatingPod
        @v1.36.3), which for a pod deleted with grace period 0 comes after the pod is gone."""
        wait_for(
            self.prepared_claims,
            lambda held: not held,
            timeout=TIMEOUTS.deletion,
            describe=f"the plugin of node {self.name} holding no prepared claim",
        )

    def plugin_calls(self, component: str, method: str) -> list[str]:
        """`namespace/name/uid` of each claim in each `method` call the plugin (instance)
        `component` served, from the line it logs per call."""
        rows = self.log_path(component).read_text(errors="replace").splitlines()
        return [ref for row in rows if row.startswith(f"{method} ") for ref in row.split()[1:]]

    def replace_kubelet(self, parts: NodeBinaries, gates: Mapping[str, bool]) -> None:
        """Stop the kubelet and start `parts.kubelet` with `gates` on the same root dir,
        containerd and plugins: the containers are containerd's (their shims are not the
        kubelet's children), so they run on. Returns once the new kubelet is healthy and has
        connected to the DRA plugin (and the device plugin) again."""
        since = self._log_size("kubelet")
        self.stop_component("kubelet")
        self.parts = replace(self.parts, kubelet=parts.kubelet)
        self.spec = replace(self.spec, gates=dict(gates))
        (self.layout.root / "kubelet.yaml").write_text(kubelet_config(self.layout, self.ca.cert, gates))
        self.start_component("kubelet")
        # The kubelet's plugin watcher finds the sockets already in plugins_registry (and the
        # device plugin re-registers: pkg/kubelet/cm/devicemanager wipes its directory).
        line = f'"Connection changed" logger="DRA registration handler" driverName="{self.spec.driver}"'
        endpoint = (
            "connected=true" if self.spec.external else f'endpoint="{self.plugin_endpoint()}" connected=true'
        )

        def reconnected() -> bool:
            return self._logged("kubelet", since, line, endpoint)

        self._wait("kubelet", reconnected, "reconnected to its plugin")
        if self.spec.device_plugin:
            pushed = '"State pushed for device plugin" resource="nvidia.com/gpu"'
            self._wait("device-plugin", lambda: self._logged("kubelet", since, pushed, ""), "re-registered")

    def restart(self, component: str) -> None:
        self.stop_component(component)
        self.start_component(component)

    def stop_component(self, component: str) -> None:
        proc = self.components.pop(component, None)
        if proc is not None:
            proc.stop()

    def stop(self) -> None:
        """Processes in reverse start order; the cgroups (and what is left in them: shims,
        containers) go with the cluster's host slot."""
        for name in reversed(list(self.components)):
            self.components.pop(name).stop(grace=5.0)
        if self.driver_root is not None:  # its device nodes are the host's until removed
            remove_driver_root(self.driver_root)

    def kubelet_log_mentions(self, text: str) -> bool:
        return text in self.log_path("kubelet").read_text(errors="replace")

    def check_running(self) -> None:
        for name, proc in self.components.items():
            if not proc.running():
                raise self._failed(name, "exited")

    # -- helpers ----------------------------------------------------------------------

    def _log_size(self, component: str) -> int:
        path = self.log_path(component)
        return path.stat().st_size if path.exists() else 0

    def _logged(self, component: str, since: int, line: str, also: str) -> bool:
        self.check_running()
        with self.log_path(component).open("rb") as f:
            f.seek(since)
            text = f.read().decode("utf-8", "replace")
        return any(line in row and also in row for row in text.splitlines())

    def _nsenter(self) -> list[str]:
        return ["nsenter", f"--mount=/proc/{self.components['namespace'].pid}/ns/mnt", "--"]

    def _launch(
        self, component: str, argv: Sequence[str], extra_env: Mapping[str, str] | None = None
    ) -> None:
        procs = CGROUP_ROOT / "pids" / self.tracking_cgroup.strip("/") / "cgroup.procs"
        # Join the tracking cgroup before exec, so every descendant is found at teardown.
        wrapped = ["sh", "-c", 'echo $$ > "$0" && exec "$@"', str(procs), *argv]
        # containerd's own shim first: Debian's would be found otherwise.
        path = [self.parts.containerd_dir, self.parts.runc.parent, *SYSTEM_PATH]
        env = {"PATH": ":".join(map(str, path)), "HOME": "/root", "LANG": "C.UTF-8", **(extra_env or {})}
        proc = ManagedProcess(f"{self.name}/{component}", wrapped, self.log_path(component), env=env)
        self.components[component] = proc
        proc.start()

    def _ctr(self, *args: str) -> str | None:
        ctr = [str(self.parts.containerd_dir / "ctr"), f"--address={self.layout.containerd_socket}", *args]
        done = subprocess.run(ctr, capture_output=True, text=True, timeout=60, check=False)
        return done.stdout if done.returncode == 0 else None

    def _wait(self, component: str, ready: Callable[[], bool], what: str) -> None:
        try:
            wait_for(
                ready,
                timeout=TIMEOUTS.component_ready,
                describe=f"{self.name}/{component} {what}",
                interval=0.1,
            )
        except NodeFailed:
            raise  # a component exited: it names itself
        except Exception as err:
            raise self._failed(component, str(err).splitlines()[0]) from None

    def _failed(self, component: str, why: str) -> NodeFailed:
        log = self.log_path(component)
        external = self.spec.external
        if external is not None and component.startswith("kubelet-plugin"):
            component = f"{component} (driver {external.label}, {external.binary})"
            if self.driver_root is not None:
                why = f"{why}; {describe_root(self.driver_root)}"
        return NodeFailed(
            f"node {self.name}: {component} did not come up ({why}); last lines of {log}:\n{log_tail(log)}"
        )
