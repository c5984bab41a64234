"""GPU hardware profiles: the only module that holds hardware facts.

Sources (cite per table below):
- NVML names, brands, architectures, compute capabilities: NVIDIA/k8s-test-infra
  ``pkg/gpu/mocknvml/configs/mock-nvml-config-*.yaml`` (NVIDIA's mock NVML used by the
  NVIDIA DRA driver's CPU-only CI) and issue kubernetes-sigs/dra-driver-nvidia-gpu#719.
- MIG geometry: NVIDIA MIG User Guide, "Supported MIG Profiles" (Table 12 A100-SXM4-40GB,
  Table 10 H100 80GB, Table 5 B200), as transcribed into
  ``mock-nvml-config-{a100,h100.mig,b200.mig}.yaml`` @ NVIDIA/k8s-test-infra. Placements are
  in memory slices (8 on every 7-slice part).
Rows marked UNCONFIRMED were not found in a pinned source and are derived (see comment).

Unknowns (one place): MIG profile memory as real NVML reports it on H200/B200 (the rows carry
the mock's nominal sizes; H100's come from a real ``nvidia-smi mig -lgip``, cited there); total
memory of H200, A100 80GB, L4, T4 and B200 (nominal or commonly printed sizes, marked below).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from fake_driver.core.errors import FleetError, UnknownChoiceError

MIB = 1024 * 1024


@dataclass(frozen=True)
class MigProfile:
    """One GPU-instance profile as NVML reports it (``nvidia-smi mig -lgip``)."""

    name: str  # e.g. "1g.10gb" or "1g.10gb+me"
    gi_profile_id: int  # the ID -lgip prints (used in NVIDIA's device names)
    placement_starts: tuple[int, ...]  # memory-slice start of each possible placement
    placement_size: int  # memory slices per placement
    multiprocessors: int
    copy_engines: int
    decoders: int
    encoders: int
    jpeg_engines: int
    ofa_engines: int
    memory_mib: int


@dataclass(frozen=True)
class GpuProfile:
    key: str
    product_name: str  # NVML GetName()
    brand: str  # go-nvlib GetBrandAsString()
    architecture: str  # go-nvlib GetArchitectureAsString()
    compute_capability: str  # "major.minor" as NVML reports it
    memory_mib: int  # NVML memory.Total / MiB
    addressing_mode: str | None  # go-nvlib: HMM / ATS / None; None = NVML reports ""
    mig_profiles: tuple[MigProfile, ...] = ()
    # Ampere needs a GPU reset to toggle MIG mode, so DynamicMIG treats it differently
    # (NV cmd/gpu-kubelet-plugin supportsMIGModeToggle @ HEAD).
    mig_toggle_needs_reset: bool = False

    @property
    def mig_capable(self) -> bool:
        return bool(self.mig_profiles)

    @property
    def memory_slices(self) -> int:
        """Largest placement size seen, as NV's DynamicMIG counts memory slices."""
        return max((m.placement_starts[-1] + m.placement_size for m in self.mig_profiles), default=0)

    def mig_profile(self, name: str) -> MigProfile:
        for m in self.mig_profiles:
            if m.name == name:
                return m
        raise UnknownChoiceError(f"MIG profile for {self.key}", name, [m.name for m in self.mig_profiles])


def _mig(
    name: str,
    *,
    gi: int,
    at: tuple[int, ...],
    size: int,
    sms: int,
    ce: int,
    dec: int,
    jpeg: int,
    ofa: int,
    mib: int,
    enc: int = 0,
) -> MigProfile:
    """One ``nvidia-smi mig -lgip`` row, by keyword (gi = GI profile id, at = placement starts)."""
    return MigProfile(
        name=name,
        gi_profile_id=gi,
        placement_starts=at,
        placement_size=size,
        multiprocessors=sms,
        copy_engines=ce,
        decoders=dec,
        encoders=enc,
        jpeg_engines=jpeg,
        ofa_engines=ofa,
        memory_mib=mib,
    )


_ONE = (0, 1, 2, 3, 4, 5, 6)
_TWO = (0, 2, 4, 6)
_TWO3 = (0, 2, 4)
_FOUR = (0, 4)
_ZERO = (0,)

# H100 80GB HBM3 (132 SMs): GI profile IDs, placements and engines from
# mock-nvml-config-h100.mig.yaml @ c0148fc3 (MIG guide Table 10); SMs and memory from a real
# `nvidia-smi mig -lgip` capture (https://jbarrow.ai/field_notes/nvidia-mig/, 2026-06-11), whose
# GiB column (2 decimals) is 9.75, 19.62, 39.50, 79.25: 9984, 20096, 40448, 81152 MiB, in steps
# of 128 MiB. The mock's nominal 10240 MiB a slice would make go-nvlib name 1g.10gb "1g.20gb"
# (pkg/nvlib/device/mig_profile.go getMigMemorySizeGB).
_H100_MIG = (
    _mig("1g.10gb", gi=19, at=_ONE, size=1, sms=16, ce=1, dec=1, jpeg=1, ofa=0, mib=9984),
    _mig("1g.10gb+me", gi=20, at=_ONE, size=1, sms=16, ce=1, dec=1, jpeg=1, ofa=1, mib=9984),
    _mig("1g.20gb", gi=15, at=_TWO, size=2, sms=26, ce=1, dec=1, jpeg=1, ofa=0, mib=20096),
    _mig("2g.20gb", gi=14, at=_TWO3, size=2, sms=32, ce=2, dec=2, jpeg=2, ofa=0, mib=20096),
    _mig("3g.40gb", gi=9, at=_FOUR, size=4, sms=60, ce=3, dec=3, jpeg=3, ofa=0, mib=40448),
    _mig("4g.40gb", gi=5, at=_ZERO, size=4, sms=64, ce=4, dec=4, jpeg=4, ofa=0, mib=40448),
    _mig("7g.80gb", gi=0, at=_ZERO, size=8, sms=132, ce=8, dec=7, jpeg=7, ofa=1, mib=81152),
)

# H200 141GB: UNCONFIRMED. Profile names from the MIG guide's H200 table; engine counts copied
# from the H100 rows (same GH100 die); memory is the nominal size in the profile name.
_H200_MIG = (
    _mig("1g.18gb", gi=19, at=_ONE, size=1, sms=16, ce=1, dec=1, jpeg=1, ofa=0, mib=18432),
    _mig("1g.18gb+me", gi=20, at=_ONE, size=1, sms=16, ce=1, dec=1, jpeg=1, ofa=1, mib=18432),
    _mig("1g.35gb", gi=15, at=_TWO, size=2, sms=16, ce=1, dec=1, jpeg=1, ofa=0, mib=35840),
    _mig("2g.35gb", gi=14, at=_TWO3, size=2, sms=32, ce=2, dec=2, jpeg=2, ofa=0, mib=35840),
    _mig("3g.71gb", gi=9, at=_FOUR, size=4, sms=48, ce=3, dec=3, jpeg=3, ofa=0, mib=72704),
    _mig("4g.71gb", gi=5, at=_ZERO, size=4, sms=64, ce=4, dec=4, jpeg=4, ofa=0, mib=72704),
    _mig("7g.141gb", gi=0, at=_ZERO, size=8, sms=112, ce=8, dec=7, jpeg=7, ofa=1, mib=144384),
)

# A100-SXM4-40GB: mock-nvml-config-a100.yaml @ 187d6e57 (MIG guide Table 12), including the
# raw NVML memory sizes. GI profile IDs 19/20/15/14/9/5/0 follow the -lgip listing.
_A100_40_MIG = (
    _mig("1g.5gb", gi=19, at=_ONE, size=1, sms=14, ce=1, dec=0, jpeg=0, ofa=0, mib=4864),
    _mig("1g.5gb+me", gi=20, at=_ONE, size=1, sms=14, ce=1, dec=1, jpeg=1, ofa=1, mib=4864),
    _mig("1g.10gb", gi=15, at=_TWO, size=2, sms=14, ce=1, dec=1, jpeg=0, ofa=0, mib=9856),
    _mig("2g.10gb", gi=14, at=_TWO3, size=2, sms=28, ce=2, dec=1, jpeg=0, ofa=0, mib=9856),
    _mig("3g.20gb", gi=9, at=_FOUR, size=4, sms=42, ce=3, dec=2, jpeg=0, ofa=0, mib=19968),
    _mig("4g.20gb", gi=5, at=_ZERO, size=4, sms=56, ce=4, dec=2, jpeg=0, ofa=0, mib=19968),
    _mig("7g.40gb", gi=0, at=_ZERO, size=8, sms=98, ce=7, dec=5, jpeg=1, ofa=1, mib=40192),
)

# A100 80GB PCIe: UNCONFIRMED. Same engines as the 40GB part (MIG guide lists the same
# fractions); memory = the 40GB rows' next-larger size, i.e. doubled per slice.
_A100_80_MIG = (
    _mig("1g.10gb", gi=19, at=_ONE, size=1, sms=14, ce=1, dec=0, jpeg=0, ofa=0, mib=9856),
    _mig("1g.10gb+me", gi=20, at=_ONE, size=1, sms=14, ce=1, dec=1, jpeg=1, ofa=1, mib=9856),
    _mig("1g.20gb", gi=15, at=_TWO, size=2, sms=14, ce=1, dec=1, jpeg=0, ofa=0, mib=19968),
    _mig("2g.20gb", gi=14, at=_TWO3, size=2, sms=28, ce=2, dec=1, jpeg=0, ofa=0, mib=19968),
    _mig("3g.40gb", gi=9, at=_FOUR, size=4, sms=42, ce=3, dec=2, jpeg=0, ofa=0, mib=40192),
    _mig("4g.40gb", gi=5, at=_ZERO, size=4, sms=56, ce=4, dec=2, jpeg=0, ofa=0, mib=40192),
    _mig("7g.80gb", gi=0, at=_ZERO, size=8, sms=98, ce=7, dec=5, jpeg=1, ofa=1, mib=80896),
)

# B200: mock-nvml-config-b200.mig.yaml @ 790eaa3a (MIG guide Table 5). The mock stores NVML
# enum values, not -lgip IDs; the -lgip IDs below (same as Hopper) are UNCONFIRMED.
_B200_MIG = (
    _mig("1g.23gb", gi=19, at=_ONE, size=1, sms=18, ce=2, dec=1, jpeg=1, ofa=0, mib=23040),
    _mig("1g.23gb+me", gi=20, at=_ONE, size=1, sms=18, ce=2, dec=1, jpeg=1, ofa=1, mib=23040),
    _mig("1g.45gb", gi=15, at=_TWO, size=2, sms=18, ce=2, dec=1, jpeg=1, ofa=0, mib=46080),
    _mig("2g.45gb", gi=14, at=_TWO3, size=2, sms=36, ce=3, dec=1, jpeg=1, ofa=0, mib=46080),
    _mig("3g.90gb", gi=9, at=_FOUR, size=4, sms=54, ce=6, dec=1, jpeg=1, ofa=0, mib=92160),
    _mig("4g.90gb", gi=5, at=_ZERO, size=4, sms=72, ce=8, dec=1, jpeg=1, ofa=0, mib=92160),
    _mig("7g.180gb", gi=0, at=_ZERO, size=8, sms=126, ce=16, dec=1, jpeg=1, ofa=1, mib=184320),
)

# addressingMode: "HMM" on x86 hosts with the open kernel modules; seen on H100 (below),
# UNCONFIRMED for the other parts.
PROFILES: dict[str, GpuProfile] = {
    p.key: p
    for p in (
        # H100 80GB HBM3: memory total 81559 MiB (NVML memory.Total, what nvidia-smi prints)
        # and addressing mode HMM, from a real capture: NVIDIA/k8s-test-infra
        # tests/e2e/go/assertions/nvidiasmi/testdata/hardware/qx-h100.xml @ 63018b86.
        GpuProfile(
            "h100-80gb-hbm3", "NVIDIA H100 80GB HBM3", "Nvidia", "Hopper", "9.0", 81559, "HMM", _H100_MIG
        ),
        # H200: productName and total memory UNCONFIRMED (141 GB marketing size used).
        GpuProfile("h200-141gb-hbm3e", "NVIDIA H200", "Nvidia", "Hopper", "9.0", 144384, "HMM", _H200_MIG),
        # A100 80GB PCIe: productName and 80Gi memory as in issue #719.
        GpuProfile(
            "a100-80gb-pcie",
            "NVIDIA A100 80GB PCIe",
            "Nvidia",
            "Ampere",
            "8.0",
            81920,
            "HMM",
            _A100_80_MIG,
            mig_toggle_needs_reset=True,
        ),
        GpuProfile(
            "a100-40gb",
            "NVIDIA A100-SXM4-40GB",
            "Nvidia",
            "Ampere",
            "8.0",
            40960,
            "HMM",
            _A100_40_MIG,
            mig_toggle_needs_reset=True,
        ),
        # L4 / T4: no MIG. Memory sizes and T4's brand UNCONFIRMED (nvidia-smi commonly shows
        # 23034 MiB / 15360 MiB).
        GpuProfile("l4", "NVIDIA L4", "Nvidia", "Ada Lovelace", "8.9", 23034, "HMM"),
        GpuProfile("t4", "Tesla T4", "Nvidia", "Turing", "7.5", 15360, "HMM"),
        # B200: 180 GiB board per MIG guide Table 5; compute capability 10.0.
        GpuProfile("b200", "NVIDIA B200", "Nvidia", "Blackwell", "10.0", 184320, "HMM", _B200_MIG),
    )
}


def get_profile(key: str) -> GpuProfile:
    try:
        return PROFILES[key]
    except KeyError:
        raise UnknownChoiceError("GPU profile", key, sorted(PROFILES)) from None


# --- per-node physical layout (also hardware facts) -------------------------------------

# Bus IDs of a DGX H100 board, lower-case with 4-digit domain as go-nvlib GetPCIBusID()
# returns them; the PCIe root is the first element under /sys/devices (one root complex
# per GPU here, which is a simplification).
_BUS_NUMBERS = (0x1B, 0x43, 0x52, 0x61, 0x9D, 0xC3, 0xD1, 0xDF)


def pci_bus_id(index: int) -> str:
    # Beyond eight GPUs, step the bus number past each table entry (no collisions below 40).
    bus = _BUS_NUMBERS[index % len(_BUS_NUMBERS)] + index // len(_BUS_NUMBERS)
    return f"0000:{bus:02x}:00.0"


def pcie_root(index: int) -> str:
    bus = int(pci_bus_id(index).split(":")[1], 16)
    return f"pci0000:{max(bus - 1, 0):02x}"


_NS = uuid.UUID("6f1c3f52-8a51-4f0e-9d3e-1d0c5a0f7a10")


def gpu_uuid(node: str, index: int) -> str:
    """Deterministic, cluster-unique NVML-style UUID (restart-safe republishing)."""
    return f"GPU-{uuid.uuid5(_NS, f'{node}/{index}')}"


def mig_uuid(node: str, index: int, device_name: str) -> str:
    return f"MIG-{uuid.uuid5(_NS, f'{node}/{index}/{device_name}')}"


@dataclass(frozen=True)
class MigPlacement:
    profile: MigProfile
    start: int


def place_layout(profile: GpuProfile, layout: list[str], where: str = "") -> tuple[MigPlacement, ...]:
    """Place MIG instances like mig-parted would: any non-overlapping valid placements.

    Backtracking over at most 7 instances, larger profiles first.
    """
    try:
        wanted = sorted((profile.mig_profile(n) for n in layout), key=lambda m: -m.placement_size)
    except UnknownChoiceError as e:
        raise UnknownChoiceError(e.what, e.value, e.choices, where) from None
    used = [False] * profile.memory_slices
    out: list[MigPlacement] = []

    def fits(m: MigProfile, start: int) -> bool:
        return not any(used[start : start + m.placement_size])

    def mark(m: MigProfile, start: int, v: bool) -> None:
        for s in range(start, start + m.placement_size):
            used[s] = v

    def solve(k: int) -> bool:
        if k == len(wanted):
            return True
        m = wanted[k]
        for start in m.placement_starts:
            if fits(m, start):
                mark(m, start, True)
                out.append(MigPlacement(m, start))
                if solve(k + 1):
                    return True
                out.pop()
                mark(m, start, False)
        return False

    if not solve(0):
        raise FleetError(f"{where}: MIG layout {layout} does not fit on one {profile.key}")
    return tuple(sorted(out, key=lambda p: p.start))
