"""The parts a command needs built, built in two lanes side by side, timed, and checked
against the budget versions.toml keeps for each (`[budget]`).

Go builds run in two lanes side by side: one build leaves a core idle while it links and in the
narrow parts of its package graph, and the other lane's build fills it. apt and debootstrap
wait on the network and the disk, so they run in a third lane beside both. Each
part is timed here, once, whoever builds it: a part that was built already takes no time and
says "cached". The times of real builds go to builds.jsonl in the cache, where `versions`,
`cluster up` and the fresh-machine run read how long a build takes on this machine.

A part of a set without a budget in versions.toml is refused before anything is built: the
cold build list cannot grow without its time being measured (`make test-fresh` measures it).
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from harness.controlplane.build import (
    Progress,
    _stderr,
    controlplane_built,
    ensure_controlplane,
    ensure_kwok,
    kwok_path,
)
from harness.controlplane.buildlog import log_build, measured_builds
from harness.controlplane.driverparts import driver_built, ensure_driver, part_name
from harness.controlplane.hostpackages import apt_install, apt_missing, host_packages
from harness.controlplane.mutantparts import ensure_mutant, mutant_built, mutant_names
from harness.controlplane.mutantparts import part_name as mutant_part_name
from harness.controlplane.nodeparts import (
    containerd_built,
    ensure_busybox,
    ensure_containerd,
    ensure_kubelet,
    ensure_pause,
    kubelet_built,
)
from harness.controlplane.schedperf import ensure_schedperf, schedperf_dir
from harness.controlplane.tools import ensure_tool, go_install_tool, named_tool_path
from harness.core.drivers import DriverSpec, driver_ref, load_drivers
from harness.core.errors import HarnessError
from harness.core.versions import REPO_ROOT, Matrix, Minor

GO_A, GO_B, IO = "go-a", "go-b", "io"
LANES = (GO_A, GO_B, IO)
REUSED_SECONDS = 5.0  # no Go build, apt install or debootstrap of a part takes less


@dataclass(frozen=True)
class Part:
    """One thing to build: `build` does it (a no-op when done already), `built` says
    whether it is done without building (None: cannot tell cheaply)."""

    name: str
    lane: str
    build: Callable[[Progress], object]
    built: Callable[[], bool] | None = None
    after: tuple[str, ...] = ()


@dataclass(frozen=True)
class Outcome:
    part: str
    lane: str
    seconds: float
    cached: bool
    error: str = ""


def _go_install_kind(matrix: Matrix, progress: Progress) -> Path:
    """kind itself into the venv's bin (where the kind provider finds it) at versions.toml's release."""
    bindir = REPO_ROOT / ".venv" / "bin"
    if _kind_version(bindir) == matrix.kind_version:
        return bindir / "kind"
    progress(f"go install sigs.k8s.io/kind@{matrix.kind_version}")
    env = dict(os.environ, GOBIN=str(bindir))
    done = subprocess.run(
        ["go", "install", f"sigs.k8s.io/kind@{matrix.kind_version}"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if done.returncode != 0:
        raise HarnessError(f"go install kind failed: {done.stderr.strip()[-600:]}")
    return bindir / "kind"


def _kind_version(bindir: Path) -> str | None:
    kind = bindir / "kind"
    if not kind.exists():
        return None
    out = subprocess.run([str(kind), "version"], capture_output=True, text=True, timeout=30, check=False)
    words = out.stdout.split()
    return words[1] if len(words) > 1 else None


def _kind_parts(matrix: Matrix) -> list[Part]:
    # Imported here: the kind image code is only needed by the sets that build it.
    from harness.clusters.kind.images.binaries import ensure_node_binaries
    from harness.clusters.kind.images.cpimages import COREDNS_MODULE, kubeadm_images
    from harness.clusters.kind.images.node import build_images
    from harness.clusters.kind.images.rootfs import ensure_rootfs, kind_pins

    minor = matrix.minor(matrix.default_minor)
    pins = kind_pins()
    tag = minor.name

    def coredns(progress: Progress) -> object:
        bins = ensure_node_binaries(minor, progress)
        version = kubeadm_images(bins / "kubeadm", minor)["coredns"].rsplit(":", 1)[1]
        return go_install_tool(COREDNS_MODULE, version, progress)

    return [
        Part(
            "node root filesystem",
            IO,
            lambda p: ensure_rootfs("node", pins.node_suite, pins.node_apt, p),
            after=("apt packages",),
        ),
        Part(
            f"kind node binaries {tag}",
            GO_A,
            lambda p: ensure_node_binaries(minor, p),
            after=(f"kubelet {tag}",),
        ),
        Part("crictl", GO_B, lambda p: go_install_tool(pins.crictl_module, pins.crictl_version, p)),
        Part("coredns", GO_B, coredns, after=(f"kind node binaries {tag}",)),
        Part(
            f"kind node image {tag}",
            GO_A,
            lambda p: build_images(matrix, minor, p),
            # everything it assembles, so it builds none of them itself
            after=(
                "apt packages",
                "node root filesystem",
                "kind",
                "containerd",
                "crictl",
                "pause and busybox images",
            ),
        ),
    ]


def _controlplane_part(minor: Minor) -> Part:
    return Part(
        f"k8slocal {minor.name}",
        GO_A,
        lambda progress: ensure_controlplane(minor, progress),
        built=lambda: controlplane_built(minor),
    )


def _kubelet_part(minor: Minor, lane: str) -> Part:
    return Part(
        f"kubelet {minor.name}",
        lane,
        lambda progress: ensure_kubelet(minor, progress),
        built=lambda: kubelet_built(minor) is not None,
    )


def _tool_part(name: str) -> Part:
    """versions.toml [tools.<name>]."""
    return Part(
        name, GO_B, lambda progress: ensure_tool(name, progress), built=lambda: named_tool_path(name).exists()
    )


def _driver_part(spec: DriverSpec, version: str, lane: str) -> Part:
    return Part(
        part_name(spec, version),
        lane,
        lambda progress: ensure_driver(spec, version, progress),
        built=lambda: driver_built(spec, version) is not None,
    )


def driver_parts(refs: Iterable[str] = ()) -> list[Part]:
    """`example@v0.4.0`, ...: those drivers' plugins; none named: every version of every driver
    in versions.toml [drivers], side by side in both Go lanes."""
    pairs = [driver_ref(r) for r in refs] or [
        (spec, v) for spec in load_drivers().values() for v in spec.versions
    ]
    return [_driver_part(spec, v, (GO_A, GO_B)[i % 2]) for i, (spec, v) in enumerate(pairs)]


def _mutant_part(spec: DriverSpec, version: str, mutant: str, lane: str) -> Part:
    return Part(
        mutant_part_name(spec, version, mutant),
        lane,
        lambda progress: ensure_mutant(spec, version, mutant, progress),
        built=lambda: mutant_built(spec, version, mutant) is not None,
    )


def mutant_parts(refs: Iterable[str], lane: str = IO) -> list[Part]:
    """Every mutant (mutants/<name>-<version>/*.patch) of each driver@version, one lane: each
    rebuilds the driver's own packages only, on the Go build cache its driver part filled."""
    pairs = [driver_ref(r) for r in refs]
    return [_mutant_part(spec, v, m, lane) for spec, v in pairs for m in mutant_names(spec, v)]


def parts_for(set_name: str, matrix: Matrix) -> list[Part]:
    """The parts of a set, in the order each lane builds them. `test`: what `make test` needs."""
    if set_name == "drivers":
        return driver_parts()
    if set_name == "mutants":
        return mutant_parts(matrix.test_mutants, GO_A)
    if set_name not in SETS:
        raise HarnessError(f"unknown part set {set_name!r}: one of {', '.join(SETS)}")
    packages = host_packages(matrix, set_name)
    apt = Part(
        "apt packages",
        IO,
        lambda progress: apt_install(packages, progress),
        built=lambda: not apt_missing(packages),
    )
    kind = Part(
        "kind",
        GO_B,
        lambda progress: _go_install_kind(matrix, progress),
        built=lambda: _kind_version(REPO_ROOT / ".venv" / "bin") == matrix.kind_version,
    )
    if set_name == "kind":
        return [apt, kind]
    default = matrix.minor(matrix.default_minor)
    minors = [matrix.minor(m) for m in matrix.test_controlplanes]
    kubelets = [matrix.minor(m) for m in matrix.test_kubelets]
    # Lane A: the default minor's parts first (the suites need them), then the others'
    # control planes and kubelets; lane B: kwok, containerd and the older kubelets.
    lane_a = [_controlplane_part(default), _kubelet_part(default, GO_A)]
    for m in [m for m in minors if m != default]:
        lane_a += [_controlplane_part(m)]
        if m in kubelets:
            lane_a += [_kubelet_part(m, GO_A)]
    lane_b = [
        Part("kwok", GO_B, lambda p: ensure_kwok(matrix, p), built=kwok_path(matrix).exists),
        Part(
            "containerd",
            GO_B,
            lambda p: ensure_containerd(matrix, p),
            built=lambda: containerd_built(matrix) is not None,
        ),
        *[_kubelet_part(m, GO_B) for m in kubelets if m != default and m not in minors],
        # upstream's scheduler_perf beside the benchmark (tests/e2e/test_bench_reference.py);
        # after the control plane, whose compiled packages it shares
        Part(
            f"scheduler_perf {default.name}",
            GO_B,
            lambda p: ensure_schedperf(default, p),
            built=lambda: (schedperf_dir(default) / "schedperf.test").exists(),
            after=(f"k8slocal {default.name}",),
        ),
        Part(
            "pause and busybox images",
            GO_B,
            lambda p: (ensure_pause(default, p), ensure_busybox(matrix)),
            after=("apt packages",),
        ),
        # make lint builds it before the parts (so it is cached here); helm is not a part of
        # `make test` (~13 min cold): `make test-chart` builds it
        _tool_part("actionlint"),
        # the scan's krew manifest (tests/harness/scan/test_krew.py, suites/scan)
        _tool_part("krew"),
        _tool_part("validate-krew-manifest"),
    ]
    # The real drivers `make test` qualifies (versions.toml [test] drivers): in the io lane,
    # which waits on the network and the disk most of the time.
    drivers = [_driver_part(*driver_ref(ref), IO) for ref in matrix.test_drivers]
    # The planted-bug drivers qualify must FAIL (tests/e2e/test_qualify_mutants.py): after their
    # driver in the same lane, which then has the driver's packages compiled.
    mutants = mutant_parts(matrix.test_mutants)
    parts = [apt, *lane_a, *lane_b, *drivers, *mutants]
    return [*parts, kind, *_kind_parts(matrix)]


# test: what `make test` needs; kind: the kind engine's packages and kind itself; drivers:
# every real driver at every version versions.toml pins; mutants: [test] mutants' planted bugs.
SETS = ("test", "kind", "drivers", "mutants")


def check_budget(parts: Iterable[Part], matrix: Matrix) -> None:
    """One line naming the parts with no measured cold time in versions.toml [budget]."""
    unmeasured = [p.name for p in parts if p.name not in matrix.budget]
    if unmeasured:
        raise HarnessError(
            f"versions.toml [budget] has no cold build time for {', '.join(unmeasured)}: measure it "
            "with `make test-fresh` (it lists what each part took) and add it"
        )


def build_parts(parts: list[Part], progress: Progress = _stderr) -> list[Outcome]:
    """Build every part, one lane a thread; a part waits for the parts it comes `after`.
    Every part is attempted unless one it waits for failed; the outcomes say which."""
    done: dict[str, threading.Event] = {p.name: threading.Event() for p in parts}
    unknown = sorted({d for p in parts for d in p.after if d not in done})
    if unknown:  # a misspelt name would not be waited for
        raise HarnessError(f"parts wait for parts the set does not have: {', '.join(unknown)}")
    outcomes: dict[str, Outcome] = {}
    lock = threading.Lock()

    def say(name: str) -> Progress:
        def line(text: str) -> None:
            with lock:
                progress(f"[{name}] {text}")

        return line

    def lane(members: list[Part]) -> None:
        for part in members:
            for dep in part.after:
                done[dep].wait()
            failed = [d for d in part.after if d in outcomes and outcomes[d].error]
            start = time.monotonic()
            cached = bool(part.built and part.built())
            error = f"not built: {', '.join(failed)} failed" if failed else ""
            if not failed and not cached:
                try:
                    part.build(say(part.name))
                except (HarnessError, OSError, subprocess.SubprocessError) as err:
                    error = str(err).splitlines()[0] if str(err) else type(err).__name__
            took = time.monotonic() - start
            # A part that cannot tell beforehand (built is None) and took no time reused its
            # cache inside build(): not a build, so not logged as one.
            cached = cached or (part.built is None and not error and took < REUSED_SECONDS)
            outcomes[part.name] = Outcome(part.name, part.lane, took, cached, error)
            if not cached and not error:
                log_build(part.name, outcomes[part.name].seconds)
            done[part.name].set()

    threads = [
        threading.Thread(target=lane, args=([p for p in parts if p.lane == name],), name=f"lane-{name}")
        for name in LANES
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return [outcomes[p.name] for p in parts]


def render_outcomes(outcomes: list[Outcome], matrix: Matrix) -> str:
    rows = [f"{'part':<28} {'lane':<4} {'seconds':>8} {'budget':>7}  state"]
    for o in outcomes:
        state = f"FAILED: {o.error}" if o.error else ("cached" if o.cached else "built")
        budget = matrix.budget.get(o.part)
        rows.append(f"{o.part:<28} {o.lane:<4} {o.seconds:>8.0f} {budget if budget else '-':>7}  {state}")
    lanes = ", ".join(f"{lane} {sum(o.seconds for o in outcomes if o.lane == lane):.0f}s" for lane in LANES)
    rows.append(f"lanes side by side: {lanes}")
    return "\n".join(rows)


def budget_report(total_seconds: float, matrix: Matrix) -> tuple[str, list[str]]:
    """The parts this cache built (builds.jsonl) against their budget, and what breaks it: a
    built part without a budget, or a whole run over [budget] total_minutes."""
    built = measured_builds()
    rows = [f"{'part':<28} {'seconds':>8} {'budget':>7}"]
    problems = []
    for part, seconds in built.items():
        budget = matrix.budget.get(part)
        over = "  over budget" if budget is not None and seconds > budget * 1.5 else ""
        rows.append(f"{part:<28} {seconds:>8.0f} {budget if budget is not None else '-':>7}{over}")
        if budget is None:
            problems.append(f"{part} was built ({seconds:.0f}s) but has no budget in versions.toml")
    rows.append(f"{'all builds':<28} {sum(built.values()):>8.0f} {sum(matrix.budget.values()):>7}")
    limit = matrix.budget_minutes * 60
    if total_seconds > limit:
        problems.append(
            f"make test took {total_seconds / 60:.1f} min, over the budget of {matrix.budget_minutes} min"
        )
    return "\n".join(rows), problems
