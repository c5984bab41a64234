"""DeviceClasses a personality installs (NVIDIA chart templates/deviceclass-*.yaml, example chart)."""

from __future__ import annotations

from typing import Any

from fake_driver.api.ownership import owner_labels
from fake_driver.facts.personalities import Personality
from fake_driver.facts.profiles import GpuProfile

Obj = dict[str, Any]

COMPUTE_DOMAIN_DRIVER = "compute-domain.nvidia.com"


def _class(p: Personality, name: str, expression: str, extended_resource: str | None = None) -> Obj:
    spec: Obj = {"selectors": [{"cel": {"expression": expression}}]}
    if extended_resource:
        spec["extendedResourceName"] = extended_resource
    return {
        "apiVersion": p.resource_api_version,
        "kind": "DeviceClass",
        "metadata": {"name": name, "labels": owner_labels()},
        "spec": spec,
    }


def _type_is(driver: str, t: str) -> str:
    return f"device.driver == '{driver}' && device.attributes['{driver}'].type == '{t}'"


def mig_profile_class_name(profile: str) -> str:
    """demo/specs/extended-resources/mig-1g-12gb.yaml: 'mig-1g-12gb.gpu.nvidia.com'."""
    return f"mig-{profile.replace('.', '-').replace('+', '-')}.gpu.nvidia.com"


def render_device_classes(
    p: Personality,
    *,
    compute_domains: bool = True,
    mig_profile_classes: GpuProfile | None = None,
    example_extended_resource: str | None = None,
) -> list[Obj]:
    """The DeviceClasses the personality's chart creates.

    ``mig_profile_classes``: also one class per MIG profile of that GPU, each with its own
    extended resource name ``nvidia.com/mig-<profile>``, the device plugin's mixed-strategy name.
    NVIDIA's chart does not render these (dra-driver-nvidia-gpu@v0.4.1 deployments/helm/
    dra-driver-nvidia-gpu/templates/deviceclass-mig.yaml: one ``mig.nvidia.com`` class, no
    extendedResourceName); they are what dra-driver-nvidia-gpu#939 proposes an admin creates,
    shaped as demo/specs/extended-resources/mig-1g-12gb.yaml @ v0.4.1 shows (name
    ``mig-1g-12gb.gpu.nvidia.com``, selector on type and profile).
    ``example_extended_resource``: the example chart's ``deviceClass.extendedResourceName``.
    """
    if not p.is_nvidia:
        return [_class(p, p.driver, f"device.driver == '{p.driver}'", example_extended_resource)]
    d = p.driver
    out = [
        _class(p, "gpu.nvidia.com", _type_is(d, "gpu"), p.gpu_class_extended_resource),
        _class(p, "mig.nvidia.com", _type_is(d, "mig")),
    ]
    if p.has_vfio_class:
        out.append(_class(p, "vfio.gpu.nvidia.com", _type_is(d, "vfio")))
    if compute_domains:
        cd = COMPUTE_DOMAIN_DRIVER
        out.append(_class(p, "compute-domain-daemon.nvidia.com", _type_is(cd, "daemon")))
        out.append(
            _class(
                p,
                "compute-domain-default-channel.nvidia.com",
                _type_is(cd, "channel") + f" && device.attributes['{cd}'].id == 0",
            )
        )
    if mig_profile_classes is not None:
        for m in mig_profile_classes.mig_profiles:
            expr = _type_is(d, "mig") + f" && device.attributes['{d}'].profile == '{m.name}'"
            # '+' is not valid in an extended resource name; '1g.10gb+me' -> 'mig-1g.10gb-me'.
            ext = f"nvidia.com/mig-{m.name.replace('+', '-')}"
            out.append(_class(p, mig_profile_class_name(m.name), expr, ext))
    return out
