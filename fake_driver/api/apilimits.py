"""Kubernetes resource.k8s.io API facts per server minor (not driver facts).

Confirmed against k8s.io/api resource/v1/types.go at v0.34.4, v0.35.4, v0.36.3, v0.37.2 and
kubernetes pkg/apis/resource/validation/validation.go at v1.34.4 / v1.35.4; the limits below
are unchanged at v0.38.0-beta.0 (resource/v1/types.go lines 340-369 and 813). The driver
writes resource.k8s.io/v1 only, which every minor here serves (1.38 no longer serves v1beta1).
"""

from __future__ import annotations

import re

from fake_driver.core.errors import FakeDriverError

Minor = tuple[int, int]

# ResourceSliceMaxDevices (all minors).
MAX_DEVICES_PER_SLICE = 128
# ResourceSliceMaxDevicesWithTaintsOrConsumesCounters (v0.35; renamed ...WithAdvancedFeatures
# in v0.36): applies when any device has taints or consumesCounters. v0.34 has no such
# limit but caps device counter consumptions per slice instead (below).
MAX_DEVICES_PER_SLICE_ADVANCED = 64
ADVANCED_DEVICE_LIMIT_SINCE: Minor = (1, 35)
# v0.34: ResourceSliceMaxSharedCounters (sum over all sets in one slice) and
# ResourceSliceMaxDeviceCountersPerSlice; v0.35+: ResourceSliceMaxCounterSets per slice and
# ResourceSliceMaxCountersPerCounterSet.
MAX_SHARED_COUNTERS_PER_SLICE_134 = 32
MAX_DEVICE_COUNTERS_PER_SLICE_134 = 1024
MAX_COUNTER_SETS_PER_SLICE = 8
MAX_COUNTERS_PER_COUNTER_SET = 32
# ResourceSliceMaxAttributesAndCapacitiesPerDevice.
MAX_ATTRIBUTES_AND_CAPACITIES = 32
# From 1.35 "only one of `sharedCounters` or `devices` is allowed" per slice, and counter sets
# are looked up in the whole pool; before, consumesCounters had to name a set in the same slice.
SPLIT_COUNTERS_SINCE: Minor = (1, 35)
# DeviceTaintEffectNone exists from v0.35.
TAINT_EFFECT_NONE_SINCE: Minor = (1, 35)
# allowMultipleAllocations / capacity.requestPolicy (DRAConsumableCapacity) exist from v0.34
# in v1, v1beta2 and v1beta1.
CONSUMABLE_CAPACITY_SINCE: Minor = (1, 34)
# resource.k8s.io/v1 is served from 1.34.
V1_SINCE: Minor = (1, 34)

SUPPORTED_MINORS: tuple[Minor, ...] = ((1, 34), (1, 35), (1, 36), (1, 37), (1, 38))

# Fields the API server silently drops when a feature gate is off, with that gate: used to
# turn "the server ignored my field" into an error that names field and gate.
GATED_DEVICE_FIELDS: dict[str, str] = {
    "consumesCounters": "DRAPartitionableDevices",
    "taints": "DRADeviceTaints",
    "allowMultipleAllocations": "DRAConsumableCapacity",
    "bindingConditions": "DRADeviceBindingConditions",
}
GATED_SPEC_FIELDS: dict[str, str] = {"sharedCounters": "DRAPartitionableDevices"}

_MINOR_RE = re.compile(r"^v?(\d+)\.(\d+)(?:\.\d+)?(?:[-+].*)?$")


def parse_minor(text: str) -> Minor:
    """'1.35', 'v1.35.4' or '1.35+' -> (1, 35)."""
    m = _MINOR_RE.match(text.strip().rstrip("+"))
    if not m:
        raise FakeDriverError(f"invalid Kubernetes minor {text!r}; expected e.g. 1.35")
    return int(m.group(1)), int(m.group(2))


def format_minor(minor: Minor) -> str:
    return f"{minor[0]}.{minor[1]}"
