"""The version matrix, read from versions.toml (the single source of truth).

Everything that depends on a Kubernetes minor, a gate profile or a pinned upstream
version reads it from here; malformed files and unknown names fail with one line.
"""

from __future__ import annotations

import re
import sys
import tomllib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from harness.core.errors import HarnessError

REPO_ROOT = Path(__file__).resolve().parents[2]
_TOOLCHAIN = re.compile(r"go1\.\d+\.\d+")


def _versions_file() -> Path:
    """The checkout's versions.toml, or the copy a wheel installs (pyproject data-files)."""
    in_checkout = REPO_ROOT / "versions.toml"
    installed = Path(sys.prefix) / "share" / "dra-harness" / "versions.toml"
    return in_checkout if in_checkout.exists() or not installed.exists() else installed


VERSIONS_FILE = _versions_file()


class VersionsError(HarnessError):
    """versions.toml is missing, malformed, or does not name what was asked for."""


# Kubernetes's own pre-release tags (v1.38.0-beta.0, -rc.1); a provider's suffix
# (v1.30.4-eks-a737599, v1.30.5-gke.1014001) is a release.
_PRERELEASE = re.compile(r"^v\d+\.\d+\.\d+-(?:alpha|beta|rc)\.\d+$")


def release_label(version: str) -> str:
    """How a report names the Kubernetes build it ran against: "v1.38.0-beta.0, pre-release"
    for a pre-release, the version alone for a release (the one place that tells them apart);
    "version unknown" when the version was never read, never an empty gap in a header."""
    if not version.strip():
        return "version unknown"
    return f"{version}, pre-release" if _PRERELEASE.match(version) else version


def minor_number(name: str) -> tuple[int, int]:
    """ "1.37" -> (1, 37): the one parse of a Kubernetes minor's name."""
    major, minor = name.split(".")
    return int(major), int(minor)


@dataclass(frozen=True)
class GateProfile:
    name: str
    gates: dict[str, bool]
    runtime_config: dict[str, str]

    def feature_gates_flag(self) -> str:
        return ",".join(f"{k}={str(v).lower()}" for k, v in sorted(self.gates.items()))

    def runtime_config_flag(self) -> str:
        return ",".join(f"{k}={v}" for k, v in sorted(self.runtime_config.items()))


@dataclass(frozen=True)
class Minor:
    name: str  # "1.37"
    kubernetes: str  # "v1.37.2": the k8s.io/kubernetes module version built
    staging: str  # "v0.37.2": the k8s.io/<staging> module versions
    kind_image: str
    resource_api: str
    scheduling_api: str
    profiles: dict[str, GateProfile]
    unavailable: str  # why this minor cannot be built here; "" when it can
    # The Go toolchain every go command of this minor runs with (GOTOOLCHAIN, fetched by the go
    # command from the module proxy), when its go.mod needs a newer Go than the machines have;
    # "" builds with the local Go.
    go_toolchain: str = ""
    # Why this minor's kubelet cannot be built here (its control plane can); "" when it can.
    kubelet_unavailable: str = ""

    @property
    def number(self) -> tuple[int, int]:
        return minor_number(self.name)

    @property
    def release(self) -> str:
        """The pinned build as reports name it (release_label)."""
        return release_label(self.kubernetes)

    def profile(self, name: str) -> GateProfile:
        try:
            return self.profiles[name]
        except KeyError:
            valid = ", ".join(sorted(self.profiles))
            raise VersionsError(f"unknown gate profile {name!r} for {self.name}; valid: {valid}") from None


@dataclass(frozen=True)
class NodeParts:
    """What a real node of the local provider runs besides the kubelet ([nodes])."""

    containerd_module: str = "github.com/containerd/containerd/v2"
    containerd_version: str = "v2.4.2"
    containerd_tags: str = "no_btrfs urfave_cli_no_docs"
    apt_packages: tuple[str, ...] = ()
    cni_bin_dir: str = "/usr/lib/cni"
    busybox: str = "/bin/busybox"


@dataclass(frozen=True)
class GoTool:
    """A command built with `go install <module>@<version>` (versions.toml [tools])."""

    module: str
    version: str

    @property
    def name(self) -> str:
        return self.module.rsplit("/", 1)[1]


@dataclass(frozen=True)
class Matrix:
    default_minor: str
    default_profile: str
    default_personality: str
    kind_version: str
    kwok_module: str
    kwok_version: str
    minors: dict[str, Minor]
    default_cells: tuple[str, ...] = ()  # <minor>/<personality>/<profile>, for `make matrix`
    nodes: NodeParts = NodeParts()
    kind_engine_apt: tuple[str, ...] = ()
    # [test]: what `make test` builds (harness.cli.parts) beside the default minor.
    test_controlplanes: tuple[str, ...] = ()
    test_kubelets: tuple[str, ...] = ()
    test_apt: tuple[str, ...] = ()
    test_drivers: tuple[str, ...] = ()  # driver@version refs make test builds and qualifies
    test_mutants: tuple[str, ...] = ()  # driver@version refs whose mutants (mutants/) it builds
    # [budget]: each part's cold build seconds on this kind of machine (make test-fresh).
    budget: dict[str, int] = field(default_factory=dict)
    budget_minutes: int = 45
    # [tools]: Go commands the project runs (helm, actionlint), pinned.
    tools: dict[str, GoTool] = field(default_factory=dict)

    def tool(self, name: str) -> GoTool:
        try:
            return self.tools[name]
        except KeyError:
            known = ", ".join(self.tools) or "none"
            raise VersionsError(f"versions.toml [tools] has no {name!r}; it has {known}") from None

    def minor(self, name: str) -> Minor:
        name = name.removeprefix("v")
        if name.count(".") == 2:  # a full release like 1.37.2 names its minor
            name = name.rsplit(".", 1)[0]
        try:
            return self.minors[name]
        except KeyError:
            valid = ", ".join(self.minors)
            raise VersionsError(f"unknown Kubernetes version {name!r}; valid: {valid}") from None


def _table(data: dict[str, Any], key: str, where: str, *, optional: bool = False) -> dict[str, Any]:
    value = data.get(key, {} if optional else None)
    if not isinstance(value, dict):
        raise VersionsError(f"{where}: [{key}] must be a table")
    return value


def _str(data: dict[str, Any], key: str, where: str, *, optional: bool = False) -> str:
    value = data.get(key, "" if optional else None)
    if not isinstance(value, str):
        raise VersionsError(f"{where}: {key} must be a string, got {value!r}")
    return value


def _profile(name: str, data: Any, where: str) -> GateProfile:
    if not isinstance(data, dict):
        raise VersionsError(f"{where}: profile {name!r} must be a table")
    gates = data.get("gates", {})
    runtime = data.get("runtime_config", {})
    if not isinstance(gates, dict) or not all(isinstance(v, bool) for v in gates.values()):
        raise VersionsError(f"{where}.profiles.{name}: gates must map gate names to true/false")
    if not isinstance(runtime, dict) or not all(isinstance(v, str) for v in runtime.values()):
        raise VersionsError(f"{where}.profiles.{name}: runtime_config values must be strings")
    return GateProfile(name, dict(gates), dict(runtime))


def _minor(name: str, data: Any, source: str) -> Minor:
    where = f"{source}: minors.{name!r}"
    if not isinstance(data, dict):
        raise VersionsError(f"{where} must be a table")
    parts = name.split(".")
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        raise VersionsError(f'{where}: a minor is named like "1.37"')
    kubernetes = _str(data, "kubernetes", where)
    staging = _str(data, "staging", where)
    if not kubernetes.startswith(f"v{name}.") or not staging.startswith(f"v0.{parts[1]}."):
        raise VersionsError(f"{where}: kubernetes {kubernetes!r} / staging {staging!r} do not match {name}")
    profiles = {p: _profile(p, d, where) for p, d in _table(data, "profiles", where).items()}
    toolchain = _str(data, "go_toolchain", where, optional=True)
    if toolchain and not _TOOLCHAIN.fullmatch(toolchain):
        raise VersionsError(f'{where}: go_toolchain {toolchain!r} is not a Go release like "go1.27.3"')
    if not profiles:
        raise VersionsError(f"{where}: needs at least one gate profile")
    return Minor(
        name=name,
        kubernetes=kubernetes,
        staging=staging,
        kind_image=_str(data, "kind_image", where),
        resource_api=_str(data, "resource_api", where),
        scheduling_api=_str(data, "scheduling_api", where, optional=True),
        profiles=profiles,
        unavailable=_str(data, "unavailable", where, optional=True),
        go_toolchain=toolchain,
        kubelet_unavailable=_str(data, "kubelet_unavailable", where, optional=True),
    )


def _nodes(data: dict[str, Any], source: str) -> NodeParts:
    nodes = data.get("nodes")
    if nodes is None:
        return NodeParts()
    if not isinstance(nodes, dict):
        raise VersionsError(f"{source}: [nodes] must be a table")
    packages = nodes.get("apt_packages", [])
    if not isinstance(packages, list) or not all(isinstance(p, str) for p in packages):
        raise VersionsError(f"{source}: [nodes] apt_packages must be a list of package names")
    return NodeParts(
        containerd_module=_str(nodes, "containerd_module", "nodes"),
        containerd_version=_str(nodes, "containerd_version", "nodes"),
        containerd_tags=_str(nodes, "containerd_tags", "nodes", optional=True),
        apt_packages=tuple(packages),
        cni_bin_dir=_str(nodes, "cni_bin_dir", "nodes"),
        busybox=_str(nodes, "busybox", "nodes"),
    )


def _names(table: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise VersionsError(f"{where} {key} must be a list of names")
    return tuple(value)


def _test_and_budget(data: dict[str, Any], source: str, minors: dict[str, Minor]) -> dict[str, Any]:
    test = _table(data, "test", source, optional=True)
    where = f"{source}: [test]"
    fields: dict[str, Any] = {
        "test_controlplanes": _names(test, "controlplanes", where),
        "test_kubelets": _names(test, "kubelets", where),
        "test_apt": _names(test, "apt", where),
        "test_drivers": _names(test, "drivers", where),
        "test_mutants": _names(test, "mutants", where),
    }
    for name in (*fields["test_controlplanes"], *fields["test_kubelets"]):
        if name not in minors:
            raise VersionsError(f"{where} names {name}, which [minors] does not define")
    budget = dict(_table(data, "budget", source, optional=True))
    minutes = budget.pop("total_minutes", 45)
    seconds = budget.get("cold_seconds", {})
    if not isinstance(seconds, dict) or not all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in seconds.values()
    ):
        raise VersionsError(f"{source}: [budget.cold_seconds] must map part names to whole seconds")
    if not isinstance(minutes, int) or isinstance(minutes, bool) or minutes <= 0:
        raise VersionsError(f"{source}: [budget] total_minutes must be a positive whole number")
    return fields | {"budget": dict(seconds), "budget_minutes": minutes}


def _tools(data: dict[str, Any], source: str) -> dict[str, GoTool]:
    tools = {}
    for name, table in _table(data, "tools", source, optional=True).items():
        where = f"{source}: [tools.{name}]"
        if not isinstance(table, dict):
            raise VersionsError(f"{where} must be a table with module and version")
        tool = GoTool(_str(table, "module", where), _str(table, "version", where))
        if tool.name != name:
            raise VersionsError(f"{where}: module {tool.module} builds {tool.name!r}, not {name!r}")
        tools[name] = tool
    return tools


def parse_matrix(text: str, source: str = "versions.toml") -> Matrix:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise VersionsError(f"{source} is not valid TOML: {err}") from None
    minors = {name: _minor(name, d, source) for name, d in _table(data, "minors", source).items()}
    if not minors:
        raise VersionsError(f"{source}: [minors] is empty")
    kind = _table(data, "kind", source)
    cells = _table(data, "matrix", source, optional=True).get("default_cells", [])
    if not isinstance(cells, list) or not all(isinstance(c, str) for c in cells):
        raise VersionsError(
            f"{source}: [matrix] default_cells must be a list of <minor>/<personality>/<profile>"
        )
    kwok = _table(data, "kwok", source)
    matrix = Matrix(
        default_minor=_str(data, "default_minor", source),
        default_profile=_str(data, "default_profile", source),
        default_personality=_str(data, "default_personality", source),
        kind_version=_str(kind, "version", f"{source}: [kind]"),
        kwok_module=_str(kwok, "module", f"{source}: [kwok]"),
        kwok_version=_str(kwok, "version", f"{source}: [kwok]"),
        minors=minors,
        default_cells=tuple(cells),
        nodes=_nodes(data, source),
        kind_engine_apt=_names(kind, "engine_apt", f"{source}: [kind]"),
        tools=_tools(data, source),
        **_test_and_budget(data, source, minors),
    )
    try:
        default = matrix.minor(matrix.default_minor)
    except VersionsError as err:
        raise VersionsError(f"{source}: default_minor: {err}") from None
    try:
        default.profile(matrix.default_profile)
    except VersionsError as err:
        raise VersionsError(f"{source}: default_profile: {err}") from None
    return matrix


@cache
def load_matrix(path: Path = VERSIONS_FILE) -> Matrix:
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as err:
        raise VersionsError(f"cannot read {path}: {err.strerror}") from None
    except UnicodeDecodeError as err:
        raise VersionsError(f"{path.name} is not UTF-8 text: {err.reason} at byte {err.start}") from None
    return parse_matrix(text, str(path.name))
