"""The NVML stand-in's event API and its faults (nvmlstub/events.go, faults.go), called through
its C ABI as go-nvml calls it, in a child process (its Go runtime stays out of this one): an
Xid on a full GPU and on a static MIG device, an Xid for a GPU whose events were not
registered, an unmonitored GPU, a lost GPU, a malformed control line; and the harness's side
(harness/clusters/realnodes/nvidiafaults.py): device names, bad faults in one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harness.clusters.realnodes import nvidiafaults as nf
from harness.clusters.realnodes.nvidiamig import parse_mig
from harness.clusters.realnodes.nvidiaroot import NVML_CONFIG, nvml_config
from harness.clusters.realnodes.pools import RealNodes
from harness.controlplane.nvidiaparts import root_parts_built
from harness.core.drivers import load_drivers
from harness.core.errors import HarnessError

SPEC = load_drivers()["nvidia"]
PROFILE = "a100-80gb-pcie"
MIG = {"mode": "static", "layout": ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"], "gpus": [0]}
NODE = "faulty-0"

# Each step: a control line to append first ("" = none), then one call; the script prints
# each call's nvmlReturn_t and, for an event, its fields.
_SCRIPT = """
import ctypes, json, sys
lib = ctypes.CDLL(sys.argv[1])
root = sys.argv[2]
class Data(ctypes.Structure):
    _fields_ = [("device", ctypes.c_void_p), ("eventType", ctypes.c_ulonglong),
                ("eventData", ctypes.c_ulonglong), ("gi", ctypes.c_uint), ("ci", ctypes.c_uint)]
out = {"init": lib.nvmlInit_v2()}
h = [ctypes.c_void_p(), ctypes.c_void_p()]
for i in range(2):
    lib.nvmlDeviceGetHandleByIndex_v2(i, ctypes.byref(h[i]))
s = ctypes.c_void_p()
out["create"] = lib.nvmlEventSetCreate(ctypes.byref(s))
mask = ctypes.c_ulonglong()
out["supported"] = [lib.nvmlDeviceGetSupportedEventTypes(h[0], ctypes.byref(mask)), mask.value]
def append(line):
    with open(root + "/nvml-faults.txt", "a") as f:
        f.write(line + "\\n")
steps = json.loads(sys.argv[3])
out["steps"] = []
for line, call in steps:
    if line:
        append(line)
    if call.startswith("register"):
        i = int(call[-1])
        out["steps"].append([lib.nvmlDeviceRegisterEvents(h[i], ctypes.c_ulonglong(11), s)])
        continue
    d = Data()
    ret = getattr(lib, call)(s, ctypes.byref(d), 200)
    device = [i for i in range(2) if h[i].value == d.device]
    out["steps"].append([ret] + ([device, d.eventType, d.eventData, d.gi, d.ci] if ret == 0 else []))
out["free"] = lib.nvmlEventSetFree(s)
out["free again"] = lib.nvmlEventSetFree(s)
print(json.dumps(out))
"""


def _config() -> dict[str, Any]:
    placed = parse_mig(PROFILE, 2, MIG, f"node {NODE}")
    return nvml_config(NODE, PROFILE, 2, "580.0", "13.0", placed)


def _run(root: Path, steps: list[tuple[str, str]]) -> tuple[dict[str, Any], str]:
    parts = root_parts_built(SPEC.root)
    if parts is None:
        pytest.skip("the NVML stand-in is not built: run `make drivers`")
    (root / NVML_CONFIG).write_text(json.dumps(_config()))
    env = {"DRA_HARNESS_NVML_CONFIG": str(root / NVML_CONFIG), "PATH": "/usr/bin:/bin"}
    argv = [sys.executable, "-c", _SCRIPT, str(parts.library), str(root), json.dumps(steps)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), done.stderr


def test_the_stand_in_serves_faults_as_nvml_events(tmp_path: Path) -> None:
    config = _config()
    uuids = nf.device_uuids(config)
    gpu0, gpu1 = config["devices"][0]["uuid"], config["devices"][1]["uuid"]
    mig = uuids["gpu-0-mig-1g10gb-19-3"]
    [mig_gi] = [m["gi"] for m in config["devices"][0]["migDevices"] if m["uuid"] == mig]
    wait = "nvmlEventSetWait_v2"
    steps = [
        ("", "register0"),
        (f"unmonitored {gpu1}", "register1"),  # NOT_SUPPORTED: the plugin's "too old" path
        ("", wait),  # the unmonitored line is no event: the wait times out
        (f"xid {mig} 79", wait),
        (f"xid {gpu1} 48", wait),  # not registered: not delivered
        ("xid GPU-nonsense", wait),  # malformed: UNKNOWN, one line
        (f"gpu-lost {gpu0}", "nvmlEventSetWait"),  # v1 binding: the same events
        (f"xid {gpu0} 13", wait),
        ("", wait),
        (f"recovered {gpu1}", "register1"),
    ]
    out, stderr = _run(tmp_path, steps)
    full = 0xFFFFFFFF
    assert (out["init"], out["create"]) == (0, 0)
    assert out["supported"] == [0, 0x8 | 0x1 | 0x2]
    assert out["steps"] == [
        [0],
        [3],
        [10],
        [0, [0], 0x8, 79, mig_gi, 0],
        [10],
        [999],
        [15],
        [0, [0], 0x8, 13, full, full],
        [10],
        [0],
    ]
    assert (out["free"], out["free again"]) == (0, 2)
    line = 'nvml-faults.txt line 4 "xid GPU-nonsense": xid takes 2 word(s) after it, not 1'
    assert nf.stub_log(tmp_path) == [f"libnvidia-ml.so.1 (dra-harness stand-in): {line}"]
    assert stderr.count("dra-harness stand-in") == 1


def test_a_set_sees_only_faults_written_after_it_was_created(tmp_path: Path) -> None:
    gpu0 = _config()["devices"][0]["uuid"]
    (tmp_path / nf.FAULTS_FILE).write_text(f"xid {gpu0} 79\ngpu-lost {gpu0}\n")
    out, _ = _run(tmp_path, [("", "register0"), ("", "nvmlEventSetWait_v2")])
    assert out["steps"] == [[0], [10]]


def test_device_names_are_the_plugins() -> None:
    config = _config()
    names = sorted(nf.device_uuids(config))
    assert names == [
        "gpu-0-mig-1g10gb-19-2",
        "gpu-0-mig-1g10gb-19-3",
        "gpu-0-mig-2g20gb-14-0",
        "gpu-0-mig-3g40gb-9-4",
        "gpu-1",
    ]
    mig = nf.device_uuids(config)["gpu-0-mig-3g40gb-9-4"]
    gpu0 = config["devices"][0]["uuid"]
    assert nf.fault_line(NODE, config, "xid", "gpu-0-mig-3g40gb-9-4", 79) == f"xid {mig} 79\n"
    assert nf.fault_line(NODE, config, "unmonitored", "gpu-0-mig-3g40gb-9-4") == f"unmonitored {gpu0}\n"


@pytest.mark.parametrize(
    ("fault", "device", "code", "message"),
    [
        (
            "xid",
            "gpu-7",
            79,
            "node faulty-0 has no device gpu-7 (its devices: gpu-0-mig-1g10gb-19-2, gpu-0-mig-1g10gb-19-3, "
            "gpu-0-mig-2g20gb-14-0, gpu-0-mig-3g40gb-9-4, gpu-1)",
        ),
        ("melt", "gpu-1", None, "unknown fault 'melt': one of xid, gpu-lost, unmonitored, recovered"),
        ("xid", "gpu-1", None, "an Xid code goes with the xid fault only (fault xid, code None)"),
        ("gpu-lost", "gpu-1", 79, "an Xid code goes with the xid fault only (fault gpu-lost, code 79)"),
        ("xid", "gpu-1", -1, "Xid code -1 is not an unsigned 64-bit number"),
    ],
)
def test_a_bad_fault_is_one_line(fault: str, device: str, code: int | None, message: str) -> None:
    with pytest.raises(HarnessError) as err:
        nf.fault_line(NODE, _config(), fault, device, code)
    assert str(err.value) == message


def test_the_taints_the_plugin_publishes() -> None:
    fatal = {"key": "gpu.nvidia.com/xid", "value": "79", "effect": "NoSchedule"}
    assert nf.expected_taint("xid", 79) == fatal
    assert nf.expected_taint("xid", 13) == {"key": "gpu.nvidia.com/xid", "value": "13", "effect": "None"}
    assert nf.expected_taint("gpu-lost") == {"key": "gpu.nvidia.com/gpu-lost", "effect": "NoSchedule"}
    assert nf.expected_taint("unmonitored") == {"key": "gpu.nvidia.com/unmonitored", "effect": "None"}


def test_a_fault_for_a_node_that_is_not_there_is_one_line(tmp_path: Path) -> None:
    real = RealNodes([], {}, tmp_path, {})
    with pytest.raises(HarnessError) as err:
        nf.inject_on(real, "ghost-0", "xid", "gpu-0", 79)
    assert str(err.value) == "no real node ghost-0 here (real nodes: )"
