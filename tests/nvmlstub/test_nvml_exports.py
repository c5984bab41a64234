"""The NVML stand-in (nvmlstub/, built as the nvidia driver's root part) exports every NVML C
function NVIDIA's kubelet plugin can call, at each release versions.toml pins (v0.4.1 with
go-nvml v0.13.1-0's nvml.h, v0.5.0 with v0.13.3-1's), as read from upstream source
(tests/support/nvml_calls.py); SONAME libnvidia-ml.so.1, the name the plugin dlopen()s.
"""

from __future__ import annotations

import subprocess

import pytest

from harness.controlplane.driverparts import driver_built, not_built_line
from harness.controlplane.nvidiaparts import NVML_SONAME, root_parts_built
from harness.core.drivers import load_drivers
from tests.support.nvml_calls import plugin_nvml_needs

SPEC = load_drivers()["nvidia"]


def _exports(library: str) -> set[str]:
    done = subprocess.run(["nm", "-D", "--defined-only", library], capture_output=True, text=True, check=True)
    return {line.split()[-1] for line in done.stdout.splitlines() if " T " in line}


def _soname(library: str) -> str:
    done = subprocess.run(["readelf", "-d", library], capture_output=True, text=True, check=True)
    return next(line.split("[")[1].rstrip("]") for line in done.stdout.splitlines() if "(SONAME)" in line)


@pytest.mark.parametrize("version", SPEC.versions)
def test_the_stand_in_exports_every_nvml_function_the_plugin_can_call(version: str) -> None:
    parts = root_parts_built(SPEC.root_for(version))
    if parts is None or driver_built(SPEC, version) is None:  # the plugin's modules, read below
        pytest.skip(not_built_line(SPEC, version))
    needs, files = plugin_nvml_needs(version)
    exported = _exports(str(parts.library))
    missing = [" | ".join(sorted(alternatives)) for alternatives in needs if not alternatives & exported]
    assert missing == [], f"{len(missing)} of {len(needs)} NVML functions not exported"
    # What the source reading found (a floor: it reads the plugin, go-nvlib and nvcdi).
    assert files > 200, files
    assert len(needs) >= 50, len(needs)
    assert {"nvmlInit_v2", "nvmlDeviceGetCount_v2", "nvmlDeviceGetHandleByUUID", "nvmlErrorString"} <= (
        exported
    )
    assert _soname(str(parts.library)) == NVML_SONAME
