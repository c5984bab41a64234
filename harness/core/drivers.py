"""Real DRA drivers the harness builds and runs on real nodes, read from versions.toml's
[drivers] tables: where each is built from, how its kubelet plugin is started, which settings
of a node pool map to which of its flags, and how a container shows the devices it was given.

    spec, version = driver_ref("example@v0.4.0")
    spec.argv(version, {"node": "real-0", "kubeconfig": "/k", "gpus": "2"}, {"partitions": 2})
"""

from __future__ import annotations

import re
import shlex
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from harness.core.versions import VERSIONS_FILE, VersionsError

_VERSION = re.compile(r"^v(\d+)\.(\d+)\.(\d+)$")
# What an argv or env template may name: filled per node by the real-node pool ({root}: the
# node's fake driver root, for a driver with a [drivers.*.root] table).
TEMPLATE_FIELDS = ("node", "kubeconfig", "gpus", "root")
ROOT_KINDS = ("nvidia",)  # harness/clusters/realnodes/nvidiaroot.py


def version_key(version: str) -> tuple[int, int, int]:
    m = _VERSION.match(version)
    if m is None:
        raise VersionsError(f"driver version {version!r} is not like v0.4.0")
    return int(m[1]), int(m[2]), int(m[3])


@dataclass(frozen=True)
class Setting:
    """A pool setting the driver has a flag for, from release `since` on."""

    flag: str  # "--gpu-partitions={}"; without "{}" the flag is a switch (set when true)
    since: str


@dataclass(frozen=True)
class ContainerView:
    """How a container shows what it was given: run `command` in it; each output line that
    matches `pattern` names one device by its `device` group."""

    command: tuple[str, ...]
    pattern: str

    def devices(self, output: str) -> list[str]:
        rx = re.compile(self.pattern)
        return sorted(m["device"] for line in output.splitlines() if (m := rx.match(line.strip())))

    def can_name(self, device: str) -> bool:
        """Can the `device` group match this device name at all? (NVIDIA's view names
        /dev/nvidia<N> as gpu-<N>: never a MIG device.) True when the group cannot be read."""
        group = _group(self.pattern, "device")
        return group is None or re.fullmatch(group, device) is not None


def _group(pattern: str, name: str) -> str | None:
    """The text of group `name` in `pattern` (escapes and character classes skipped)."""
    start = pattern.find(f"(?P<{name}>")
    if start < 0:
        return None
    i, depth, in_class = start + len(name) + 5, 1, False
    body = i
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        elif c in "()":
            depth += 1 if c == "(" else -1
            if depth == 0:
                return pattern[body:i]
        i += 1
    return None


def plugin_restart_argv(command: str) -> tuple[str, ...]:
    """`--plugin-restart-command`: a command that restarts the driver's kubelet plugin on node
    `{node}` and returns once it serves again; ValueError when it does not split or names
    another field."""
    try:
        argv = tuple(shlex.split(command))
    except ValueError as err:
        raise ValueError(f"--plugin-restart-command: {err}") from None
    for word in argv:
        try:
            word.format(node="n")
        except (KeyError, IndexError, ValueError) as err:
            raise ValueError(
                f"--plugin-restart-command: {word!r}: only {{node}} may be named ({err})"
            ) from None
    return argv


def inject_fault_argv(command: str) -> tuple[str, ...]:
    """`--inject-fault-command`: a command that makes device `{device}` of node `{node}` sick
    (the device-health capability); ValueError when it does not split, is empty, lacks one of
    the two fields or names another."""
    name = "--inject-fault-command"
    try:
        argv = tuple(shlex.split(command))
    except ValueError as err:
        raise ValueError(f"{name}: {err}") from None
    if not argv:
        raise ValueError(f"{name}: empty; give a command with {{node}} and {{device}}")
    for word in argv:
        try:
            word.format(node="n", device="d")
        except (KeyError, IndexError, ValueError) as err:
            raise ValueError(f"{name}: {word!r}: only {{node}} and {{device}} may be named ({err})") from None
    filled = " ".join(word.format(node="\0node", device="\0device") for word in argv)
    for field_ in ("node", "device"):
        if f"\0{field_}" not in filled:  # "{{node}}" is a literal brace, not the field
            raise ValueError(
                f"{name}: {command!r} names no {{{field_}}}: it must say which device to make sick"
            )
    return argv


@dataclass(frozen=True)
class ClassSpec:
    """One DeviceClass of the driver's chart: its name, CEL selector, and whether it carries
    the driver's extended resource name."""

    name: str
    cel: str
    extended_resource: bool = False


@dataclass(frozen=True)
class DriverSpec:
    name: str  # "example": what `--driver example@v0.4.0` names
    module: str
    package: str  # the kubelet plugin's package within the module
    versions: tuple[str, ...]
    default: str
    driver_name: str  # the DRA driver name it publishes under
    argv_template: tuple[str, ...]
    env_template: Mapping[str, str]
    extended_resource: str
    extended_resource_since: str
    container_view: ContainerView
    settings: Mapping[str, Setting] = field(default_factory=dict)
    source: str = ""  # the upstream file its facts come from
    build_env: Mapping[str, str] = field(default_factory=dict)  # beside the harness's Go env
    # A fake driver root per node ({root}): its kind and what it is built from; empty: none.
    root: Mapping[str, str] = field(default_factory=dict)
    # The chart's DeviceClasses; none listed: one named after the driver selecting its devices.
    classes: tuple[ClassSpec, ...] = ()
    # Per release, what differs from `root` (a newer go-nvml's nvml.h, the toolkit it pins).
    root_versions: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    # Per release, "module@version" its go.mod pins whose source the proxy does not serve ->
    # what stands in: a directory of this repository, or "" for the module's own zip (served
    # where its .info and .mod are not). Built through a go.work replace (driverparts).
    unserved: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    def root_for(self, version: str) -> dict[str, str]:
        """The fake driver root this release runs on (empty: none)."""
        return {**self.root, **self.root_versions.get(version, {})} if self.root else {}

    @property
    def binary_name(self) -> str:
        return self.package.rstrip("/").rsplit("/", 1)[-1]

    def check_version(self, version: str) -> None:
        if version not in self.versions:
            raise VersionsError(
                f"driver {self.name} has no version {version!r} in versions.toml; "
                f"known: {', '.join(self.versions)}"
            )

    def has(self, version: str, since: str) -> bool:
        return bool(since) and version_key(version) >= version_key(since)

    def maps_extended_resource(self, version: str) -> bool:
        """Whether its DeviceClass carries extendedResourceName at this release."""
        return bool(self.extended_resource) and self.has(version, self.extended_resource_since)

    def qualify_defaults(self, version: str) -> dict[str, str]:
        """What qualify needs to know of this release (`--driver-spec`, a matrix real-driver
        cell): its chart's class is named after the driver; "" extended_resource: none mapped."""
        return {
            "driver_name": self.driver_name,
            "device_class": self.driver_name,
            "extended_resource": self.extended_resource if self.maps_extended_resource(version) else "",
            "container_command": shlex.join(self.container_view.command),
            "container_device_pattern": self.container_view.pattern,
            "driver_release": f"{self.module} {version}",
        }

    def argv(self, version: str, fields: Mapping[str, str], settings: Mapping[str, Any]) -> list[str]:
        """The plugin's arguments for one node; a setting this release lacks is refused."""
        argv = [arg.format(**fields) for arg in self.argv_template]
        for key, value in sorted(settings.items()):
            if value in (None, False, 0):
                continue
            setting = self.settings.get(key)
            if setting is None:
                raise VersionsError(f"driver {self.name} has no setting {key!r}")
            if not self.has(version, setting.since):
                raise VersionsError(
                    f"driver {self.name}@{version} has no {key} (from {setting.since}: {setting.flag})"
                )
            argv.append(setting.flag.format(value) if "{}" in setting.flag else setting.flag)
        return argv

    def env(self, fields: Mapping[str, str]) -> dict[str, str]:
        return {k: v.format(**fields) for k, v in self.env_template.items()}


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise VersionsError(f"{where} must be a list of non-empty strings")
    return tuple(value)


def _per_version(table: Any) -> dict[str, dict[str, str]]:
    return {str(v): {str(k): str(x) for k, x in t.items()} for v, t in table.items()}


def _check_template(text: str, where: str) -> None:
    try:
        text.format(**dict.fromkeys(TEMPLATE_FIELDS, ""))
    except (KeyError, IndexError, ValueError) as err:
        raise VersionsError(f"{where}: {text!r} names {err}; known: {', '.join(TEMPLATE_FIELDS)}") from None


def _spec(name: str, data: Any, source: str) -> DriverSpec:
    where = f"{source}: drivers.{name}"
    if not isinstance(data, dict):
        raise VersionsError(f"{where} must be a table")
    try:
        versions = _strings(data["versions"], f"{where}.versions")
        for v in versions:
            version_key(v)
        view = data["container_view"]
        extended = data.get("extended_resource", {})
        settings = {
            key: Setting(str(s["flag"]), str(s["since"])) for key, s in data.get("settings", {}).items()
        }
        spec = DriverSpec(
            name=name,
            module=str(data["module"]),
            package=str(data["package"]),
            versions=versions,
            default=str(data["default"]),
            driver_name=str(data["driver_name"]),
            argv_template=_strings(data["argv"], f"{where}.argv"),
            env_template={str(k): str(v) for k, v in data.get("env", {}).items()},
            extended_resource=str(extended.get("name", "")),
            extended_resource_since=str(extended.get("since", "")),
            container_view=ContainerView(
                _strings(view["command"], f"{where}.container_view"), view["pattern"]
            ),
            settings=settings,
            source=str(data.get("source", "")),
            build_env={str(k): str(v) for k, v in data.get("build_env", {}).items()},
            root={str(k): str(v) for k, v in data.get("root", {}).items()},
            classes=tuple(
                ClassSpec(str(c["name"]), str(c["cel"]), bool(c.get("extended_resource", False)))
                for c in data.get("device_classes", [])
            ),
            root_versions=_per_version(data.get("root_versions", {})),
            unserved=_per_version(data.get("unserved", {})),
        )
        re.compile(spec.container_view.pattern)
        if spec.root and spec.root.get("kind") not in ROOT_KINDS:
            raise VersionsError(f"{where}.root: kind must be one of {', '.join(ROOT_KINDS)}")
    except KeyError as err:
        raise VersionsError(f"{where}: missing {err}") from None
    except (TypeError, AttributeError, re.error) as err:
        raise VersionsError(f"{where}: {err}") from None
    spec.check_version(spec.default)
    for version in (*spec.root_versions, *spec.unserved):
        spec.check_version(version)
    for text in (*spec.argv_template, *spec.env_template.values()):
        _check_template(text, where)
    return spec


def parse_drivers(data: dict[str, Any], source: str = "versions.toml") -> dict[str, DriverSpec]:
    table = data.get("drivers", {})
    if not isinstance(table, dict):
        raise VersionsError(f"{source}: [drivers] must be a table")
    return {name: _spec(name, d, source) for name, d in table.items()}


@cache
def load_drivers(path: Path = VERSIONS_FILE) -> dict[str, DriverSpec]:
    try:
        return parse_drivers(tomllib.loads(path.read_text()), path.name)
    except (OSError, tomllib.TOMLDecodeError) as err:
        raise VersionsError(f"cannot read {path}: {err}") from None


def is_driver_ref(text: str) -> bool:
    """A real driver's NAME@VERSION (where a matrix cell names a fake personality otherwise)."""
    return "@" in text


def driver_ref(ref: str) -> tuple[DriverSpec, str]:
    """`example@v0.4.0` (or `example`: its default version) -> its spec and version."""
    name, _, version = ref.partition("@")
    drivers = load_drivers()
    spec = drivers.get(name)
    if spec is None:
        known = ", ".join(f"{n}@{d.default}" for n, d in drivers.items())
        raise VersionsError(f"unknown driver {name!r}; known: {known}")
    version = version or spec.default
    spec.check_version(version)
    return spec, version
