"""A real DRA driver's kubelet plugin on a real node, in place of the fake driver's: which
binary, with which arguments and environment per node, the objects its chart would install
(its DeviceClass), and what is left to delete when it stops (its ResourceSlices).

The DeviceClass is written from the driver's chart at the pinned version
(deployments/helm/dra-example-driver/templates/deviceclass.yaml: one class named after the
driver, selecting `device.driver == '<driver>'`, with deviceClass.extendedResourceName when
set). Its RBAC and admission objects are not installed: the plugin runs with the cluster's
admin kubeconfig, as a host process (not a DaemonSet), so they would restrict nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fake_driver.api.ownership import is_owned, labelled, refusal
from harness.controlplane import mutantparts
from harness.controlplane.driverparts import driver_built, not_built_line
from harness.core.drivers import ClassSpec, DriverSpec, driver_ref
from harness.core.errors import HarnessError
from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.kube import Kube, NotFoundError


@dataclass(frozen=True)
class ExternalPlugin:
    """One driver at one version, with the pool's settings (versions.toml [drivers.*.settings])."""

    spec: DriverSpec
    version: str
    binary: Path
    settings: Mapping[str, Any] = field(default_factory=dict)
    mutant: str = ""  # a planted-bug build of this release (mutants/), not the release itself

    @property
    def driver(self) -> str:
        return self.spec.driver_name

    @property
    def label(self) -> str:
        return f"{self.spec.name}@{self.version}" + (f" mutant {self.mutant}" if self.mutant else "")

    def argv(self, node: str, kubeconfig: Path, gpus: int, root: Path | None = None) -> list[str]:
        fields = _fields(node, kubeconfig, gpus, root)
        return [str(self.binary), *self.spec.argv(self.version, fields, self.settings)]

    def env(self, node: str, kubeconfig: Path, gpus: int, root: Path | None = None) -> dict[str, str]:
        return self.spec.env(_fields(node, kubeconfig, gpus, root))

    def device_classes(self) -> list[dict[str, Any]]:
        """The chart's DeviceClasses (versions.toml device_classes), or one named after the
        driver selecting all its devices when it lists none."""
        extended = self.spec.extended_resource if self.spec.maps_extended_resource(self.version) else None
        classes = self.spec.classes or (ClassSpec(self.driver, f"device.driver == '{self.driver}'", True),)
        return [
            labelled(
                b.device_class(
                    c.name,
                    selectors=[c.cel],
                    extended_resource_name=extended if c.extended_resource else None,
                )
            )
            for c in classes
        ]


def _fields(node: str, kubeconfig: Path, gpus: int, root: Path | None) -> dict[str, str]:
    return {"node": node, "kubeconfig": str(kubeconfig), "gpus": str(gpus), "root": str(root or "")}


def external_plugin(ref: str, settings: Mapping[str, Any] | None = None, mutant: str = "") -> ExternalPlugin:
    """`example@v0.4.0` as built here, or its `mutant` (mutants/); one line with the make target
    when it is not built, or when the release lacks a setting the pool asks for."""
    spec, version = driver_ref(ref)
    spec.argv(version, _fields("", Path(), 0, None), settings or {})  # refuses unknown
    if mutant:
        binary = mutantparts.mutant_built(spec, version, mutant)
        missing = mutantparts.not_built_line(spec, version, mutant)
    else:
        binary, missing = driver_built(spec, version), not_built_line(spec, version)
    if binary is None:
        raise HarnessError(missing)
    return ExternalPlugin(spec, version, binary, dict(settings or {}), mutant)


def check_driver_names(names: Sequence[tuple[str, str]]) -> None:
    """(who, driver name) of every plugin and fake personality a cluster would run: two of
    different kinds under one driver name publish over each other; refused before any start."""
    seen: dict[str, str] = {}
    for who, name in names:
        other = seen.setdefault(name, who)
        if other != who:
            raise HarnessError(
                f"{other} and {who} both publish as driver {name}: one cluster cannot run both"
            )


def install_objects(kube: Kube, plugin: ExternalPlugin) -> None:
    """The driver's DeviceClasses, each replaced when the harness made it before; a class of
    that name the harness did not make is refused (fake_driver.api.ownership)."""
    for cls in plugin.device_classes():
        name = cls["metadata"]["name"]
        try:
            existing = kube.get(*kinds.DEVICE_CLASS, name)
        except NotFoundError:
            kube.create(cls)
            continue
        if not is_owned(existing):
            raise HarnessError(refusal("DeviceClass", name))
        kube.patch(*kinds.DEVICE_CLASS, name, {"spec": cls["spec"]})


def delete_slices(kube: Kube, driver: str, nodes: Sequence[str]) -> int:
    """The driver's slices of these nodes: a real driver's slices outlive its process when no
    kubelet removes them. Returns how many were deleted."""
    slices = kube.list(*kinds.RESOURCE_SLICE)
    doomed = [
        s["metadata"]["name"]
        for s in slices
        if s["spec"].get("driver") == driver and s["spec"].get("nodeName") in nodes
    ]
    for name in doomed:
        kube.delete(*kinds.RESOURCE_SLICE, name)
    return len(doomed)
