"""The host state real nodes change, claimed per cluster and given back on teardown.

A real node changes more than its own files: the kubelet writes host sysctls at every start
(pkg/kubelet/cm/container_manager_linux.go setupKernelTunables) and adds iptables chains
(pkg/kubelet/kubelet_network_linux.go: KUBE-FIREWALL, KUBE-KUBELET-CANARY, KUBE-IPTABLES-HINT);
CNI adds links; cgroups outlive their processes. So each cluster claims a slot under
/run/dra-harness/realnodes (its index gives it addresses, bridge and cgroup names no other
cluster uses), the first slot records the sysctls and iptables chains as they were, and the
last one to leave restores them. Processes of a node are tracked by cgroup (the shims
containerd starts leave its process group), so teardown kills by cgroup, then removes it.

A cluster whose owner was SIGKILLed cannot clean up: the next claim (any cluster start) reaps
slots whose owner is gone, `reap_stale()`.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from harness.clusters.host.identity import ProcessIdentity
from harness.core.errors import HarnessError
from harness.kit.waits import wait_for

STATE_ROOT = Path("/run/dra-harness/realnodes")
CGROUP_ROOT = Path("/sys/fs/cgroup")
V1_HIERARCHIES = ("cpu", "cpuacct", "cpuset", "memory", "devices", "freezer", "blkio", "pids", "systemd")
# The kubelet also mirrors its cgroups into the hybrid layout's v2 tree.
ALL_HIERARCHIES = (*V1_HIERARCHIES, "unified")
# What the kubelet's setupKernelTunables and the CNI bridge plugin write.
SYSCTLS = (
    "vm/overcommit_memory",
    "vm/panic_on_oom",
    "kernel/panic",
    "kernel/panic_on_oops",
    "kernel/keys/root_maxkeys",
    "kernel/keys/root_maxbytes",
    "net/ipv4/ip_forward",
    *(f"fs/inotify/{k}" for k in ("max_user_instances", "max_user_watches")),
)
# Each kubelet and containerd opens dozens of inotify instances (fsnotify watchers: certificates,
# plugin and pod-resources sockets, cAdvisor, CRI log rotation); with other clusters' control
# planes beside them the default 128 per user runs out ("too many open files"). Raised while any
# slot is claimed, given back with the other sysctls by the last slot.
INOTIFY_FLOOR = {"fs/inotify/max_user_instances": 8192, "fs/inotify/max_user_watches": 524288}
CHAIN_PREFIXES = ("KUBE-", "CNI-")
# Paths the kubelet, CNI, CDI and real drivers hard-code: each node bind-mounts its own directory
# over them in its mount namespace (realnodes.config NodeLayout.binds), so they must exist on the
# host (created here if absent, removed by the last).
KUBELET_ROOT = "/var/lib/kubelet"  # the kubelet's --root-dir default
# The CDI spec directories containerd reads by default (tags.cncf.io/container-device-interface
# pkg/cdi DefaultSpecDirs): static specs, and dynamic ones such as drivers write at Prepare.
STATIC_CDI_DIR, CDI_DIR = "/etc/cdi", "/var/run/cdi"
MOUNTPOINTS = (KUBELET_ROOT, "/var/log/containers", "/var/lib/cni", CDI_DIR, STATIC_CDI_DIR)
IPTABLES = ("iptables", "ip6tables")
MAX_CLUSTERS = 60


def missing_requirement() -> str | None:
    """One line naming what this host lacks for real nodes, or None."""
    if os.geteuid() != 0:
        return "real nodes need root (mount namespaces, cgroups, bridges)"
    for tool in ("unshare", "nsenter", "ip", "iptables"):
        if shutil.which(tool) is None:
            return f"real nodes need `{tool}` on PATH (make nodeparts)"
    absent = [h for h in V1_HIERARCHIES if not (CGROUP_ROOT / h / "cgroup.procs").exists()]
    if absent:
        return f"real nodes need cgroup v1 hierarchies; missing: {', '.join(absent)}"
    return None


def sysctl_values() -> dict[str, str]:
    return {key: (Path("/proc/sys") / key).read_text().strip() for key in SYSCTLS}


def _write_sysctls(values: dict[str, str]) -> None:
    for key, value in values.items():
        with contextlib.suppress(OSError):
            (Path("/proc/sys") / key).write_text(value)


def _raise_inotify_limits() -> None:
    current = sysctl_values()
    _write_sysctls({k: str(v) for k, v in INOTIFY_FLOOR.items() if int(current[k]) < v})


def iptables_chains() -> dict[str, list[str]]:
    """'iptables/filter' -> chain names, for both address families."""
    out: dict[str, list[str]] = {}
    for tool in IPTABLES:
        text = subprocess.run([f"{tool}-save"], capture_output=True, text=True, check=False).stdout
        table = ""
        for line in text.splitlines():
            if line.startswith("*"):
                table = line[1:]
                out.setdefault(f"{tool}/{table}", [])
            elif line.startswith(":"):
                out[f"{tool}/{table}"].append(line[1:].split()[0])
    return out


def _remove_new_chains(before: dict[str, list[str]]) -> None:
    """Delete the KUBE-*/CNI-* chains that were not there before, and every jump to them."""
    for tool in IPTABLES:
        text = subprocess.run([f"{tool}-save"], capture_output=True, text=True, check=False).stdout
        table, rules, new = "", list[str](), set[str]()
        for line in [*text.splitlines(), "*END"]:
            if line.startswith("*"):
                _drop_chains(tool, table, rules, new)
                table, rules, new = line[1:], [], set()
            elif line.startswith(":"):
                chain = line[1:].split()[0]
                if chain.startswith(CHAIN_PREFIXES) and chain not in before.get(f"{tool}/{table}", []):
                    new.add(chain)
            elif line.startswith("-A "):
                rules.append(line)


def _drop_chains(tool: str, table: str, rules: list[str], new: set[str]) -> None:
    if not new:
        return
    for rule in rules:
        args = shlex.split(rule)
        target = args[args.index("-j") + 1] if "-j" in args else ""
        if target in new and args[1] not in new:
            subprocess.run([tool, "-t", table, "-D", *args[1:]], capture_output=True, check=False)
    for op in ("-F", "-X"):
        for chain in new:
            subprocess.run([tool, "-t", table, op, chain], capture_output=True, check=False)


# -- cgroups ---------------------------------------------------------------------------


def make_cgroup(path: str) -> None:
    """`path` (like /dra-harness-c1/node-0) in every v1 hierarchy; cpuset needs cpus and mems
    before a task may join, so they are copied down from the parent."""
    for h in V1_HIERARCHIES:
        base = CGROUP_ROOT / h
        current = base
        for part in path.strip("/").split("/"):
            current = current / part
            current.mkdir(exist_ok=True)
            if h == "cpuset":
                for knob in ("cpuset.cpus", "cpuset.mems"):
                    if not (current / knob).read_text().strip():
                        (current / knob).write_text((current.parent / knob).read_text())


def cgroup_procs(path: str) -> list[int]:
    pids: set[int] = set()
    for h in ALL_HIERARCHIES:
        top = CGROUP_ROOT / h / path.strip("/")
        for procs in top.rglob("cgroup.procs") if top.is_dir() else ():
            with contextlib.suppress(OSError):
                pids.update(int(p) for p in procs.read_text().split())
    return sorted(pids)


def remove_cgroup(path: str) -> None:
    """Kill every process under `path` (containers, shims, anything left), then remove it."""

    def kill_all() -> list[int]:
        pids = cgroup_procs(path)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        return pids

    wait_for(
        kill_all,
        lambda pids: not pids,
        timeout=30,
        describe=f"no process left in cgroup {path}",
        interval=0.1,
    )
    for h in ALL_HIERARCHIES:
        top = CGROUP_ROOT / h / path.strip("/")
        if not top.is_dir():
            continue
        for d in sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
            with contextlib.suppress(OSError):
                d.rmdir()
        with contextlib.suppress(OSError):
            top.rmdir()


# -- links -----------------------------------------------------------------------------


def links(prefix: str) -> list[str]:
    text = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True, check=False).stdout
    names = [m.group(1) for m in re.finditer(r"^\d+: ([^:@]+)", text, re.MULTILINE)]
    return [n for n in names if _under(n, prefix)]


def _under(name: str, prefix: str) -> bool:
    """drah1 owns drah1x and drah1n2, not drah10x: a prefix ending in a digit needs a boundary."""
    if not name.startswith(prefix):
        return False
    rest = name[len(prefix) :]
    return not (rest and prefix[-1:].isdigit() and rest[0].isdigit())


def delete_links(prefix: str) -> None:
    for name in links(prefix):
        subprocess.run(["ip", "link", "delete", name], capture_output=True, check=False)


def ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise HarnessError(f"ip {' '.join(args)}: {done.stderr.strip()}")


# -- slots -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Slot:
    """One cluster's share of the host: its index names everything it creates."""

    index: int

    @property
    def tag(self) -> str:
        return f"c{self.index}"

    @property
    def cgroup(self) -> str:
        return f"/dra-harness-{self.tag}"

    @property
    def link_prefix(self) -> str:
        return f"drah{self.index}"  # + "x" (node addresses) or "n<i>" (a node's CNI bridge)

    @property
    def state_dir(self) -> Path:
        """Sockets and containerd state: short paths (a unix socket path has 108 bytes)."""
        return STATE_ROOT / self.tag

    @property
    def record(self) -> Path:
        return STATE_ROOT / f"{self.tag}.json"


def _missing_dirs(path: Path) -> list[Path]:
    missing = []
    while not path.exists():
        missing.append(path)
        path = path.parent
    return missing


@contextlib.contextmanager
def _locked() -> Iterator[None]:
    STATE_ROOT.mkdir(parents=True, exist_ok=True)
    with (STATE_ROOT / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _slots() -> list[Slot]:
    return [Slot(int(p.stem[1:])) for p in STATE_ROOT.glob("c*.json") if p.stem[1:].isdigit()]


def _record_created(created: list[str]) -> None:
    path = STATE_ROOT / "baseline.json"
    baseline = json.loads(path.read_text()) if path.exists() else None
    if baseline is not None:
        baseline["created"] = [*baseline["created"], *created]
        path.write_text(json.dumps(baseline))


def claim() -> Slot:
    """A free slot for this process; the first slot on the host records the host's state."""
    with _locked():
        _reap_unlocked()
        taken = {s.index for s in _slots()}
        free = next((i for i in range(1, MAX_CLUSTERS + 1) if i not in taken), None)
        if free is None:
            raise HarnessError(f"{MAX_CLUSTERS} clusters with real nodes are running on this host")
        created = [str(d) for m in MOUNTPOINTS for d in _missing_dirs(Path(m))]
        if not taken:
            baseline = {"sysctls": sysctl_values(), "chains": iptables_chains(), "created": created}
            (STATE_ROOT / "baseline.json").write_text(json.dumps(baseline))
        elif created:  # a slot of an older harness is running: its baseline lacks these
            _record_created(created)
        for m in MOUNTPOINTS:
            Path(m).mkdir(parents=True, exist_ok=True)
        _raise_inotify_limits()
        slot = Slot(free)
        owner = ProcessIdentity.of(os.getpid())
        slot.record.write_text(json.dumps({"owner": owner.to_json()}))
        return slot


def release(slot: Slot) -> None:
    """Kill the slot's processes, remove its cgroups and links; the last slot restores the host."""
    with _locked():
        _release_unlocked(slot)


def _release_unlocked(slot: Slot) -> None:
    remove_cgroup(slot.cgroup)
    delete_links(slot.link_prefix)
    shutil.rmtree(slot.state_dir, ignore_errors=True)
    slot.record.unlink(missing_ok=True)
    baseline = STATE_ROOT / "baseline.json"
    if not _slots() and baseline.exists():
        data = json.loads(baseline.read_text())
        _write_sysctls(data["sysctls"])
        _remove_new_chains(data["chains"])
        for d in sorted(data["created"], key=len, reverse=True):
            with contextlib.suppress(OSError):
                Path(d).rmdir()
        baseline.unlink()


def _reap_unlocked() -> list[Slot]:
    reaped = []
    for slot in _slots():
        with contextlib.suppress(OSError, ValueError):
            owner = ProcessIdentity.from_json(json.loads(slot.record.read_text()).get("owner"))
            if owner is None or not owner.alive():
                _release_unlocked(slot)
                reaped.append(slot)
    return reaped


def slot_owners() -> dict[str, ProcessIdentity | None]:
    """Each claimed slot's file name and its owner (None if unreadable). Read under the lock:
    a release in progress (its record gone, the host not yet restored) is waited for."""
    owners: dict[str, ProcessIdentity | None] = {}
    with _locked():
        for slot in _slots():
            owner = None
            with contextlib.suppress(OSError, ValueError):
                owner = ProcessIdentity.from_json(json.loads(slot.record.read_text()).get("owner"))
            owners[slot.record.name] = owner
    return owners


def reap_stale() -> list[Slot]:
    """Give back the slots of owners that died without teardown (SIGKILL)."""
    with _locked():
        return _reap_unlocked()


def _our_processes() -> list[str]:
    """Processes of any real node: in one of our cgroups (containers) or naming our paths;
    not zombies (dead, holding nothing, until their reaper gets to them)."""
    found = []
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        with contextlib.suppress(OSError):
            cgroups = Path(f"/proc/{pid}/cgroup").read_text()
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            dead = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in "ZX"
            if not dead and ("/dra-harness-c" in cgroups or str(STATE_ROOT) in cmdline):
                found.append(f"{pid} {cmdline.strip()}")
    return found


def snapshot() -> dict[str, object]:
    """Everything real nodes may leave on the host, for before/after comparisons; taken under
    the slots' lock, so never halfway through a claim or a release."""
    with _locked():
        return _snapshot_unlocked()


def _snapshot_unlocked() -> dict[str, object]:
    mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    return {
        "processes": _our_processes(),
        "mounts": [m for m in mounts if "dra-harness" in m or "kubelet" in m or "/cni" in m],
        "cgroups": sorted(str(p) for h in ALL_HIERARCHIES for p in (CGROUP_ROOT / h).glob("dra-harness-*")),
        "links": links("drah"),
        "chains": {
            k: sorted(c for c in v if c.startswith(CHAIN_PREFIXES)) for k, v in iptables_chains().items()
        },
        "sysctls": sysctl_values(),
        "mountpoints": {m: Path(m).exists() for m in MOUNTPOINTS},
        "slots": sorted(p.name for p in STATE_ROOT.glob("c*")) if STATE_ROOT.exists() else [],
    }
